"""Every refusal code Baton can return has its HTTP status declared once, in the domain."""

from __future__ import annotations

import ast
from pathlib import Path

from baton.domain.refusals import REFUSALS, UNDECLARED, status_of

SOURCE = Path(__file__).resolve().parents[2] / "src/baton"


def _returned_codes() -> dict[str, str]:
    """Each code written in src/baton as a refusal, with where: the first argument of `Refused(…)`, and a
    `code="…"` given to a refused outcome."""
    found: dict[str, str] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            values = [keyword.value for keyword in node.keywords if keyword.arg == "code"]
            if isinstance(node.func, ast.Name) and node.func.id == "Refused" and node.args:
                values.append(node.args[0])
            for value in values:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    found.setdefault(value.value, f"{path.relative_to(SOURCE)}:{node.lineno}")
    return found


def test_the_scan_finds_the_guards_codes() -> None:
    found = _returned_codes()
    assert {"wrong_state", "stale_revision", "claim_limit", "not_offered", "unknown_command"} <= set(found)
    assert "bad_credentials" not in found  # a sign-in's refusal is not a command's


def test_every_refusal_code_has_a_declared_status() -> None:
    undeclared = {code: where for code, where in _returned_codes().items() if code not in REFUSALS}
    assert not undeclared, f"declare the HTTP status of these refusal codes in domain/refusals.py: {undeclared}"


def test_every_declared_code_is_returned_somewhere() -> None:
    assert set(REFUSALS) - set(_returned_codes()) == set()


def test_a_stored_code_no_longer_declared_is_a_conflict() -> None:
    assert status_of("renamed_since") == UNDECLARED == (409, "conflict")
    assert status_of(None) == UNDECLARED
