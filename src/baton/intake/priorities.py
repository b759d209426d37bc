"""A repository's settings pushed anew: the priority its open issues' labels give (`priority_labels`) is read again
under them, from GitHub's list of the repository's open issues, so a map added or changed counts for the issues
labelled before it."""

from __future__ import annotations

from baton.service.work import Outcome

from .context import Intake
from .envelope import Envelope
from .evidence import evidence, touches_settings


def pushed(intake: Intake, envelope: Envelope) -> tuple[Outcome, ...]:
    """A push: evidence (`evidence`, which also forgets settings it changed), then, when it changed
    `.github/baton.yml` on the default branch, the labels' priorities under the settings now in force."""
    outcomes = evidence(intake, envelope)
    repository = envelope.place()
    if intake.issues is None or repository is None or not intake.active(envelope):
        return outcomes
    if not touches_settings(envelope.payload):
        return outcomes
    installation_id = repository.key.installation_id
    policy = intake.resolver.configs.load(installation_id, repository.name).policy
    labels = {}
    if policy.priority_labels:
        labels = {found.number: found.labels for found in intake.issues.open_issues(installation_id, repository.name)}
    intake.work.reprioritised(repository.key, labels, policy)
    return outcomes
