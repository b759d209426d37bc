"""Hooks about the App's installations: installed, suspended, unsuspended, deleted, and the
repositories added to or removed from one. Commands in a suspended or deleted installation stop. The open
issues of repositories an installation newly reaches are offered (`offering.backfills`)."""

from __future__ import annotations

from typing import Any

from baton.github.webhooks import dig, full_name, login, number
from baton.service.work import Outcome

from .context import Intake
from .envelope import Envelope
from .offering import backfills

STATUS = {"created": "active", "unsuspend": "active", "suspend": "suspended", "deleted": "deleted"}


def _repositories(payload: dict[str, Any], key: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    listed = dig(payload, key, default=[])
    for repository in listed if isinstance(listed, list) else []:  # anything else is no list GitHub sends
        repository_id, name = number(repository, "id"), full_name(repository, "full_name")
        if repository_id is not None and name:
            found.append((repository_id, name))
    return found


def installation(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    installation_id, payload = envelope.installation_id, envelope.payload
    status = STATUS.get(envelope.action)
    if intake.installations is None or installation_id is None or status is None:
        return ()
    account = login(payload, "installation", "account", "login")
    repositories = _repositories(payload, "repositories") if envelope.action == "created" else []
    intake.installations.record(installation_id, account, status)
    if repositories:
        intake.installations.repositories(installation_id, repositories, True)
        backfills(intake, envelope, repositories)  # the open issues already there are offered too
    return ()


def installation_repositories(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    installation_id, payload = envelope.installation_id, envelope.payload
    if intake.installations is None or installation_id is None:
        return ()
    added, removed = _repositories(payload, "repositories_added"), _repositories(payload, "repositories_removed")
    intake.installations.repositories(installation_id, added, True)
    intake.installations.repositories(installation_id, removed, False)
    if envelope.action == "added":
        backfills(intake, envelope, added)
    return ()
