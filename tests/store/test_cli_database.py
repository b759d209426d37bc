"""`baton db upgrade` migrates a new SQLite file to the head revision, and `baton docs` writes the generated docs."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.cli import main
from baton.cli.docs import state_machine_markdown
from baton.store.migrate import head


def test_cli_db_upgrade_and_docs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("BATON_DATABASE_URL", f"sqlite:///{tmp_path / 'cli.db'}")
    assert main(["db", "upgrade"]) == 0
    assert f"database at revision {head()}" in capsys.readouterr().out
    assert main(["docs", str(tmp_path)]) == 0
    assert (tmp_path / "state-machine.md").read_text(encoding="utf-8") == state_machine_markdown()
