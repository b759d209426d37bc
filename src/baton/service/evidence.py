"""Recording evidence: facts from webhooks, the REST API and `/deliver` reports, into the rails they reach.

One call is one transaction. A fact is logged for its repository once (`evidence_facts`), then applied to
every tracked ticket it reaches, and a ticket whose rail changed gets an evidence event and is marked due on
the outbox, so GitHub shows the change. The rules themselves, and which rails a fact reaches, are
`baton.domain.evidence`'s; this module only finds those rails in the database and keeps them there.

Which rails a fact reaches:

- a pull request: the tickets its body and head branch link, and every rail that holds its number or its
  head branch (that is how an edited body unlinks a ticket, and how a delivery's report links one);
- a branch: the ticket its name carries, and the rails that hold the branch;
- a check: the rails that hold its commit, or a pull request or branch the webhook names with it;
- a deployment or its status: the rails that hold that deployment, and the rails merged before it was made
  that are not yet deployed to its environment (a deployment ships every earlier merge), unless GitHub calls
  the environment transient;
- a comparison: the rails that asked for it.

A rail that starts holding a subject catches up on what the log already knows about it, so order does not
matter: a branch pushed before it was reported, a check that ran before the pull request was linked, a
deployment delivered before its merge. A new ticket's rail catches up the same way on the pull requests and
branches the log already knows to link its issue (`started`, in the ticket's creation), and once on what the
issue's timeline on GitHub names (`look_back`: the writer asks, for work done before Baton was installed).

Nothing here imports the work service or the work transitions, and of a unit of work it sees only the
`evidence` and `outbox` facets (the `Unit` protocol below; mypy holds the code to it, and
tests/web/test_evidence_guarantee.py holds the imports): evidence has no path to the work state. (The work
service calls `report()` inside its own unit of work, never the other way round.)
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from sqlalchemy import Engine

from baton.domain.evidence import (
    DEPLOYMENT_MARGIN,
    DeliveryReport,
    EvidenceRail,
    Fact,
    Repository,
    Sighting,
    Subject,
    accepted_heads,
    apply,
    instant,
    may_ship,
    merge_stamps,
    not_found,
    reaches,
    subject,
    subjects,
)
from baton.domain.model import Evidence, RepositoryKey, TicketKey
from baton.service.activity import record_activity
from baton.store.activity import ActivityTx
from baton.store.evidence import EvidenceReads, EvidenceTx, StoredRail
from baton.store.evidence_codec import fact_to_dict
from baton.store.outbox.marking import OutboxTx
from baton.store.statements import Conflict, settle

CATCH_UP_ROUNDS = 8  # each round follows the subjects the previous one added


class Unit(Protocol):
    """What evidence code sees of a unit of work (`baton.service.unit.UnitOfWork`): the evidence, activity and
    outbox facets. Typed here, so no import leads from evidence to the work rail."""

    @property
    def evidence(self) -> EvidenceTx: ...

    @property
    def activity(self) -> ActivityTx: ...

    @property
    def outbox(self) -> OutboxTx: ...


class Units(Protocol):
    engine: Engine

    def begin(self) -> AbstractContextManager[Unit]: ...


@dataclass
class _Change:
    fact: Fact
    source: str
    replayed: bool


@dataclass
class EvidenceService:
    """`answer_delay`: how long a changed issue waits before the writer shows it, so a burst of pushes and
    checks is shown once."""

    units: Units
    answer_delay: float = 2.0
    reads: EvidenceReads = field(init=False)

    def __post_init__(self) -> None:
        self.reads = EvidenceReads(self.units.engine)

    # -- writing -------------------------------------------------------------------------------------

    def record(
        self, repository: Repository, sightings: Sequence[Sighting], source: str, activity: str | None = None
    ) -> list[int]:
        """Log the facts and apply each to every rail it reaches. Returns the issue numbers whose rail changed.

        `activity` (`push`, `pull_request`): the facts are work on the tickets they reach (a push to a linked
        branch, an update of a linked pull request), recorded as runner activity on each of them."""
        if not sightings:
            return []
        with self.units.begin() as uow:
            return self._record(uow, repository, sightings, source, activity)

    def looked_back(self, key: TicketKey) -> bool:
        """Whether the ticket's issue timeline on GitHub was read already (`look_back`)."""
        return self.reads.holds(key, Subject.timeline())

    def look_back(self, repository: Repository, number: int, sightings: Sequence[Sighting], source: str) -> list[int]:
        """What the issue's timeline on GitHub named (the pull requests that mention it, as GitHub shows them
        now), recorded as `record` does; in the same transaction the ticket's rail comes to hold the timeline
        (`Subject.timeline()`), so it is read once per ticket. Returns the issue numbers whose rail changed."""
        key = repository.key.ticket(number)
        with self.units.begin() as uow:
            etx = uow.evidence
            found = etx.ticket(key)
            if found is None:
                return []
            changed = self._record(uow, repository, sightings, source) if sightings else []
            etx.link(repository.key, found[0], [Subject.timeline()])
        return changed

    def _record(
        self, uow: Unit, repository: Repository, sightings: Sequence[Sighting], source: str, activity: str | None = None
    ) -> list[int]:
        place = repository.key
        etx = uow.evidence
        etx.lock(place)
        changed: dict[int, int] = {}
        active: set[int] = set()
        for sighting in sightings:
            etx.log(place, subject(sighting.fact), sighting.fact, source)
        for sighting in sightings:
            for ticket_id, number in sorted(self._reached(etx, place, sighting).items()):
                if self._apply(etx, place, ticket_id, number, [sighting.fact], source):
                    changed[ticket_id] = number
                active.add(number)
        if activity is not None:
            for number in sorted(active):
                record_activity(uow, place.ticket(number), activity)
        shown = (repository.name, self.answer_delay, False)
        numbers = sorted(set(changed.values()))
        uow.outbox.due_all({place.ticket(n): shown for n in numbers})
        return numbers

    def started(self, uow: Unit, key: TicketKey, source: str) -> bool:
        """A new ticket's rail catches up on what the repository's log already knows of its issue: the pull
        requests and branches logged before the ticket was made that link it (a "Fixes #42" opened before the
        issue was offered, a branch `42-…` pushed before), inside the caller's unit of work (the ticket's
        creation). True when the rail changed; the caller marks the issue due."""
        etx = uow.evidence
        found = etx.ticket(key)
        if found is None:
            return False
        place = key.repository_key
        etx.lock(place)  # a fact logged meanwhile by another writer either is seen here or sees this ticket
        linking = etx.linking(place, key.number)
        if not linking:
            return False
        return self._apply(etx, place, found[0], key.number, etx.facts(place, linking), source, replayed=True)

    def report(self, uow: Unit, key: TicketKey, evidence: Evidence, at: datetime, source: str) -> bool:
        """A `/deliver`'s branch, commit and pull request, as a claim on the ticket's rail, inside the caller's
        unit of work (the delivery's own). The caller marks the issue due."""
        if not (evidence.branch or evidence.commit or evidence.pull_request):
            return False
        etx = uow.evidence
        place = key.repository_key
        found = etx.ticket(key)
        if found is None:
            return False
        etx.lock(place)
        # to the microsecond: of two deliveries in one second, the later report must win
        report = DeliveryReport(evidence, at.astimezone(UTC).isoformat(timespec="microseconds"))
        return self._apply(etx, place, found[0], key.number, [report], source)

    def accepted(self, uow: Unit, key: TicketKey, revision: int, source: str) -> None:
        """The ticket was accepted: record which commits that covered (see `accepted_heads`), and the reported
        items GitHub did not find, inside the caller's unit of work, so the acceptance check can say when a pull
        request's head moved after it."""
        etx = uow.evidence
        found = etx.ticket(key)
        if found is not None:
            etx.lock(key.repository_key)  # evidence events are appended one writer at a time (see `EvidenceTx.lock`)
            rail = etx.rail(found[0], key.number).rail
            data: dict[str, Any] = {"revision": revision, "heads": list(accepted_heads(rail))}
            missing = not_found(rail)
            if missing:  # accepted all the same: the history keeps what GitHub did not know
                data["not_found"] = [{"kind": item.kind, "reported": item.ref} for item in missing]
            etx.append(found[0], "acceptance", source, data, rail)

    def applicability(self, uow: Unit, key: TicketKey, applicable: bool, source: str) -> bool:
        """Make the ticket's rails applicable or not (a non-code task's are not), inside the caller's unit of
        work, with an evidence event; the facts the rail holds stay. True when the rail changed."""
        etx = uow.evidence
        found = etx.ticket(key)
        if found is None:
            return False
        etx.lock(key.repository_key)
        stored = etx.rail(found[0], key.number)
        if stored.rail.applicable == applicable:
            return False
        rail = replace(stored.rail, applicable=applicable)
        if not etx.save(key.repository_key, stored, rail):
            raise Conflict("another writer moved the rail since it was read")
        etx.append(found[0], "applicability", source, {"applicable": applicable}, rail)
        return True

    def issue_changed(self, key: TicketKey, action: str, data: dict[str, Any], source: str) -> bool:
        """The issue was closed or reopened on GitHub: an evidence event, nothing more. A merged "Fixes #42"
        closes the issue; the work state stays where the reviewer left it. The same change told twice (its
        `data` names when it happened) is recorded once."""
        with self.units.begin() as uow:
            etx = uow.evidence
            found = etx.ticket(key)
            if found is None:
                return False
            etx.lock(key.repository_key)  # one writer at a time: its event's id and time follow the others'
            if data in etx.events_of(found[0], f"issue_{action}"):
                return False
            rail = etx.rail(found[0], key.number).rail
            etx.append(found[0], f"issue_{action}", source, data, rail)
        return True

    def _reached(self, etx: EvidenceTx, place: RepositoryKey, sighting: Sighting) -> dict[int, int]:
        reached = etx.tracked(place, sighting.links)
        reached.update(etx.holding(place, reaches(sighting)))
        if sighting.environment is not None:
            for stored in etx.merged(place):
                if may_ship(stored.rail, sighting.fact, sighting.environment):
                    reached[stored.ticket_id] = stored.number
        return reached

    def _apply(
        self,
        etx: EvidenceTx,
        place: RepositoryKey,
        ticket_id: int,
        number: int,
        facts: Sequence[Fact],
        source: str,
        *,
        replayed: bool = False,
    ) -> bool:
        """Fold `facts` into the rail (`replayed`: they come from the log, not from the caller) and keep it."""

        def attempt() -> bool:
            stored = etx.rail(ticket_id, number)
            rail, changes = self._fold(etx, place, stored, facts, source, replayed)
            if not changes:
                return False
            if not etx.save(place, stored, rail):
                raise Conflict("another writer moved the rail since it was read: fold again on what it left")
            etx.link(place, ticket_id, subjects(rail))
            after = stored.rail
            for change in changes:
                after = apply(after, change.fact)
                data: dict[str, Any] = {"fact": fact_to_dict(change.fact)}
                if change.replayed:
                    data["caught_up"] = True
                etx.append(ticket_id, data["fact"]["kind"], change.source, data, after)
            return True

        return settle(f"the evidence rail of ticket {ticket_id}", attempt)

    def _fold(
        self,
        etx: EvidenceTx,
        place: RepositoryKey,
        stored: StoredRail,
        facts: Sequence[Fact],
        source: str,
        replayed: bool = False,
    ) -> tuple[EvidenceRail, list[_Change]]:
        """The rail with `facts`, then with what the log knows about each subject the rail starts to hold."""
        rail = stored.rail
        known, merges = subjects(rail), set(merge_stamps(rail))
        pending = [_Change(fact, source, replayed) for fact in facts]
        changes: list[_Change] = []
        for _ in range(CATCH_UP_ROUNDS):
            for change in pending:
                after = apply(rail, change.fact)
                if after != rail:
                    rail = after
                    changes.append(change)
            fresh = subjects(rail) - known
            merged = {sha: at for sha, at in merge_stamps(rail).items() if sha not in merges}
            if not fresh and not merged:
                break
            known |= fresh
            merges |= set(merged)
            logged = etx.facts(place, fresh)
            if merged:
                since = min(instant(at) for at in merged.values()) - DEPLOYMENT_MARGIN
                logged += etx.deployments_since(place, since)
            pending = [_Change(fact, source, True) for fact in logged]
        return rail, changes

    # -- reading -------------------------------------------------------------------------------------

    def rail(self, key: TicketKey) -> EvidenceRail:
        """The ticket's rail; the empty one before anything was recorded."""
        return self.reads.rail(key) or EvidenceRail(key.number)

    def holding(self, repository: Repository, subject: Subject) -> list[tuple[TicketKey, EvidenceRail]]:
        """Every rail that holds a subject (`Subject.pull_request(57)`), with its ticket's key."""
        return self.reads.holding(repository.key, subject)


__all__ = ["EvidenceService"]
