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
        **_links(world, repo, issue),
    )  # fmt: skip


def _links(world: World, repo: shapes.Repo, issue: Issue) -> dict[str, Any]:
    """The summaries of an issue's dependencies and sub-issues, and its parent's URL, as `shapes.issue` takes
    them (nothing when the world links no issues, as most worlds do not)."""
    if not world.blocked_by and not world.sub_issues:
        return {}
    blockers, blocked = world.blockers(issue), world.blocked(issue)
    children, parent = world.children(issue), world.parent(issue)
    open_ones = [sum(1 for _, one in linked if one.state == "open") for linked in (blockers, blocked)]
    return {
        "dependencies": (*open_ones, len(blockers), len(blocked)),
        "sub_issues": (len(children), sum(1 for _, one in children if one.state == "closed")),
        "parent_issue_url": None
        if parent is None
        else f"{parent[0].shape(repo.api_url).api}/issues/{parent[1].number}",
    }


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


def _repository(repository: Repository, repo: shapes.Repo) -> Json:
    return shapes.repository(repo, open_issues=sum(1 for one in repository.issues.values() if one.state == "open"))


def link_events(
    world: World,
    api_url: str,
    event: str,
    done: str,
    first: tuple[Repository, Issue],
    second: tuple[Repository, Issue],
    sender: shapes.Account,
) -> list[tuple[str, Json]]:
    """The two webhooks GitHub sends when two issues were linked (`done="added"`) or unlinked (`"removed"`):
    for `event="issue_dependencies"`, `first` is blocked by `second`; for `"sub_issues"`, `second` is a sub-issue
    of `first`. One goes to `first`'s repository, then one to `second`'s, each with its installation."""
    (one, issue_one), (two, issue_two) = first, second
    repo_one, repo_two = one.shape(api_url), two.shape(api_url)
    json_one = render_issue(world, one, repo_one, issue_one)
    json_two = render_issue(world, two, repo_two, issue_two)
    build = shapes.issue_dependencies_event if event == "issue_dependencies" else shapes.sub_issues_event
    actions = ("blocked_by", "blocking") if event == "issue_dependencies" else ("sub_issue", "parent_issue")
    return [
        (event, build(f"{actions[0]}_{done}", repo_one, json_one, json_two, _repository(two, repo_two), sender,
                      installation_id=one.installation_id)),
        (event, build(f"{actions[1]}_{done}", repo_two, json_one, json_two, _repository(one, repo_one), sender,
                      installation_id=two.installation_id)),
    ]  # fmt: skip
