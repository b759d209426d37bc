"""The first hour of an installation: a backlog offered while agents claim, with Baton's defaults.

Baton runs with the settings a user gets (answer delay; write pacing: one write a second per installation, 80
a minute, 500 an hour; offering held to half of those) on SQLite, beside the stand-in GitHub (`baton demo`'s
stage: both real HTTP servers on 127.0.0.1). The App is installed on `acme/backlog`, which holds `--backlog`
open issues and none of Baton's labels; once the backlog's tickets exist, `--claims` agents each claim one
of its issues not offered yet, one a second. Printed:

- each claim's 👍 delay: from Baton's answer to the `issue_comment` webhook (its ack) to the 👍 reaching
  GitHub, p50, p99 and max (the aim: p99 at most 2.5 s);
- how long the claims took to show in full (label, assignee, status comment);
- `baton:open` labels offered a minute, over the first `--watch` seconds after the install;
- the backfill's projected finish, at offering's share of the budget, from what is left to offer.

Usage (from the repository root):

    python bench/first_hour.py
    python bench/first_hour.py --backlog 300 --claims 10 --watch 75
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: `bench` is a package here
from baton.demo.stage import Stage
from baton.demo.story import seen
from baton.domain import TicketKey
from baton.domain.status import STATUS_MARKER
from baton.environment.settings import Settings
from baton.store.budget import Limits
from github_standin import shapes
from github_standin.world import Repository

DEFAULTS = ("answer_delay", "write_interval")  # the stage's own test values replaced by Baton's defaults


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(share * len(ordered) + 0.5) - 1))]


def install(stage: Stage, issues: int) -> Repository:
    world = stage.hub.world
    with world.lock:
        installation = world.install("acme")
        backlog = world.add_repository(installation, "backlog")
        for n in range(issues):
            world.add_issue(backlog, f"Old task {n + 1}", world.account("olivia"))
        payload = shapes.installation_event(
            installation.id, world.app, installation.account, world.account("acme-admin"),
            [backlog.shape(stage.github_url)], api_url=stage.github_url,
        )  # fmt: skip
    stage.hub.deliver("installation", payload)
    return backlog


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backlog", type=int, default=300, help="open issues when the App is installed")
    parser.add_argument("--claims", type=int, default=10, help="claims, one a second, on issues not offered yet")
    parser.add_argument("--watch", type=float, default=75.0, help="seconds after the install to count labels over")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()

    defaults = {name: Settings.model_fields[name].default for name in DEFAULTS}
    limits = Limits(
        defaults["write_interval"],
        Settings.model_fields["writes_per_minute"].default,
        Settings.model_fields["writes_per_hour"].default,
    )
    print(
        f"Baton's defaults: {', '.join(f'{k}={v}' for k, v in defaults.items())}, writes_per_minute="
        f"{limits.per_minute}, writes_per_hour={limits.per_hour}; SQLite; nothing changed"
    )
    directory = tempfile.mkdtemp(prefix="baton-first-hour-")
    with Stage.open(f"sqlite:///{directory}/baton.db", **defaults) as stage:
        world, outbox = stage.hub.world, stage.app.state.writer.outbox
        installed = time.time()
        backlog = install(stage, args.backlog)
        deadline = time.monotonic() + args.timeout
        while outbox.to_offer(backlog.installation_id) + offered_count(stage, backlog) < args.backlog:
            assert time.monotonic() < deadline, "the backlog's tickets were not all created"
            time.sleep(0.05)
        created = time.time() - installed

        acks: dict[int, tuple[int, float]] = {}  # comment id -> (issue, when Baton answered its webhook)
        thumbs: dict[int, float] = {}
        decided: dict[int, float] = {}
        shown: dict[int, float] = {}
        work, claiming = stage.app.state.work, True

        def watch() -> None:
            """What each claim shows, and when, looked at every 50 ms while the claims are made and after."""
            while claiming or len(shown) < len(acks):
                if time.monotonic() > deadline:
                    return
                with world.lock:
                    for call in stage.hub.rest.writes():
                        found = re.search(r"/issues/comments/(\d+)/reactions$", call.path)
                        if found and int(found.group(1)) in acks and int(found.group(1)) not in thumbs:
                            thumbs[int(found.group(1))] = call.at - acks[int(found.group(1))][1]
                for comment, (number, acked) in list(acks.items()):
                    if comment not in decided:
                        ticket = work.ticket(TicketKey(backlog.installation_id, backlog.id, number))
                        if ticket is not None and ticket.state.value == "claimed":
                            decided[comment] = time.time() - acked
                    now = seen(backlog, number, world.lock)
                    if comment not in shown and "baton:claimed" in now.labels and now.assignees and now.status:
                        shown[comment] = time.time() - acked
                time.sleep(0.05)

        watcher = threading.Thread(target=watch)
        watcher.start()
        for n in range(args.claims):
            login = f"agent-{n:02d}"
            with world.lock:
                backlog.permissions[login] = "write"
                number = next(
                    k for k, issue in sorted(backlog.issues.items(), reverse=True)
                    if not issue.labels and k not in {i for i, _ in acks.values()}
                )  # fmt: skip
            started = time.monotonic()
            comment = stage.hub.person(login).comment(backlog.full_name, number, "/claim")
            acks[comment] = (number, time.time())
            time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
        claiming = False
        watcher.join()
        assert len(shown) == len(acks), f"only {len(shown)} of {len(acks)} claims shown in {args.timeout} s"

        while time.time() - installed < args.watch:
            time.sleep(0.2)
        labels = offering_labels(stage, backlog, {number for number, _ in acks.values()})
        in_window = [at for at in labels if at - installed <= args.watch]
        left = outbox.to_offer(backlog.installation_id)
        with world.lock:
            statuses = sum(1 for c in backlog.comments.values() if c.body.startswith(STATUS_MARKER))

    shutil.rmtree(directory, ignore_errors=True)
    delays = list(thumbs.values())
    print(f"{args.backlog} open issues installed; their tickets existed {created:.1f} s after the install")
    print(f"{len(acks)} claims on issues not offered yet, one a second; each claimer wins its issue:")
    print(
        f"  👍 after the ack         p50 {percentile(delays, 0.5):5.2f} s   p99 {percentile(delays, 0.99):5.2f} s"
        f"   max {max(delays):5.2f} s   (aim: p99 <= 2.5 s)"
    )
    print(
        f"  claim decided after ack  p50 {statistics.median(decided.values()):5.2f} s"
        f"   max {max(decided.values()):5.2f} s"
    )
    print(
        f"  claim shown in full      p50 {statistics.median(shown.values()):5.2f} s   max {max(shown.values()):5.2f} s"
        "   (👍, label, assignee, status comment)"
    )
    minutes = args.watch / 60
    print(
        f"  offering: {len(in_window)} `baton:open` labels in the first {args.watch:.0f} s "
        f"({len(in_window) / minutes:.1f} a minute; its share: {limits.offering_per_minute} a minute, "
        f"{limits.offering_per_hour} an hour); status comments on offered issues: {statuses - len(acks)}"
    )
    finish = time.time() - installed + limits.offering_seconds(left)
    print(
        f"  backfill: {left} issues left to offer; projected to finish {finish / 60:.0f} min after the install "
        f"at offering's share (nothing else written meanwhile)"
    )


def offering_labels(stage: Stage, backlog: Repository, claimed: set[int]) -> list[float]:
    """When `baton:open` (or the label itself) was written on the backlog for issues nobody claimed."""
    added = re.compile(rf"^/repos/{backlog.full_name}/issues/(\d+)/labels$")
    with stage.hub.world.lock:
        return [
            call.at
            for call in stage.hub.rest.writes()
            if call.method == "POST" and (m := added.match(call.path)) and int(m.group(1)) not in claimed
        ]


def offered_count(stage: Stage, backlog: Repository) -> int:
    with stage.hub.world.lock:
        return sum(1 for issue in backlog.issues.values() if "baton:open" in issue.labels)


if __name__ == "__main__":
    main()
