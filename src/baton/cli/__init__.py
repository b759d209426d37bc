"""The `baton` command (`main`), and the operator's tools it runs: the App's registration (`baton setup`) and
the generated docs (`baton docs`). An agent's commands come from `baton.client`."""

from baton.cli.main import main

__all__ = ["main"]
