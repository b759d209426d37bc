"""Hooks that carry evidence: branches, pull requests, reviews, checks, deployments, and an issue closed
or reopened. A handler turns the payload into facts and hands them to the evidence service, which has no
path to the work state. Facts are joins, so processing one twice changes nothing."""

from __future__ import annotations

from typing import Any

from baton.domain.evidence import stamp
from baton.github.facts import observe
from baton.github.webhooks import dig, issue_number, number, text
from baton.reading.config import PATH
from baton.service.work import Outcome

from .context import Intake
from .envelope import Envelope

# The pull request updates that are work on the tickets the pull request links (runner activity).
ACTIVE_PULL_REQUEST = frozenset({"opened", "reopened", "synchronize", "ready_for_review", "edited"})


def activity(envelope: Envelope) -> str | None:
    """What runner activity a hook is, on the tickets its facts reach: a push or a new branch (not a
    deletion), or a pull request update; None for the other evidence (checks, reviews, deployments)."""
    event = envelope.hook.event
    if event == "push" and dig(envelope.payload, "deleted") is not True:
        return "push"
    if event == "create":
        return "branch created"
    if event == "pull_request" and envelope.action in ACTIVE_PULL_REQUEST:
        return f"pull request {envelope.action}"
    return None


def evidence(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    """Facts for the evidence rail of every tracked ticket they reach; no command runs and no work state moves."""
    payload, hook = envelope.payload, envelope.hook
    repository = envelope.place()
    if intake.evidence is None or repository is None or not intake.active(envelope):
        return ()
    if intake.app_id is not None and number(payload, "check_suite", "app", "id") == intake.app_id:
        return ()  # Baton's own suite is its own check run, which must not feed the rail it reports on
    if hook.event == "push" and touches_settings(payload) and envelope.installation_id is not None:
        # a changed `.github/baton.yml` counts now
        intake.resolver.configs.forget(envelope.installation_id, repository.name)
    sightings = observe(hook.event, payload, repository, stamp(hook.received_at))
    intake.evidence.record(repository, sightings, hook.id, activity(envelope))
    return ()


def issue_state(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    """An issue closed or reopened on GitHub (by hand, or by a merged "Fixes #42"), as evidence: an event on
    the ticket's evidence history. What it does to the ticket is `baton.intake.offering.closed`'s and
    `reopened`'s (`baton.domain.issue`)."""
    payload = envelope.payload
    repository = envelope.place()
    issue = issue_number(payload, "issue", "number")
    if intake.evidence is None or repository is None or issue is None or not intake.active(envelope):
        return ()
    key = repository.key.ticket(issue)
    action = envelope.action
    data = {
        "actor": envelope.sender,
        "at": text(payload, "issue", "closed_at" if action == "closed" else "updated_at") or None,
        "state_reason": text(payload, "issue", "state_reason") or None,
    }
    intake.evidence.issue_changed(key, action, data, envelope.hook.id)
    return ()


def touches_settings(payload: dict[str, Any]) -> bool:
    """A push to the default branch that adds, changes or removes `.github/baton.yml`."""
    default = text(payload, "repository", "default_branch")
    if not default or text(payload, "ref") != f"refs/heads/{default}":
        return False
    commits = dig(payload, "commits", default=[])
    return any(
        isinstance(paths, list) and PATH in paths
        for commit in (commits if isinstance(commits, list) else [])
        if isinstance(commit, dict)
        for paths in (commit.get("added"), commit.get("modified"), commit.get("removed"))
    )
