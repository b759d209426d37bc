"""The generated documents: both are made from the one command registry, and a test keeps them in sync."""

from __future__ import annotations

from pathlib import Path

from baton.domain import RULES, WorkState


def state_machine_markdown() -> str:
    lines = [
        "# The work state machine",
        "",
        "Generated from the command registry (`baton docs` rewrites it; a test checks it is current).",
        "",
        "Every arrow is one guarded transition: it raises the ticket's revision by exactly one, is a",
        "compare-and-swap on the revision read (or on `rev=N` when given), and appends one event that",
        "records the actor and the role exercised. A refused command changes nothing.",
        "",
        "```mermaid",
        "stateDiagram-v2",
        "    [*] --> draft: issue tracked, brief to finish",
        "    [*] --> open: issue tracked (offer: all)",
    ]
    for rule in RULES.values():
        if rule.target is None:
            continue
        for source in rule.sources:
            lines.append(f"    {source.value} --> {rule.target.value}: /{rule.name}")
    lines += [
        "    withdrawn --> [*]",
        "```",
        "",
        "| command | from | to | who may | event |",
        "|---|---|---|---|---|",
    ]
    for rule in RULES.values():
        sources = ", ".join(s.value for s in rule.sources) if rule.sources else "any"
        target = rule.target.value if rule.target else "—"
        lines.append(f"| `{rule.usage}` | {sources} | {target} | {rule.who} | {rule.event or '—'} |")
    lines += [
        "",
        "States: " + ", ".join(f"`{state.value}`" for state in WorkState) + ".",
        "",
        "Refusal codes: `stale_revision` (rev=N is not the current revision), `wrong_state`, `not_runner`,",
        "`not_reviewer`, `self_review` (the runner reviewing their own work where the repository does not",
        "allow it), `claim_limit`, `missing_evidence`, `missing_argument`, `incomplete_brief`,",
        "`not_permitted`, `not_offered` (the repository offers only labelled issues), `already_delivered` (the",
        "runner claiming the ticket it delivered), `unknown_command`, `unverified_evidence` (an /accept, under",
        "`require_verified_evidence: true`, of a delivery whose reported branch, commit or pull request GitHub has",
        "not verified). The runner claiming the ticket it holds is",
        "not refused: it gets its 👍 and `you already hold #42 (attempt 2, revision 19).`, and nothing changes.",
        "Each message names the actual state, the holder, the revision and the next step, for example:",
        "",
        "> #42 is claimed by @agent-a (revision 19), not open. Pick another issue.",
        "",
    ]
    return "\n".join(lines)


def documents() -> dict[str, str]:
    from baton.reading.commands import commands_markdown

    return {"commands.md": commands_markdown(), "state-machine.md": state_machine_markdown()}


def write_docs(directory: str | Path = "docs") -> list[Path]:
    written = []
    for name, content in documents().items():
        path = Path(directory) / name
        path.write_text(content, encoding="utf-8")
        written.append(path)
    return written
