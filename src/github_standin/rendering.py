"""The world's objects as GitHub shows them, for the REST answers (server.py) and the webhooks that carry the
same objects (people.py): an issue, a pull request, a check run."""

from __future__ import annotations

from typing import Any

from . import shapes
from .world import CheckRun, Issue, Repository, World

Json = Any


def render_issue(world: World, repository: Repository, repo: shapes.Repo, issue: Issue) -> Json:
    """An issue (or a pull request seen as an issue) as GET .../issues/{number} shows it."""
    labels = []
    for name in issue.labels:
        label = repository.label(name)
        if label is not None:
            labels.append(
                shapes.label(repo, label.name, label.color, label.description, label.id, default=label.default)
            )
    pull = repository.pulls.get(issue.number)
    comments = sum(1 for c in repository.comments.values() if c.issue == issue.number)
    return shapes.issue(
        repo, issue.number, issue.id, issue.title, issue.user, body=issue.body, state=issue.state,
        state_reason=issue.state_reason, labels=labels, assignees=[world.account(login) for login in issue.assignees],
        comments=comments, created_at=shapes.timestamp(issue.created_at),
        updated_at=shapes.timestamp(issue.updated_at),
        closed_at=shapes.timestamp(issue.closed_at) if issue.closed_at else None, pull_request=issue.pull_request,
        merged_at=shapes.timestamp(pull.merged_at) if pull is not None and pull.merged_at else None,
        app=world.app_of(issue.app_id) if issue.app_id is not None else None,
    )  # fmt: skip


def render_pull_request(world: World, repository: Repository, repo: shapes.Repo, number: int) -> Json:
    """A pull request as GET .../pulls/{number} shows it (also the base of its webhook payloads)."""
    pull, issue = repository.pulls[number], repository.issues[number]
    base_sha = repository.commits(pull.base)[-1]
    return shapes.pull_request(
        repo, number, pull.id, issue.title, issue.user, pull.head, pull.head_sha, base_sha, base_ref=pull.base,
        body=issue.body, state=issue.state, draft=pull.draft, merged=pull.merged,
        merged_by=world.account(pull.merged_by) if pull.merged_by else None,
        merged_at=shapes.timestamp(pull.merged_at) if pull.merged_at else None,
        closed_at=shapes.timestamp(issue.closed_at) if issue.closed_at else None,
        created_at=shapes.timestamp(issue.created_at), updated_at=shapes.timestamp(issue.updated_at),
        commits=max(1, len(repository.commits(pull.head)) - len(repository.commits(pull.base))),
    )  # fmt: skip


def pulls_at(repository: Repository, repo: shapes.Repo, sha: str) -> list[Json]:
    """The open pull requests whose head is commit `sha`, as a check run or check suite lists them."""
    return [
        shapes.pull_request_minimal(repo, number, pull.id, pull.head, pull.head_sha, pull.base,
                                    repository.commits(pull.base)[-1])
        for number, pull in sorted(repository.pulls.items())
        if pull.head_sha == sha and repository.issues[number].state == "open"
    ]  # fmt: skip


def render_check_run(world: World, repository: Repository, repo: shapes.Repo, run: CheckRun) -> Json:
    """A check run (Baton's or another App's) as the checks API shows it (also the base of its webhooks)."""
    return shapes.check_run(
        repo, run.id, run.name, run.head_sha, world.app_of(run.app_id), status=run.status, conclusion=run.conclusion,
        external_id=run.external_id, details_url=run.details_url, started_at=shapes.timestamp(run.started_at),
        completed_at=shapes.timestamp(run.completed_at) if run.completed_at else None, title=run.title,
        summary=run.summary, check_suite_id=run.suite_id, pull_requests=pulls_at(repository, repo, run.head_sha),
    )  # fmt: skip
