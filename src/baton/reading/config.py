"""`.github/baton.yml`: a repository's settings, validated strictly (docs/design.md §7, docs/maintainers.md).

Every problem in a file is reported at once, each naming the key and what is allowed, so one
explanatory comment can list them all. A file that fails keeps no partial effect: the caller keeps the
last good settings.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from baton.domain import Policy
from baton.domain.brief import PRIORITIES, evidence_kinds

PATH = ".github/baton.yml"

_DURATION = re.compile(r"^\s*(\d+)\s*(s|m|h|d|w)\s*$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# A login (`agent-a`, `helper[bot]`) or a team (`org/team`), with an optional leading @; or a repository
# role GitHub names, built-in or custom (`role:maintain`, `role:security-reviewer`).
_PERSON = re.compile(
    r"^(?:@?[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\]|/[A-Za-z0-9_.-]{1,100})?|role:[A-Za-z0-9][\w .-]{0,99})$"
)
_RUNNER_ACCESS = ("collaborators", "readers", "anyone")
# A GitHub Actions workflow whose runs may run tasks, as its OIDC token's `workflow_ref` names it without the ref.
_WORKFLOW = re.compile(
    r"^workflow:[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}/\.github/workflows/[A-Za-z0-9._ -]{1,200}\.ya?ml$"
)

KEYS = (
    "offer",
    "offer_label",
    "max_active_claims",
    "stale_after",
    "auto_release_after",
    "allow_self_review",
    "reviewers",
    "runners",
    "maintainers",
    "required_evidence",
    "require_reviewer",
    "require_verified_evidence",
    "priority_labels",
)


class ConfigError(ValueError):
    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


_NAMED = re.compile(r"^`([A-Za-z_]+)[.`]")


def problem_key(problem: str) -> str | None:
    """The key a problem is about (each names its key first, in backquotes), or None for the file as a whole."""
    found = _NAMED.match(problem)
    return found.group(1) if found is not None else None


def shown_duration(seconds: int) -> str:
    """Seconds as the file writes them: `3d`, `12h`, `90m` (the largest unit that divides them)."""
    for unit, size in sorted(_SECONDS.items(), key=lambda item: -item[1]):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    raise AssertionError("every whole number of seconds divides by 1")


def effective(policy: Policy) -> dict[str, Any]:
    """The settings in force, every key of KEYS, written as the file writes them (`parse` reads it back equal)."""
    counts: dict[str, int] = {}
    for kind in policy.required_evidence:
        counts[kind] = counts.get(kind, 0) + 1
    evidence: list[str] | dict[str, int] = counts if any(n > 1 for n in counts.values()) else list(counts)
    shown: dict[str, Any] = {
        "offer": policy.offer,
        "offer_label": policy.offer_label,
        "max_active_claims": policy.max_active_claims,
        "stale_after": shown_duration(policy.stale_after),
        "auto_release_after": None if policy.auto_release_after is None else shown_duration(policy.auto_release_after),
        "allow_self_review": policy.allow_self_review,
        "reviewers": sorted(policy.reviewers),
        "runners": sorted(policy.runners) if policy.runners else policy.runner_access,
        "maintainers": sorted(policy.maintainers),
        "required_evidence": evidence,
        "require_reviewer": policy.require_reviewer,
        "require_verified_evidence": policy.require_verified_evidence,
        "priority_labels": dict(policy.priority_labels),
    }
    return shown


def _priority(value: Any) -> int:
    """A priority as `priority_labels` gives it: 0 to 4, or a word a brief's `priority` may use (`p1`, `high`)."""
    said = str(value).strip().lower() if isinstance(value, str | int) and not isinstance(value, bool) else ""
    said = f"p{said}" if said.isdigit() else said
    if said not in PRIORITIES:
        raise ValueError
    return PRIORITIES[said]


