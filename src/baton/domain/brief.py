"""The task brief an issue body carries (docs/design.md §5): where it is in the body, how its fields are
checked, what a delivery must show for it, and how two briefs differ. Standard library only.

A brief comes in one of two shapes:

- a fenced ```` ```yaml ```` block whose first key is `task:` (parsing YAML is an adapter's job,
  `baton.reading.briefs`: this module finds the block and checks the mapping the adapter parsed);
- the body of a GitHub issue form whose first field is `Task`: each field is a `### Label` heading followed
  by its value, which `form()` reads into the same mapping.

`check()` validates a mapping strictly: every problem is listed, each naming the key and what is allowed,
and a brief with any problem gives no brief at all (the ticket keeps its last good one).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .model import EVIDENCE_KINDS, Brief, Evidence

# The keys a brief may hold, in the order the docs list them.
KEYS = ("task", "scope", "access", "acceptance", "evidence", "reviewer", "owner", "code", "draft", "priority",
        "depends_on")  # fmt: skip
# A brief's `priority`: p0 (first) to p4, or a word for one of them. Tasks that say none are handed out as p2.
PRIORITIES = {**{f"p{n}": n for n in range(5)}, "high": 1, "medium": 2, "low": 3}
UNSAID_PRIORITY = 2
SCOPE_KEYS = ("files", "excluded")
# Evidence a delivery reports once (one branch, one commit, one pull request), and evidence it may repeat.
SINGLE_KINDS = ("branch", "commit", "pr")
MAX_COUNT = 10
# Code evidence: what a non-code task (`code: false`) never requires.
CODE_KINDS = frozenset(SINGLE_KINDS)

_LOGIN = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})"
_OWNER = re.compile(rf"^@?({_LOGIN}(?:\[bot\])?)$")
_REVIEWER = re.compile(rf"^@?({_LOGIN}(?:\[bot\])?|{_LOGIN}/[A-Za-z0-9_.-]{{1,100}})$")
# An issue a brief's `depends_on` names: `12`, `#12`, or `owner/repo#12`.
_ISSUE = re.compile(r"^(?:([A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9_.-]{1,100}))?#?([1-9][0-9]{0,9})$")
MAX_DEPENDS = 50
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*(ya?ml)[ \t]*$", re.IGNORECASE)
_HEADING = re.compile(r"^ {0,3}###[ \t]+(.+?)[ \t#]*$")
_ITEM = re.compile(r"^[ \t]*(?:[-*+][ \t]+)?(?:\[[ xX]\][ \t]+)?(.*?)[ \t]*$")
_COUNTED = re.compile(r"^[\w-]+[ \t]*(?::[ \t]*\S+)?$")  # a kind, with an optional count, in a form's line
_NO_RESPONSE = "_no response_"  # what GitHub writes for a form field left empty
MAX_TEXT = 2000
MAX_ITEMS = 50

# Issue form labels (lower-case) → the brief key they fill; `scope.files` and `scope.excluded` are nested.
FORM_LABELS = {
    "task": "task",
    "scope": "scope.files",
    "files": "scope.files",
    "excluded": "scope.excluded",
    "out of scope": "scope.excluded",
    "access": "access",
    "acceptance": "acceptance",
    "acceptance criteria": "acceptance",
    "evidence": "evidence",
    "required evidence": "evidence",
    "reviewer": "reviewer",
    "owner": "owner",
    "task owner": "owner",
    "code": "code",
    "draft": "draft",
    "priority": "priority",
    "depends on": "depends_on",
    "depends_on": "depends_on",
}
_YES = {"yes": True, "true": True, "no": False, "false": False}


@dataclass(frozen=True)
class Checked:
    """A brief as checked: the brief (None when there is none, or when it has problems), whether it asks
    to start as a draft, and its problems."""

    brief: Brief | None
    draft: bool
    problems: tuple[str, ...] = ()


# ---------------------------------------------------------------------------------------------- finding


def _lines(body: str) -> list[str]:
    return body.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def yaml_block(body: str) -> str | None:
    """The text of the first fenced `yaml` block whose first key is `task:`, or None."""
    lines = _lines(body)
    i = 0
    while i < len(lines):
        opened = _FENCE.match(lines[i])
        i += 1
        if opened is None:
            continue
        fence = opened.group(1)
        block: list[str] = []
        while i < len(lines) and not (lines[i].strip().startswith(fence) and not lines[i].strip().strip(fence[0])):
            block.append(lines[i])
            i += 1
        i += 1
        meaningful = [line for line in block if line.strip() and not line.lstrip().startswith("#")]
        if meaningful and re.match(r"^task[ \t]*:", meaningful[0]):
            return "\n".join(block)
    return None


def form(body: str) -> dict[str, Any] | None:
    """An issue form's fields as a brief mapping, when the body's first line is the `### Task` heading;
    else None. A label the form does not know is kept under its own name, so `check()` reports it."""
    lines = _lines(body)
    first = next((line for line in lines if line.strip()), "")
    heading = _HEADING.match(first)
    if heading is None or heading.group(1).strip().lower() != "task":
        return None
    fields: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        found = _HEADING.match(line)
        if found is not None:
            label = found.group(1).strip()
            current = fields.setdefault(FORM_LABELS.get(label.lower(), label), [])
            continue
        if current is not None:
            current.append(line)
    data: dict[str, Any] = {}
    for key, value_lines in fields.items():
        text = "\n".join(value_lines).strip()
        if not text or text.lower() == _NO_RESPONSE:
            continue
        value = _form_value(key, text)
        if key.startswith("scope."):
            data.setdefault("scope", {})[key.split(".", 1)[1]] = value
        else:
            data[key] = value
    data.setdefault("task", "")
    return data


def _items(text: str) -> list[str]:
    items = []
    for line in text.split("\n"):
        found = _ITEM.match(line)
        if found is not None and found.group(1):
            items.append(found.group(1))
    return items


def _form_value(key: str, text: str) -> Any:
    if key in ("scope.files", "scope.excluded", "acceptance"):
        return _items(text)
    if key == "depends_on":
        return [part.strip() for item in _items(text) for part in item.split(",") if part.strip()]
    if key == "evidence":
        # Each line is kinds with optional counts (`tests, screenshot: 2`), or else a sentence.
        items: list[Any] = []
        for item in _items(text):
            parts = [part.strip() for part in item.split(",") if part.strip()]
            if not all(_COUNTED.match(part) for part in parts):
                items.append(item)
                continue
            for part in parts:
                kind, _, count = part.partition(":")
                number = count.strip()
                items.append({kind.strip(): int(number) if number.isdigit() else (number or 1)})
        return items
    if key in ("code", "draft"):
        return _YES.get(text.lower(), text)
    return text


# ---------------------------------------------------------------------------------------------- checking


def check(data: Any) -> Checked:
    """A parsed brief mapping, validated strictly."""
    if not isinstance(data, dict):
        return Checked(None, False, ("the brief must be a mapping of fields, starting with `task:`",))
    problems: list[str] = []
    for key in data:
        if key not in KEYS:
            problems.append(f"`{key}` is not a field of a brief (known: {', '.join(KEYS)})")
    task = data.get("task")
    if task is None:
        task = ""
    if not isinstance(task, str) or len(task) > MAX_TEXT:
        problems.append(f"`task` must be text of at most {MAX_TEXT} characters, not {_shown(task)}")
        task = ""
    files, excluded = _scope(data.get("scope"), problems)
    access = _text("access", data.get("access"), problems)
    acceptance = _texts("acceptance", data.get("acceptance"), problems)
    evidence, lines = read_evidence("evidence", data.get("evidence"), problems)
    reviewer, reviewer_as_written = _reviewer(data.get("reviewer"), problems)
    owner = _person("owner", data.get("owner"), _OWNER, "a login", problems)
    code = _flag("code", data.get("code", True), problems)
    draft = _flag("draft", data.get("draft", False), problems)
    priority = _priority(data.get("priority"), problems)
    depends_on = _depends_on(data.get("depends_on"), problems)
    if problems:
        return Checked(None, draft is True, tuple(problems))
    brief = Brief(
        task=task.strip(),
        scope=files,
        excluded=excluded,
        acceptance=acceptance,
        required_evidence=evidence,
        reviewer=reviewer,
        owner=owner,
        code=code is not False,
        access=access,
        evidence_lines=lines,
        reviewer_as_written=reviewer_as_written,
        priority=priority,
        depends_on=depends_on,
    )
    return Checked(brief, draft is True)


def _depends_on(value: Any, problems: list[str]) -> tuple[str, ...]:
    """The issues a task waits for: a list of `12`, `#12` or `owner/repo#12` (one alone may stand without the
    list), each kept once as `#12` or `owner/repo#12` (lower-case: GitHub's names are not case-sensitive)."""
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    found: list[str] = []
    wrong: list[Any] = []
    for item in items:
        said = str(item).strip() if isinstance(item, str | int) and not isinstance(item, bool) else ""
        match = _ISSUE.match(said)
        if match is None:
            wrong.append(item)
            continue
        where, number = match.group(1), match.group(2)
        name = f"{where.lower()}#{number}" if where else f"#{number}"
        if name not in found:
            found.append(name)
    if wrong or len(items) > MAX_DEPENDS:
        shown = _shown(wrong[0] if wrong else value)
        problems.append(
            f"`depends_on` must be a list of at most {MAX_DEPENDS} issues, each `12`, `#12` or `owner/repo#12`, "
            f"not {shown}"
        )
        return ()
    return tuple(found)


def _priority(value: Any, problems: list[str]) -> int | None:
    """`p0` to `p4` in any case, `0` to `4`, or `high`, `medium`, `low`; None when not given."""
    if value is None:
        return None
    said = str(value).strip().lower() if isinstance(value, str | int) and not isinstance(value, bool) else None
    if said is not None and said.isdigit():
        said = f"p{said}"
    if said not in PRIORITIES:
        problems.append(f"`priority` must be one of p0 (first) to p4, or high, medium or low, not {_shown(value)}")
        return None
    return PRIORITIES[said]


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…"


def _texts(key: str, value: Any, problems: list[str]) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if (
        not isinstance(value, list)
        or len(value) > MAX_ITEMS
        or not all(isinstance(v, str) and v.strip() and len(v) <= MAX_TEXT for v in value)
    ):
        problems.append(f"`{key}` must be a list of at most {MAX_ITEMS} lines of text, not {_shown(value)}")
        return ()
    return tuple(v.strip() for v in value)


def _scope(value: Any, problems: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    if value is None:
        return (), ()
    if not isinstance(value, dict):
        problems.append(f"`scope` must be a mapping with `files` and `excluded` lists, not {_shown(value)}")
        return (), ()
    for key in value:
        if key not in SCOPE_KEYS:
            problems.append(f"`scope.{key}` is not a field of a brief's scope (known: files, excluded)")
    return _texts("scope.files", value.get("files"), problems), _texts(
        "scope.excluded", value.get("excluded"), problems
    )


def evidence_kinds(key: str, value: Any, problems: list[str]) -> tuple[str, ...]:
    """Required evidence as a list of kinds (each once) or a mapping of kinds to counts (`screenshot: 2`),
    as `Brief.required_evidence` holds it; each problem is added to `problems`, naming `key`. Only kinds:
    what `.github/baton.yml` requires is a rule, never a sentence."""
    return read_evidence(key, value, problems, sentences=False)[0]


def read_evidence(
    key: str, value: Any, problems: list[str], *, sentences: bool = True
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A brief's `evidence`: the kinds required (as `evidence_kinds`) and the items written as sentences,
    kept as written. A list may mix kinds with sentences (`"real screenshots at 390px and 1280px"`); each
    sentence requires the kinds it names (`evidence_line`), and one that names none is for the reviewer
    alone. A single word that is no kind is a problem: it is a kind misspelt more often than a sentence."""
    if value is None:
        return (), ()
    if sentences:
        allowed = (
            f"a list of {', '.join(EVIDENCE_KINDS)} or sentences naming them, or a mapping of the kinds to counts "
            "like `screenshot: 2`"
        )
    else:
        allowed = f"a list of {', '.join(EVIDENCE_KINDS)}, or a mapping of them to counts like `screenshot: 2`"
    lines: list[str] = []
    if isinstance(value, list) and all(isinstance(item, (str, dict)) for item in value):
        if len(value) > MAX_ITEMS:
            problems.append(f"`{key}` must be {allowed}, of at most {MAX_ITEMS} items, not {len(value)}")
            return (), ()
        counts: dict[Any, Any] = {}
        said: Counter[str] = Counter()
        for item in value:
            if isinstance(item, dict):  # a kind with its count (`- screenshot: 2`), checked below
                counts.update(item)
                continue
            text = item.strip()
            if text in EVIDENCE_KINDS:
                counts.setdefault(text, 1)  # a kind listed twice is still one item
                continue
            named = evidence_line(text) if sentences and len(text) <= MAX_TEXT else Counter[str]()
            if not sentences or len(text) > MAX_TEXT or (not named and len(text.split()) <= 1):
                problems.append(f"`{key}` names {_shown(item)}, which is not a kind of evidence ({allowed})")
                continue
            lines.append(text)
            said.update(named)
        for kind, count in said.items():
            had = counts.get(kind, 0)
            if type(had) is int:  # else the count is wrong, and reported as it was written
                counts[kind] = (had or 1) if kind in SINGLE_KINDS else had + count
        value = counts
    if not isinstance(value, dict):
        problems.append(f"`{key}` must be {allowed}, not {_shown(value)}")
        return (), ()
    kinds: list[str] = []
    for kind, count in value.items():
        if kind not in EVIDENCE_KINDS:
            problems.append(f"`{key}` names {_shown(kind)}, which is not a kind of evidence ({allowed})")
            continue
        most = 1 if kind in SINGLE_KINDS else MAX_COUNT
        if type(count) is not int or not 1 <= count <= most:
            what = "1 (a delivery reports one)" if most == 1 else f"a whole number from 1 to {most}"
            problems.append(f"`{key}.{kind}` must be {what}, not {_shown(count)}")
            continue
        kinds.extend([kind] * count)
    # one order, so equal requirements compare equal
    return tuple(sorted(kinds, key=EVIDENCE_KINDS.index)), tuple(lines)


# What a sentence of evidence names, by kind. A diff is shown by the branch that holds it.
_LINE_KINDS = (
    ("branch", re.compile(r"\b(?:branch(?:es)?|diffs?)\b")),
    ("commit", re.compile(r"\bcommits?\b")),
    ("pr", re.compile(r"\b(?:pull[ -]?requests?|prs?)\b")),
    ("tests", re.compile(r"\btest(?:s|ing)?\b")),
    ("screenshot", re.compile(r"\bscreen[ -]?(?:shots?|captures?)\b")),
)
# Widths named in a run like `390px and 1280px`, `390, 768 and 1280 px` or `390/1280px`.
_WIDTHS = re.compile(r"\d{2,5}(?:\s*px)?(?:\s*(?:,|and|&|/|or)\s*\d{2,5}(?:\s*px)?)*")
_NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                 "nine": 9, "ten": 10}  # fmt: skip
_SHOT_COUNT = re.compile(r"\b(\d{1,3}|" + "|".join(_NUMBER_WORDS) + r")\s+(?:[a-z-]+\s+)?screen[ -]?shots\b")


def evidence_line(line: str) -> Counter[str]:
    """The kinds of evidence a sentence names, with how many screenshots: one per width it names
    (`at 390px and 1280px`: two), or the number it says (`two screenshots`), else one. A sentence that
    offers a choice of kinds (`branch or pull request`) requires none of them: it is for the reviewer."""
    text = line.lower()
    kinds = [kind for kind, pattern in _LINE_KINDS if pattern.search(text)]
    if len(kinds) > 1 and re.search(r"\b(?:or|either)\b", text):
        return Counter()
    named = Counter(dict.fromkeys(kinds, 1))
    if "screenshot" in named:
        widths = {
            number
            for run in _WIDTHS.finditer(text)
            if "px" in run.group(0)
            for number in re.findall(r"\d{2,5}", run.group(0))
        }
        said = _SHOT_COUNT.search(text)
        if widths:
            named["screenshot"] = len(widths)
        elif said is not None:
            word = said.group(1)
            named["screenshot"] = int(word) if word.isdigit() else _NUMBER_WORDS[word]
        named["screenshot"] = max(named["screenshot"], 1)
    return named


def _text(key: str, value: Any, problems: list[str]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        problems.append(f"`{key}` must be text of at most {MAX_TEXT} characters, not {_shown(value)}")
        return None
    return value.strip() or None


def _reviewer(value: Any, problems: list[str]) -> tuple[str | None, str | None]:
    """A login or team reviews by rule; any other text names a reviewer in words, shown as written."""
    if isinstance(value, str) and _REVIEWER.match(value.strip()) is None:
        written = _text("reviewer", value, problems)
        return None, written
    return _person("reviewer", value, _REVIEWER, "a login, an org/team name or text", problems), None


def _person(key: str, value: Any, pattern: re.Pattern[str], what: str, problems: list[str]) -> str | None:
    if value is None:
        return None
    found = pattern.match(value.strip()) if isinstance(value, str) else None
    if found is None:
        problems.append(f"`{key}` must be {what} (like `@mona`), not {_shown(value)}")
        return None
    return found.group(1)


def _flag(key: str, value: Any, problems: list[str]) -> bool | None:
    if not isinstance(value, bool):
        problems.append(f"`{key}` must be true or false, not {_shown(value)}")
        return None
    return value


# ---------------------------------------------------------------------------------------------- evidence


def required(brief: Brief | None, repository: Iterable[str]) -> Counter[str]:
    """The evidence a delivery must show, by kind: the larger count of the brief's and the repository's.
    A non-code task requires no code evidence (branch, commit, pull request)."""
    counts = Counter(repository)
    if brief is not None:
        for kind, count in Counter(brief.required_evidence).items():
            counts[kind] = max(counts[kind], count)
        if not brief.code:
            for kind in CODE_KINDS:
                counts.pop(kind, None)
    return counts


def given(evidence: Evidence) -> Counter[str]:
    return Counter(
        {
            "branch": int(evidence.branch is not None),
            "commit": int(evidence.commit is not None),
            "pr": int(evidence.pull_request is not None),
            "tests": len(evidence.tests),
            "screenshot": len(evidence.screenshots),
        }
    )


_NAMES = {"branch": "branch", "commit": "commit", "pr": "pull request", "tests": "tests", "screenshot": "screenshot"}
_PLURALS = {"branch": "branches", "commit": "commits", "pr": "pull requests", "tests": "test results",
            "screenshot": "screenshots"}  # fmt: skip


def shortfall(needed: Counter[str], evidence: Evidence) -> list[str]:
    """What a delivery lacks, in words: `2 screenshots (1 given)`, `tests`."""
    have = given(evidence)
    gaps = []
    for kind in EVIDENCE_KINDS:
        want = needed.get(kind, 0)
        if have[kind] >= want:
            continue
        if want == 1:
            gaps.append(_NAMES[kind])
        else:
            gaps.append(f"{want} {_PLURALS[kind]} ({have[kind]} given)")
    return gaps


def unmet_lines(brief: Brief | None, needed: Counter[str], evidence: Evidence) -> list[str]:
    """The brief's evidence sentences that name a kind the delivery lacks, as written."""
    if brief is None:
        return []
    have = given(evidence)
    short = {kind for kind, want in needed.items() if have[kind] < want}
    return [line for line in brief.evidence_lines if short & set(evidence_line(line))]


def counted(kinds: Iterable[str]) -> str:
    """Required evidence in words: `branch, tests, 2 screenshots`."""
    counts = Counter(kinds)
    return ", ".join(
        _NAMES[kind] if counts[kind] == 1 else f"{counts[kind]} {_PLURALS[kind]}"
        for kind in EVIDENCE_KINDS
        if counts[kind]
    )


# ---------------------------------------------------------------------------------------------- changes


def _listed(items: Iterable[str]) -> str:
    return "; ".join(f"“{item}”" for item in items)


def changes(before: Brief | None, after: Brief | None) -> list[str]:
    """How a brief changed, one phrase per field, for the event and the status comment."""
    if before == after:
        return []
    if after is None:
        return ["the brief was removed"]
    old = before or Brief()
    said: list[str] = [] if before is not None else ["a brief was added"]
    if old.task != after.task:
        said.append("task reworded")
    for name, was, now in (
        ("scope", old.scope, after.scope),
        ("excluded", old.excluded, after.excluded),
        ("acceptance", old.acceptance, after.acceptance),
    ):
        added = [item for item in now if item not in was]
        removed = [item for item in was if item not in now]
        if added:
            said.append(f"{name} added {_listed(added)}")
        if removed:
            said.append(f"{name} removed {_listed(removed)}")
    if old.access != after.access:
        said.append(f"access now “{after.access}”" if after.access else "access removed")
    if Counter(old.required_evidence) != Counter(after.required_evidence):
        said.append(f"evidence now {counted(after.required_evidence) or 'none'}")
    elif old.evidence_lines != after.evidence_lines:
        said.append(f"evidence reworded: {_listed(after.evidence_lines) or 'no sentences'}")
    for name, was_person, now_person in (("reviewer", old.reviewer, after.reviewer), ("owner", old.owner, after.owner)):
        if name == "reviewer" and after.reviewer_as_written:
            if old.reviewer_as_written != after.reviewer_as_written or was_person:
                said.append(f"reviewer now “{after.reviewer_as_written}” (as written)")
        elif (was_person or "").lower() != (now_person or "").lower() or (
            name == "reviewer" and old.reviewer_as_written and not now_person
        ):
            said.append(f"{name} now {'@' + now_person if now_person else 'none'}")
    if old.code != after.code:
        said.append("now a code task" if after.code else "now a non-code task")
    if old.priority != after.priority:
        said.append(f"priority now p{after.priority}" if after.priority is not None else "priority removed")
    if old.depends_on != after.depends_on:
        said.append(f"depends on {', '.join(after.depends_on)}" if after.depends_on else "depends on nothing now")
    return said if before is not None else said[:1]


__all__ = [
    "Checked",
    "changes",
    "check",
    "counted",
    "evidence_kinds",
    "evidence_line",
    "form",
    "read_evidence",
    "required",
    "shortfall",
    "unmet_lines",
    "yaml_block",
]
