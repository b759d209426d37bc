"""Deliveries about the App's installations: installed, suspended, unsuspended, deleted, and the
repositories added to or removed from one. Commands in a suspended or deleted installation stop."""

from __future__ import annotations

from typing import Any

from baton.github.webhooks import dig, number, text
from baton.service.work import Outcome

from .context import Intake
from .envelope import Envelope

STATUS = {"created": "active", "unsuspend": "active", "suspend": "suspended", "deleted": "deleted"}


def _repositories(payload: dict[str, Any], key: str) -> list[tuple[int, str]]:
    found = []
    for repository in dig(payload, key, default=[]):
        repository_id, full_name = number(repository, "id"), text(repository, "full_name")
        if repository_id is not None and full_name:
            found.append((repository_id, full_name))
    return found


def installation(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    installation_id, payload = envelope.installation_id, envelope.payload
    status = STATUS.get(envelope.action)
    if intake.installations is None or installation_id is None or status is None:
        return ()
    intake.installations.record(installation_id, text(payload, "installation", "account", "login"), status)
    if envelope.action == "created":
        intake.installations.repositories(installation_id, _repositories(payload, "repositories"), True)
    return ()


def installation_repositories(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    installation_id, payload = envelope.installation_id, envelope.payload
    if intake.installations is None or installation_id is None:
        return ()
    intake.installations.repositories(installation_id, _repositories(payload, "repositories_added"), True)
    intake.installations.repositories(installation_id, _repositories(payload, "repositories_removed"), False)
    return ()
