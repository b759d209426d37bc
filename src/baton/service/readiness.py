"""Whether a task is ready, as the work rail keeps it: the brief's `depends_on` written as links beside GitHub's
(`baton.store.dependencies`), and what follows when what an issue waits for changes: the issue is shown again
(`baton:blocked`, the status comment's `Blocked by` lines), and a task nothing open blocks any more records
which change unblocked it (`unblocked`, `by: owner/repo#N`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence

from baton.domain import Brief, Event, Role, TicketKey
from baton.domain.issue import Linked
from baton.reading.briefs import read_brief
from baton.store import dependencies
from baton.store.dependencies import BLOCKED_BY, DEPENDS_ON, SUB_ISSUE, ref

from .unit import UnitOfWork, Units

log = logging.getLogger("baton.readiness")

# Whether an issue is open on GitHub: (installation id, "owner/repo", number) -> open. A missing issue is not.
IssueOpen = Callable[[int, str, int], bool]
# An issue's links as GitHub lists them: (installation id, "owner/repo", number) -> its blockers and sub-issues.
IssueLinks = Callable[[int, str, int], Linked]
BATON = "baton"


def named(repository: str, brief: Brief | None) -> list[str]:
    """The issues a brief's `depends_on` names, as blockers are named (`owner/repo#N`, lower-case)."""
    if brief is None:
        return []
    return [ref(repository, int(entry[1:])) if entry.startswith("#") else entry for entry in brief.depends_on]


def states(
    units: Units, issue_open: IssueOpen | None, wanted: Iterable[tuple[int, str, Brief | None]]
) -> dict[str, bool]:
    """Whether each issue the briefs name (installation id, repository, brief) is open, for those Baton knows
    nothing of: asked of GitHub, outside any decision's transaction. One GitHub cannot tell about is left out (a
    link to it counts as open until its issue is closed)."""
    asked: dict[str, int] = {}
    for installation_id, repository, brief in wanted:
        for blocker in named(repository, brief):
            asked.setdefault(blocker, installation_id)
    if not asked:
        return {}
    with units.read() as uow:
        found = dependencies.known(uow.connection, asked)
    if issue_open is None:
        return found
    for blocker, installation_id in asked.items():
        if blocker in found:
            continue
        repository, _, number = blocker.rpartition("#")
        try:
            found[blocker] = issue_open(installation_id, repository, int(number))
        except Exception as error:  # GitHub not answering holds nothing back: the link counts as open
            log.warning("%s not read from GitHub: %s", blocker, error)
    return found


def body_states(
    units: Units, issue_open: IssueOpen | None, issues: Iterable[tuple[TicketKey, str, str]]
) -> dict[str, bool]:
    """`states` for the briefs in issue bodies (key, repository, body); a body that names no dependency costs
    nothing."""
    wanted = [(key.installation_id, repository, read_brief(body).brief) for key, repository, body in issues
              if "depends" in body.lower()]  # fmt: skip
    return states(units, issue_open, wanted)


def declare(
    uow: UnitOfWork, key: TicketKey, repository: str, brief: Brief | None, known: Mapping[str, bool]
) -> list[str]:
    """Keep the issue's `depends_on` links as its brief names them: new ones linked (open as `known`, as any
    other link to it last saw it, else open), ones the brief no longer names unlinked (an issue never waits for
    itself). Those unlinked."""
    itself = ref(repository, key.number)
    wanted = [blocker for blocker in named(repository, brief) if blocker != itself]
    had = dependencies.declared(uow.connection, key)
    new = [blocker for blocker in wanted if blocker not in had]
    learned = dependencies.known(uow.connection, [blocker for blocker in new if blocker not in known])
    now = uow.work.clock.now()
    for blocker in new:
        dependencies.link(uow.connection, key, DEPENDS_ON, blocker, known.get(blocker, learned.get(blocker, True)), now)
    gone = [blocker for blocker in had if blocker not in wanted]
    for blocker in gone:
        dependencies.unlink(uow.connection, key, DEPENDS_ON, blocker)
    return gone


def relink(uow: UnitOfWork, key: TicketKey, found: Linked) -> str | None:
    """Keep the issue's GitHub links (blockers, sub-issues) as GitHub listed them (`found`): new ones linked, gone
    ones unlinked, each one's state as listed. The first blocker whose link changed (None: none did)."""
    now = uow.work.clock.now()
    changed: list[str] = []
    for source, listed in ((BLOCKED_BY, found.blocked_by), (SUB_ISSUE, found.sub_issues)):
        had = dependencies.linked(uow.connection, key, source)
        wanted = {ref(repository, number): is_open for repository, number, is_open in listed}
        for blocker in had.keys() - wanted.keys():
            dependencies.unlink(uow.connection, key, source, blocker)
            changed.append(blocker)
        for blocker, is_open in wanted.items():
            if had.get(blocker) is not is_open:
                dependencies.link(uow.connection, key, source, blocker, is_open, now)
                changed.append(blocker)
    return min(changed) if changed else None


def waiting(uow: UnitOfWork, keys: Sequence[TicketKey]) -> dict[TicketKey, list[str]]:
    """What `keys` wait for before a change to it (for `moved`), read once their tracked tickets are locked: two
    blockers of one task closing at once are told one after the other, so the second sees the first closed and
    records `unblocked`."""
    uow.work.tickets(list(keys), lock=True)
    return dependencies.open_blockers(uow.connection, keys)


def moved(
    uow: UnitOfWork, before: Mapping[TicketKey, Sequence[str]], keys: Iterable[TicketKey], by: str, actor: str
) -> None:
    """After a change to what `keys` wait for (`before`: their open blockers then): each tracked ticket whose open
    blockers changed is shown again (its issue marked due), and each one nothing open blocks any more records
    `unblocked`, naming the change (`by`), without a new revision: readiness is not a work transition."""
    wanted = list(dict.fromkeys(keys))
    after = dependencies.open_blockers(uow.connection, wanted)
    changed = [key for key in wanted if list(before.get(key, ())) != after.get(key, [])]
    if not changed:
        return
    for key, stored in uow.work.tickets(changed).items():
        if stored is None:
            continue
        ticket = stored.ticket
        if before.get(key) and not after.get(key):
            event = Event("unblocked", actor, Role.ANYONE, ticket.revision, ticket.attempt, {"by": by})
            uow.work.append(stored.id, event, None)
        uow.outbox.due(key, ticket.repository)


__all__ = [
    "BATON", "IssueLinks", "IssueOpen", "body_states", "declare", "moved", "named", "relink", "states", "waiting",
]  # fmt: skip
