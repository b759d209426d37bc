"""Offering on sight: how soon a newly opened issue is an open ticket, and how soon GitHub shows it.

Baton runs with the settings a user gets (answer delay, write pacing: one write per second per installation,
80 a minute, 500 an hour) on SQLite, beside the stand-in GitHub (`baton demo`'s stage: both real HTTP servers
on 127.0.0.1). Someone opens `--issues` issues, one every `--gap` seconds. For each issue the bench notes
when the `issues opened` delivery was answered, when the ticket existed (decided), and when GitHub showed
`baton:open` (an offered issue has no status comment until somebody acts on it). Printed: median and max
of each, in seconds after the issue was opened, and how many status comments appeared (none is expected).

Usage (from the repository root):

    python bench/offer_latency.py
    python bench/offer_latency.py --issues 20 --gap 0.5
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: `bench` is a package here
from baton.demo.stage import Stage
from baton.domain import TicketKey
from baton.environment.settings import Settings

DEFAULTS = ("answer_delay", "write_interval")  # the stage's own test values replaced by Baton's defaults


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--issues", type=int, default=10)
    parser.add_argument("--gap", type=float, default=1.0, help="seconds between two issues opened")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()

    defaults = {name: Settings.model_fields[name].default for name in DEFAULTS}
    print(f"Baton's defaults: {', '.join(f'{k}={v}' for k, v in defaults.items())}; SQLite; nothing changed")
    directory = tempfile.mkdtemp(prefix="baton-offer-")
    with Stage.open(f"sqlite:///{directory}/baton.db", **defaults) as stage:
        owner, work, world = stage.person("olivia"), stage.app.state.work, stage.hub.world
        opened: dict[int, float] = {}
        decided: dict[int, float] = {}
        shown: dict[int, float] = {}
        commented: dict[int, float] = {}
        deadline = time.monotonic() + args.timeout
        next_open = time.monotonic()
        while len(shown) < args.issues:
            now = time.monotonic()
            assert now < deadline, f"only {len(shown)} of {args.issues} issues shown in {args.timeout} s"
            if len(opened) < args.issues and now >= next_open:
                number = owner.open_issue(stage.full_name, f"Task {len(opened) + 1}")
                opened[number] = now
                next_open = now + args.gap
            for number, began in opened.items():
                key = TicketKey(stage.repository.installation_id, stage.repository.id, number)
                if number not in decided and work.ticket(key) is not None:
                    decided[number] = time.monotonic() - began
                with world.lock:
                    issue = stage.repository.issues[number]
                    labelled = "baton:open" in issue.labels
                    status = any(
                        c.issue == number and c.body.startswith("<!-- baton:status -->")
                        for c in stage.repository.comments.values()
                    )
                if number not in shown and labelled:
                    shown[number] = time.monotonic() - began
                if number not in commented and status:
                    commented[number] = time.monotonic() - began
            time.sleep(0.01)

    shutil.rmtree(directory, ignore_errors=True)

    def line(what: str, seconds: dict[int, float]) -> str:
        values = list(seconds.values())
        return f"  {what:<34} median {statistics.median(values):6.2f} s   max {max(values):6.2f} s"

    print(f"{args.issues} issues opened, one every {args.gap} s:")
    print(line("ticket open (decided)", decided))
    print(line("baton:open on GitHub", shown))
    print(f"  status comments on offered issues: {len(commented)} (an offered issue shows its label only)")


if __name__ == "__main__":
    main()