def _priority_labels(value: Any) -> bool:
    if not isinstance(value, dict) or len(value) > 100:
        return False
    names = [name.lower() for name in value if isinstance(name, str) and 0 < len(name) <= 50]
    for said in value.values():
        _priority(said)
    return len(names) == len(value) == len(set(names))


def duration(value: Any) -> int:
    """`30s`, `90m`, `12h`, `3d`, `2w` → seconds."""
    match = _DURATION.match(value) if isinstance(value, str) else None
    if match is None or int(match.group(1)) == 0:
        raise ValueError
    return int(match.group(1)) * _SECONDS[match.group(2)]


def parse(text: str) -> Policy:
    """The settings a file gives, on top of the defaults. Raises `ConfigError` listing every problem."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError([f"the file is not valid YAML{where}"]) from None
    if data is None:
        return Policy()
    if not isinstance(data, dict):
        raise ConfigError(["the file must be a mapping of settings, like `max_active_claims: 2`"])

    problems: list[str] = []
    values: dict[str, Any] = {}
    for key in data:
        if key not in KEYS:
            problems.append(f"`{key}` is not a setting (known: {', '.join(KEYS)})")

    def take(key: str, check: Any, convert: Any, allowed: str) -> None:
        if key not in data:
            return
        value = data[key]
        try:
            if not check(value):
                raise ValueError
            values[key] = convert(value)
        except (ValueError, TypeError):
            problems.append(f"`{key}` must be {allowed}, not {value!r}")

    def people(value: Any) -> bool:
        return isinstance(value, list) and all(isinstance(v, str) and _PERSON.match(v) for v in value)

    take("offer", lambda v: v in ("all", "labeled"), str, "`all` or `labeled`")
    take("offer_label", lambda v: isinstance(v, str) and 0 < len(v) <= 50, str, "a label name")
    take("max_active_claims", lambda v: type(v) is int and 1 <= v <= 100, int, "a whole number from 1 to 100")
    take("stale_after", lambda v: True, duration, "a duration like `3d`, `12h`, `90m` or `30s`")
    take("auto_release_after", lambda v: True, lambda v: None if v is None else duration(v),
         "a duration like `7d`, or null")  # fmt: skip
    take("allow_self_review", lambda v: isinstance(v, bool), bool, "true or false")
    people_are = "a list of logins, org/team names or role:NAME entries"
    take("reviewers", people, frozenset, people_are)
    take("maintainers", people, frozenset, people_are)

    def runners(value: Any) -> bool:
        return isinstance(value, list) and all(
            isinstance(v, str) and (_PERSON.match(v) or _WORKFLOW.match(v)) for v in value
        )

    take("runners", lambda v: v in _RUNNER_ACCESS or runners(v), lambda v: v,
         "`collaborators`, `readers`, `anyone` or a list of logins, org/team names, role:NAME entries or "
         "`workflow:owner/repo/.github/workflows/agent.yml` entries")  # fmt: skip
    if isinstance(values.get("runners"), str):
        values["runner_access"] = values.pop("runners")
    elif "runners" in values:
        values["runners"] = frozenset(values["runners"])
    take("require_reviewer", lambda v: isinstance(v, bool), bool, "true or false")
    take("require_verified_evidence", lambda v: isinstance(v, bool), bool, "true or false")
    take("priority_labels", _priority_labels, lambda v: tuple((name, _priority(said)) for name, said in v.items()),
         "a mapping of label names to priorities, like `{P0: 0, P1: 1}` (0, handed out first, to 4)")  # fmt: skip
    if "required_evidence" in data:
        # a list of kinds, or a mapping of kinds to counts (`screenshot: 2`), as a brief's `evidence`
        values["required_evidence"] = evidence_kinds("required_evidence", data["required_evidence"], problems)

    stale = values.get("stale_after", Policy.stale_after)
    auto = values.get("auto_release_after")
    if auto is not None and auto <= stale:
        problems.append("`auto_release_after` must be longer than `stale_after`: a claim is marked stale first")
    if problems:
        raise ConfigError(problems)
    return Policy(**values)
