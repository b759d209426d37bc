"""The sweep of quiet claims: a lane of `baton serve` and `baton worker` that finds claimed tickets whose
runner has been quiet past their repository's `stale_after` (flags them stale) or `auto_release_after`
(releases them), at the units' clock.

Every action is one unit of work on the ticket's locked row, checked against the revision the sweep read:

- flagging is the compare-and-swap of the ticket's activity row (`ActivityTx.flag`): of several processes
  sweeping at once, one flags the quiet period and queues its one comment; the others find it flagged;
- the release is a transition like a command's, swapped from the revision read: a command that moved the
  ticket first (a `/deliver` racing the sweep) wins, and the sweep leaves the ticket alone.

GitHub hears of both through the outbox (the writer paces its writes by the installation's budget). Each
repository's settings are read once per sweep, through the configs' own cache, never once per ticket.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from baton.domain import Policy, Ticket, WorkState
from baton.domain.quiet import FLAG, RELEASE, auto_release, due, flagged_stale, release_text, stale_text
from baton.github.configs import Loaded
from baton.service.activity import record_activity
from baton.store import Conflict
from baton.store.activity import QuietClaim

from .unit import UnitOfWork, Units

log = logging.getLogger("baton.sweep")

INTERVAL = 30.0  # seconds between sweeps: a quiet claim is noticed within this of becoming due


class Configs(Protocol):
    """A repository's settings (`.github/baton.yml`), cached by the implementation."""

    def load(self, installation_id: int, repository: str) -> Loaded: ...


class Active(Protocol):
    def active(self, installation_id: int) -> bool: ...


@dataclass(frozen=True)
class Swept:
    """What one sweep did."""

    flagged: int = 0
    released: int = 0


class Sweep:
    def __init__(
        self,
        units: Units,
        configs: Configs,
        *,
        answer_delay: float = 2.0,
        interval: float = INTERVAL,
        installations: Active | None = None,
    ) -> None:
        self.units = units
        self.configs = configs
        self.answer_delay = answer_delay
        self.interval = interval
        self.installations = installations

    def step(self) -> float:
        """One sweep, for the lane; returns the wait until the next."""
        self.sweep()
        return self.interval

    def sweep(self) -> Swept:
        with self.units.begin() as uow:
            claims = uow.activity.quiet_claims()
        now = self.units.clock.now()
        policies: dict[tuple[int, str], Policy | None] = {}
        flagged = released = 0
        for claim in claims:
            place = (claim.key.installation_id, claim.repository.lower())
            if place not in policies:
                policies[place] = self._policy(claim)
            policy = policies[place]
            if policy is None:
                continue
            action = due(claim.since, claim.stale_at is not None, policy, now)
            if action == RELEASE:
                released += self._release(claim, policy)
            elif action == FLAG:
                flagged += self._flag(claim, policy)
        return Swept(flagged, released)

    def _policy(self, claim: QuietClaim) -> Policy | None:
        """The repository's settings; None to leave its claims alone this round (its installation is not
        active, or its settings cannot be read now)."""
        installation_id = claim.key.installation_id
        if self.installations is not None and not self.installations.active(installation_id):
            return None
        try:
            return self.configs.load(installation_id, claim.repository).policy
        except Exception as error:  # GitHub failing for a moment: the next sweep tries again
            log.warning("the settings of %s cannot be read (%s); its quiet claims wait", claim.repository, error)
            return None

    def _flag(self, claim: QuietClaim, policy: Policy) -> bool:
        def attempt(uow: UnitOfWork) -> bool:
            ticket = _claimed(uow, claim)
            if ticket is None:
                return False
            cutoff = self.units.clock.now() - timedelta(seconds=policy.stale_after)
            if not uow.activity.flag(claim.ticket_id, claim.since, cutoff):
                return False  # flagged by another process, or activity came since the sweep read it
            since = _quiet_since(uow, claim)
            uow.activity.append_event(claim.ticket_id, flagged_stale(ticket, since, policy))
            self._reply(uow, claim, ticket, stale_text(ticket, since, policy))
            return True

        return self.units.settle(f"flagging ticket {claim.ticket_id} stale", attempt)

    def _release(self, claim: QuietClaim, policy: Policy) -> bool:
        assert policy.auto_release_after is not None
        after = timedelta(seconds=policy.auto_release_after)

        def attempt(uow: UnitOfWork) -> bool:
            ticket = _claimed(uow, claim)
            if ticket is None:
                return False
            since = _quiet_since(uow, claim)
            if self.units.clock.now() - since < after:
                return False  # activity came since the sweep read it
            decision = auto_release(ticket, since, policy)
            if not uow.work.swap(claim.ticket_id, ticket.revision, decision.ticket):
                return False  # a command moved the ticket first: it won
            if not uow.work.count_claims(ticket, decision.ticket, None):
                raise Conflict("a claim count moved")
            uow.work.append(claim.ticket_id, decision.event, None)
            known = (claim.ticket_id, claim.repository)
            record_activity(uow, claim.key, "auto_release_after", quietly=True, known=known)  # its flag ends
            self._reply(uow, claim, ticket, release_text(ticket, since, policy))
            return True

        return self.units.settle(f"releasing ticket {claim.ticket_id}", attempt)

    def _reply(self, uow: UnitOfWork, claim: QuietClaim, ticket: Ticket, text: str) -> None:
        """Answer the claim's runner with `text`, on its issue, in the same transaction."""
        assert ticket.runner is not None
        uow.outbox.queue_all({claim.key: [("reply", None, ticket.runner, text)]}, self.answer_delay)
        uow.outbox.due(claim.key, claim.repository)


def _quiet_since(uow: UnitOfWork, claim: QuietClaim) -> datetime:
    """When the claim's runner was last active, as the row locked now says (the sweep's read may be older)."""
    quiet = uow.activity.quiet(claim.key)
    return quiet[0] if quiet is not None else claim.since


def _claimed(uow: UnitOfWork, claim: QuietClaim) -> Ticket | None:
    """The ticket, its row locked, while it is still the claim the sweep read (claimed, same revision)."""
    stored = uow.work.tickets([claim.key], lock=True).get(claim.key)
    if stored is None or stored.ticket.state is not WorkState.CLAIMED or stored.ticket.revision != claim.revision:
        return None
    return stored.ticket


__all__ = ["INTERVAL", "Sweep", "Swept"]
