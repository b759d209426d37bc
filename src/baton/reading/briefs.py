"""Reading the task brief an issue body carries: the YAML adapter around `baton.domain.brief`, which finds
the brief and checks it (docs/agents.md, "The task brief")."""

from __future__ import annotations

from typing import NamedTuple

import yaml

from baton.domain import Brief
from baton.domain.brief import check, form, yaml_block


class BriefReading(NamedTuple):
    """What an issue body says about its task: whether its ticket starts as a draft, the brief (None when
    the body has none, or when it has problems), and the problems, each naming the key and what is allowed.

    A body whose brief has problems starts its ticket as a draft, so a task nobody can read is not offered."""

    draft: bool
    brief: Brief | None
    problems: tuple[str, ...]


NO_BRIEF = BriefReading(False, None, ())


def read_brief(body: str | None) -> BriefReading:
    """The brief in an issue body: a fenced `yaml` block whose first key is `task:`, or an issue form whose
    first field is `Task`. A body with neither has no brief."""
    if not body:
        return NO_BRIEF
    block = yaml_block(body)
    if block is not None:
        try:
            data = yaml.safe_load(block)
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            where = f" at line {mark.line + 1} of the block" if mark is not None else ""
            return BriefReading(True, None, (f"the brief is not valid YAML{where}",))
    else:
        data = form(body)
        if data is None:
            return NO_BRIEF
    checked = check(data)
    return BriefReading(checked.draft or bool(checked.problems), checked.brief, checked.problems)


__all__ = ["NO_BRIEF", "BriefReading", "read_brief"]
