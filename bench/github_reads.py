"""GitHub reads: the CPU each call to GitHub costs Baton's process, and the memory the process holds after many.

Every decision shown on GitHub reads the issue first (`github/projection.py`), every first claim of an agent on a
repository asks GitHub for their permission, and a busy installation does this all day in the process that
answers agents. Per run, a child process uses Baton's GitHub client (`GitHubApp`, as `baton serve` makes it)
against the stand-in GitHub (`python -m github_standin`, in a process of its own) and reads `--issues` issues
`--passes` times over (`GET /repos/{owner}/{repo}/issues/{number}`, as the projection does), then as many
collaborator permissions; it reports its CPU per call and how much its resident memory grew. Runs alternate
between Baton's client as it ships and the same client with githubkit's HTTP cache turned on (githubkit's
default, an SQLite database in memory that keeps every answer to a GET), `--repeat` times each.

Usage (from the repository root):

    python bench/github_reads.py
    python bench/github_reads.py --issues 500 --passes 4 --repeat 3
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: `bench` is a package here
from bench.webhook_race import APP_ID, HTTP, REPOSITORY, stand_in

AGENTS = 50
SHIPPED, CACHED = "Baton", "with githubkit's HTTP cache"


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def child(api: str, key: str, issues: int, passes: int, cached: bool) -> dict[str, float]:
    """One run, in this process: CPU ms per call and MB of resident memory gained, for issue reads and
    permission reads."""
    from cryptography.hazmat.primitives import serialization

    from baton.github.client import AppCredentials, GitHubApp

    private = serialization.load_pem_private_key(key.encode(), password=None)
    app = GitHubApp(AppCredentials(APP_ID, private), api)  # type: ignore[arg-type]
    if cached:
        app.app.config = dataclasses.replace(app.app.config, http_cache=True)
    client = app.installation(1)
    owner, name = REPOSITORY.split("/")
    client.rest.issues.get(owner, name, 1)  # the token, the connection and the imports, before measuring
    before, cpu = rss_mb(), time.process_time()
    for _ in range(passes):
        for number in range(1, issues + 1):
            client.rest.issues.get(owner, name, number)
    issue_cpu = (time.process_time() - cpu) / (issues * passes)
    cpu = time.process_time()
    for _ in range(passes):
        for n in range(AGENTS):
            client.rest.repos.get_collaborator_permission_level(owner, name, f"agent-{n:02d}")
    permission_cpu = (time.process_time() - cpu) / (AGENTS * passes)
    return {"issue_ms": issue_cpu * 1000, "permission_ms": permission_cpu * 1000, "grown_mb": rss_mb() - before}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--issues", type=int, default=300)
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)  # a run's settings, as JSON
    args = parser.parse_args(argv)
    if args.child:
        asked = json.loads(args.child)
        print(json.dumps(child(asked["api"], asked["key"], args.issues, args.passes, asked["cached"])))
        return 0

    from baton.demo.stage import key_pair

    key, public_key = key_pair()
    results: dict[str, list[dict[str, float]]] = {SHIPPED: [], CACHED: []}
    with stand_in(public_key, issues=args.issues) as api:
        HTTP.post(f"{api}/_standin/tokens", json={"logins": [f"agent-{n:02d}" for n in range(AGENTS)]})
        for _ in range(args.repeat):
            for name in (SHIPPED, CACHED):  # by turns, each run in a fresh process
                asked = json.dumps({"api": api, "key": key, "cached": name == CACHED})
                output = subprocess.run(
                    [sys.executable, __file__, "--issues", str(args.issues), "--passes", str(args.passes),
                     "--child", asked], check=True, capture_output=True, text=True,
                ).stdout  # fmt: skip
                results[name].append(json.loads(output.strip().splitlines()[-1]))
    reads = args.issues * args.passes
    print(f"{args.issues} issues read {args.passes} times ({reads:,} reads) and {AGENTS} permissions {args.passes} "
          f"times, per run; {args.repeat} runs each, by turns")  # fmt: skip
    print(f"{'client':<30} {'CPU ms/issue read':>18} {'CPU ms/permission':>18} {'RSS grown MB':>13}")
    for name, runs in results.items():
        print(f"{name:<30} {statistics.median(r['issue_ms'] for r in runs):>18.2f} "
              f"{statistics.median(r['permission_ms'] for r in runs):>18.2f} "
              f"{statistics.median(r['grown_mb'] for r in runs):>13.1f}")  # fmt: skip
    print("medians over runs; CPU: the client process's own, per call; RSS grown: resident memory after the reads")
    print("less before them (the stand-in's answers are a few kB each, as GitHub's are)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
