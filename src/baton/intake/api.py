"""Commands that arrive over the agent API instead of in a comment.

The caller is who GitHub says its token belongs to; from there on the call is decided as a comment by that
login would be: the same settings, the same access lookup, the same guards. The operation id is the caller's
idempotency key (or a fresh one), so a retry decides nothing twice. An issue Baton has not met yet is read
from GitHub and tracked on first use, as a first comment on it would make it.
"""

from __future__ import annotations

from dataclasses import dataclass

from baton.domain import Command, TicketKey
from baton.service.work import Issue, Outcome, Request

from .commands import brief_teams
from .context import Intake


@dataclass(frozen=True)
class Missing(Exception):
    """No such issue for Baton: the repository is not installed, or GitHub has no open issue of that number."""

    message: str


def decide(
    intake: Intake, repository: str, number: int, command: Command, login: str, is_bot: bool, operation_id: str
) -> tuple[TicketKey, Outcome]:
    """Decide `command` by `login` on `repository#number`. Raises `Missing`."""
    installations = intake.installations
    found = installations.find(repository) if installations is not None else None
    if found is None or installations is None or not installations.active(found[0]):
        raise Missing(f"Baton is not installed on {repository}, or it has no issue #{number} there.")
    installation_id, repository_id = found
    key = TicketKey(installation_id, repository_id, number)
    issue = Issue(key, repository, "")
    if intake.work.ticket(key) is None:  # first use: read it from GitHub, as a first comment would carry it
        read = intake.issues.issue(installation_id, repository, number) if intake.issues is not None else None
        if read is None:
            raise Missing(f"{repository} has no open issue #{number}.")
        issue = Issue(key, repository, read.author, read.body, read.labels)
    policy = intake.policy(installation_id, repository, key, login)
    teams = brief_teams(intake, key, [command])
    actor = intake.person(installation_id, repository, login, is_bot, policy, key, teams)
    request = Request(issue, command, actor, operation_id, policy, via="api")
    return key, intake.work.apply_all([request])[0]
