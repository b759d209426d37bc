"""`python -m github_standin`: the stand-in GitHub's REST API in a process of its own, on 127.0.0.1.

The world is prepared from the arguments: the App (its id and public key, to verify the JWTs it mints
installation tokens for), installations with one repository each, a number of open issues in every
repository, and labels already made. Nobody sends webhooks here; a caller delivers its own. With
`--inspect`, the test-support endpoints of `inspection.py` are served under `/_standin/`. Without
`--checked` nothing is held to GitHub's descriptions (what a benchmark wants: the contract costs far
more than an answer).

    python -m github_standin --port 8765 --app-id 1 --app-key app.pub.pem \\
        --repository 1:4242:octo/race --repository 2:4243:octo-two/race --issues 100 --inspect
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import uvicorn

from .contract import Contract
from .inspection import with_inspection
from .server import StandIn
from .world import World


def prepared(
    app_id: int, public_key: str, repositories: list[str], issues: int, labels: list[str],
    collaborators: tuple[str, ...] = (),
) -> World:  # fmt: skip
    """A world with `INSTALLATION:REPOSITORY_ID:owner/name` repositories, each with `issues` open issues
    (opened by its owner), `labels`, and the `collaborators` (logins or patterns like `agent-*`) GitHub's
    collaborator check counts, with the read role."""
    world = World(app_id, public_key)
    with world.lock:
        for spec in repositories:
            installation_id, repository_id, full_name = spec.split(":", 2)
            owner, _, name = full_name.partition("/")
            installation = world.installations.get(int(installation_id))
            if installation is None:
                installation = world.install(owner, id=int(installation_id))
            if installation.account.login.lower() != owner.lower():
                raise ValueError(f"installation {installation_id} is on {installation.account.login}, not {owner}")
            repository = world.add_repository(installation, name, id=int(repository_id))
            repository.collaborators = collaborators
            for label in labels:
                world.create_label(repository, label, "ededed", None)
            for number in range(1, issues + 1):
                world.add_issue(repository, f"Task {number}", installation.account)
    return world


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m github_standin", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--port", type=int, required=True, help="the port on 127.0.0.1")
    parser.add_argument("--app-id", type=int, required=True)
    parser.add_argument("--app-key", type=Path, required=True, help="a file with the App's public key (PEM)")
    parser.add_argument("--repository", action="append", required=True, metavar="INSTALLATION:ID:OWNER/NAME",
                        help="a repository and the installation that holds it (repeat for more)")  # fmt: skip
    parser.add_argument("--issues", type=int, default=0, help="open issues in every repository, numbered from 1")
    parser.add_argument("--label", action="append", default=[], help="a label every repository has already")
    parser.add_argument("--collaborator", action="append", default=[], metavar="LOGIN",
                        help="a collaborator of every repository, with the read role (a pattern like `agent-*` "
                        "names many; repeat for more)")  # fmt: skip
    parser.add_argument("--inspect", action="store_true", help="serve the test-support endpoints under /_standin/")
    parser.add_argument("--checked", action="store_true", help="hold requests and answers to GitHub's description")
    args = parser.parse_args(argv)
    world = prepared(args.app_id, args.app_key.read_text(), args.repository, args.issues, args.label,
                     tuple(args.collaborator))  # fmt: skip
    stand_in = StandIn(world, Contract.load() if args.checked else None)
    app = with_inspection(stand_in) if args.inspect else stand_in.app
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
