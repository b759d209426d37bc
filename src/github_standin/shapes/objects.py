"""GitHub's REST objects, complete, built from plain facts: what the stand-in GitHub answers.

Pure functions, no state. Each builder returns what GitHub answers for API version 2026-03-10 (the version
githubkit asks for), with every field GitHub's description and githubkit's model require;
`tests/system/test_standin_contract.py` holds them to that through `github_standin.contract`.

REST URLs start at `Repo.api_url` (the stand-in's `http://127.0.0.1:PORT`), page URLs at `Repo.web_url`
(`https://github.com`). Timestamps are strings in GitHub's form, `2026-01-01T00:00:00Z`: `timestamp()`
makes one from a datetime.
"""

from __future__ import annotations

import base64
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

API_URL = "https://api.github.com"
WEB_URL = "https://github.com"
EPOCH = "2026-01-01T00:00:00Z"
REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")

Json = dict[str, Any]


def timestamp(moment: datetime) -> str:
    """GitHub's timestamp form, in UTC: githubkit parses an installation token's expiry in exactly this form."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Account:
    """A user, bot or organization, as far as the objects that mention it need."""

    login: str
    id: int
    type: str = "User"  # "User", "Bot" or "Organization"


@dataclass(frozen=True)
class Repo:
    """A repository and where its GitHub answers: the context of nearly every object."""

    owner: Account
    name: str
    id: int
    api_url: str = API_URL
    web_url: str = WEB_URL
    default_branch: str = "main"
    private: bool = False
    description: str | None = None
    created_at: str = EPOCH

    @property
    def full_name(self) -> str:
        return f"{self.owner.login}/{self.name}"

    @property
    def api(self) -> str:
        return f"{self.api_url.rstrip('/')}/repos/{self.full_name}"

    @property
    def html(self) -> str:
        return f"{self.web_url.rstrip('/')}/{self.full_name}"


@dataclass(frozen=True)
class App:
    """A GitHub App (Baton itself, or the one that owns a check run)."""

    id: int
    slug: str
    name: str
    owner: Account
    permissions: Mapping[str, str] = field(
        default_factory=lambda: {"checks": "write", "contents": "read", "issues": "write", "metadata": "read"}
    )
    events: Sequence[str] = ("issue_comment", "issues", "pull_request")


# -- small parts --------------------------------------------------------------------------------------


def _node_id(kind: str, id: int | str) -> str:
    # GitHub's older global ids: base64 of "<length of kind, two digits>:<kind><id>", e.g. MDQ6VXNlcjE=.
    return base64.b64encode(f"{len(kind):02d}:{kind}{id}".encode()).decode()


def _quoted(text: str) -> str:
    return urllib.parse.quote(text, safe="")


def _rollup(url: str, counts: Mapping[str, int] | None) -> Json:
    counts = counts or {}
    rollup: Json = {"url": url, "total_count": sum(counts.get(content, 0) for content in REACTIONS)}
    rollup.update({content: counts.get(content, 0) for content in REACTIONS})
    return rollup


def user(login: str, id: int, *, type: str = "User", api_url: str = API_URL, web_url: str = WEB_URL) -> Json:
    """A user as GitHub embeds it everywhere (`simple-user`)."""
    api = f"{api_url.rstrip('/')}/users/{_quoted(login)}"
    # A bot's page is its App's: baton[bot] -> /apps/baton.
    page = f"apps/{login.removesuffix('[bot]')}" if type == "Bot" else login
    return {
        "login": login,
        "id": id,
        "node_id": _node_id(type, id),
        "avatar_url": f"https://avatars.githubusercontent.com/u/{id}?v=4",
        "gravatar_id": "",
        "url": api,
        "html_url": f"{web_url.rstrip('/')}/{page}",
        "followers_url": f"{api}/followers",
        "following_url": f"{api}/following{{/other_user}}",
        "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api}/subscriptions",
        "organizations_url": f"{api}/orgs",
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events{{/privacy}}",
        "received_events_url": f"{api}/received_events",
        "type": type,
        "site_admin": False,
    }


def authenticated_user(login: str, id: int, *, type: str = "User", api_url: str = API_URL) -> Json:
    """The user a personal or OAuth token belongs to, as `GET /user` shows it to someone else (`public-user`)."""
    return {
        **user(login, id, type=type, api_url=api_url),
        "user_view_type": "public",
        "name": None, "company": None, "blog": "", "location": None, "email": None, "hireable": None,
        "bio": None, "public_repos": 0, "public_gists": 0, "followers": 0, "following": 0,
        "created_at": EPOCH, "updated_at": EPOCH,
    }  # fmt: skip


def state_change_event(
    repo: Repo,
    number: int,
    id: int,
    event: str,
    actor: Account,
    created_at: str,
    commit: str | None,
    state_reason: str | None,
) -> Json:
    """A `closed` or `reopened` entry of an issue's timeline (`state-change-issue-event`)."""
    return {
        "id": number * 1000 + id,
        "node_id": _node_id("StateChangeIssueEvent", number * 1000 + id),
        "url": f"{repo.api_url.rstrip('/')}/repos/{repo.full_name}/issues/events/{number * 1000 + id}",
        "actor": _user(actor, repo),
        "event": event,
        "commit_id": commit,
        "commit_url": f"{repo.api_url.rstrip('/')}/repos/{repo.full_name}/commits/{commit}" if commit else None,
        "created_at": created_at,
        "performed_via_github_app": None,
        "state_reason": state_reason,
    }


def cross_referenced_event(repo: Repo, actor: Account, created_at: str, source: Json) -> Json:
    """A `cross-referenced` entry of an issue's timeline (`timeline-cross-referenced-event`): `source`, an issue
    or a pull request as the issues API shows it, mentioned this one."""
    return {
        "event": "cross-referenced",
        "actor": _user(actor, repo),
        "created_at": created_at,
        "updated_at": created_at,
        "source": {"type": "issue", "issue": source},
    }


def _user(account: Account, repo: Repo) -> Json:
    return user(account.login, account.id, type=account.type, api_url=repo.api_url, web_url=repo.web_url)


def _app(app: App, repo: Repo) -> Json:
    return app_object(app, api_url=repo.api_url, web_url=repo.web_url)


def app_object(app: App, *, api_url: str = API_URL, web_url: str = WEB_URL) -> Json:
    """An App as GitHub shows it (`integration`): embedded in what it wrote, and `GET /app` for itself."""
    owner = app.owner
    return {
        "id": app.id,
        "slug": app.slug,
        "node_id": _node_id("Integration", app.id),
        "owner": user(owner.login, owner.id, type=owner.type, api_url=api_url, web_url=web_url),
        "name": app.name,
        "description": None,
        "external_url": f"{web_url.rstrip('/')}/apps/{app.slug}",
        "html_url": f"{web_url.rstrip('/')}/apps/{app.slug}",
        "created_at": EPOCH,
        "updated_at": EPOCH,
        "permissions": dict(app.permissions),
        "events": list(app.events),
    }


def app_from_manifest(
    app: App, *, description: str | None, external_url: str, created_at: str, credentials: Mapping[str, str],
    api_url: str = API_URL, web_url: str = WEB_URL,
) -> Json:  # fmt: skip
    """An App just made from a manifest, with its `client_id`, `client_secret`, `webhook_secret` and `pem`, as
    the code's conversion answers it (once)."""
    owner = app.owner
    return {
        "id": app.id,
        "slug": app.slug,
        "node_id": _node_id("Integration", app.id),
        "client_id": credentials["client_id"],
        "owner": user(owner.login, owner.id, type=owner.type, api_url=api_url, web_url=web_url),
        "name": app.name,
        "description": description,
        "external_url": external_url,
        "html_url": f"{web_url.rstrip('/')}/apps/{app.slug}",
        "created_at": created_at,
        "updated_at": created_at,
        "permissions": dict(app.permissions),
        "events": list(app.events),
        **{key: credentials[key] for key in ("client_secret", "webhook_secret", "pem")},
    }


def _repository_core(repo: Repo) -> Json:
    """The fields every representation of a repository has: REST's and the webhooks'."""
    api, html = repo.api, repo.html
    return {
        "id": repo.id,
        "node_id": _node_id("Repository", repo.id),
        "name": repo.name,
        "full_name": repo.full_name,
        "private": repo.private,
        "owner": _user(repo.owner, repo),
        "html_url": html,
        "description": repo.description,
        "fork": False,
        "url": api,
        "forks_url": f"{api}/forks",
        "keys_url": f"{api}/keys{{/key_id}}",
        "collaborators_url": f"{api}/collaborators{{/collaborator}}",
        "teams_url": f"{api}/teams",
        "hooks_url": f"{api}/hooks",
        "issue_events_url": f"{api}/issues/events{{/number}}",
        "events_url": f"{api}/events",
        "assignees_url": f"{api}/assignees{{/user}}",
        "branches_url": f"{api}/branches{{/branch}}",
        "tags_url": f"{api}/tags",
        "blobs_url": f"{api}/git/blobs{{/sha}}",
        "git_tags_url": f"{api}/git/tags{{/sha}}",
        "git_refs_url": f"{api}/git/refs{{/sha}}",
        "trees_url": f"{api}/git/trees{{/sha}}",
        "statuses_url": f"{api}/statuses/{{sha}}",
        "languages_url": f"{api}/languages",
        "stargazers_url": f"{api}/stargazers",
        "contributors_url": f"{api}/contributors",
        "subscribers_url": f"{api}/subscribers",
        "subscription_url": f"{api}/subscription",
        "commits_url": f"{api}/commits{{/sha}}",
        "git_commits_url": f"{api}/git/commits{{/sha}}",
        "comments_url": f"{api}/comments{{/number}}",
        "issue_comment_url": f"{api}/issues/comments{{/number}}",
        "contents_url": f"{api}/contents/{{+path}}",
        "compare_url": f"{api}/compare/{{base}}...{{head}}",
        "merges_url": f"{api}/merges",
        "archive_url": f"{api}/{{archive_format}}{{/ref}}",
        "downloads_url": f"{api}/downloads",
        "issues_url": f"{api}/issues{{/number}}",
        "pulls_url": f"{api}/pulls{{/number}}",
        "milestones_url": f"{api}/milestones{{/number}}",
        "notifications_url": f"{api}/notifications{{?since,all,participating}}",
        "labels_url": f"{api}/labels{{/name}}",
        "releases_url": f"{api}/releases{{/id}}",
        "deployments_url": f"{api}/deployments",
        "created_at": repo.created_at,
        "updated_at": repo.created_at,
        "pushed_at": repo.created_at,
        "git_url": f"git://{urllib.parse.urlsplit(html).netloc}/{repo.full_name}.git",
        "ssh_url": f"git@{urllib.parse.urlsplit(html).hostname}:{repo.full_name}.git",
        "clone_url": f"{html}.git",
        "svn_url": html,
        "homepage": None,
        "size": 0,
        "stargazers_count": 0,
        "watchers_count": 0,
        "language": None,
        "has_issues": True,
        "has_projects": False,
        "has_wiki": False,
        "has_pages": False,
        "has_discussions": False,
        "forks_count": 0,
        "mirror_url": None,
        "archived": False,
        "disabled": False,
        "open_issues_count": 0,
        "license": None,
        "allow_forking": True,
        "is_template": False,
        "web_commit_signoff_required": False,
        "topics": [],
        "visibility": "private" if repo.private else "public",
        "forks": 0,
        "open_issues": 0,
        "watchers": 0,
        "default_branch": repo.default_branch,
    }


def _rest_repository(repo: Repo) -> Json:
    return {**_repository_core(repo), "permissions": {"admin": False, "push": False, "pull": True}}


def _hook_repository(repo: Repo) -> Json:
    return {**_repository_core(repo), "has_downloads": True, "custom_properties": {}}


# -- REST objects -------------------------------------------------------------------------------------


def repository(repo: Repo, *, open_issues: int = 0) -> Json:
    """GET /repos/{owner}/{repo} (`full-repository`)."""
    core = _repository_core(repo)
    core.update(open_issues_count=open_issues, open_issues=open_issues)
    return {
        **core,
        "permissions": {"admin": False, "maintain": False, "push": False, "triage": False, "pull": True},
        "allow_rebase_merge": True,
        "allow_squash_merge": True,
        "allow_merge_commit": True,
        "allow_auto_merge": False,
        "allow_update_branch": False,
        "delete_branch_on_merge": False,
        "temp_clone_token": None,
        "subscribers_count": 0,
        "network_count": 0,
    }


def label(repo: Repo, name: str, color: str, description: str | None, id: int, *, default: bool = False) -> Json:
    """A repository's label (`label`); `color` is six hex digits without `#`."""
    return {
        "id": id,
        "node_id": _node_id("Label", id),
        "url": f"{repo.api}/labels/{_quoted(name)}",
        "name": name,
        "color": color,
        "default": default,
        "description": description,
        # githubkit's Label requires these two, which GitHub's description does not list.
        "archived_at": None,
        "archived_by": None,
    }


def issue(
    repo: Repo,
    number: int,
    id: int,
    title: str,
    author: Account,
    *,
    body: str | None = None,
    state: str = "open",
    state_reason: str | None = None,
    labels: Sequence[Mapping[str, Any]] = (),
    assignees: Sequence[Account] = (),
    comments: int = 0,
    locked: bool = False,
    created_at: str = EPOCH,
    updated_at: str | None = None,
    closed_at: str | None = None,
    pull_request: bool = False,
    merged_at: str | None = None,
    author_association: str = "NONE",
    reactions: Mapping[str, int] | None = None,
    app: App | None = None,
    dependencies: tuple[int, int, int, int] = (0, 0, 0, 0),
    sub_issues: tuple[int, int] = (0, 0),
    parent_issue_url: str | None = None,
) -> Json:
    """An issue (`issue`), or a pull request seen as an issue when `pull_request` (GitHub's issues API).

    `labels` are objects from `label()`; `app` the App that opened it, if one did. `dependencies`: how many
    open issues block it, how many open issues it blocks, and both in all; `sub_issues`: how many it has, and
    how many of them are closed; `parent_issue_url`: its parent's REST URL, for a sub-issue.
    """
    api = f"{repo.api}/issues/{number}"
    result: Json = {
        "id": id,
        "node_id": _node_id("Issue", id),
        "url": api,
        "repository_url": repo.api,
        "labels_url": f"{api}/labels{{/name}}",
        "comments_url": f"{api}/comments",
        "events_url": f"{api}/events",
        "html_url": f"{repo.html}/{'pull' if pull_request else 'issues'}/{number}",
        "number": number,
        "state": state,
        "state_reason": state_reason,
        "title": title,
        "body": body,
        "user": _user(author, repo),
        "labels": [dict(one) for one in labels],
        "assignees": [_user(one, repo) for one in assignees],
        "milestone": None,
        "locked": locked,
        "active_lock_reason": None,
        "comments": comments,
        "closed_at": closed_at,
        "created_at": created_at,
        "updated_at": updated_at or closed_at or created_at,
        "author_association": author_association,
        "timeline_url": f"{api}/timeline",
        "performed_via_github_app": _app(app, repo) if app is not None else None,
        "reactions": _rollup(f"{api}/reactions", reactions),
        "issue_dependencies_summary": dict(zip(("blocked_by", "blocking", "total_blocked_by", "total_blocking"),
                                               dependencies, strict=True)),
        "sub_issues_summary": {"total": sub_issues[0], "completed": sub_issues[1],
                               "percent_completed": sub_issues[1] * 100 // sub_issues[0] if sub_issues[0] else 0},
        "parent_issue_url": parent_issue_url,
    }  # fmt: skip
    if pull_request:
        pulls = f"{repo.api}/pulls/{number}"
        result["pull_request"] = {
            "url": pulls,
            "html_url": f"{repo.html}/pull/{number}",
            "diff_url": f"{repo.html}/pull/{number}.diff",
            "patch_url": f"{repo.html}/pull/{number}.patch",
        }
        if merged_at is not None:
            # Since API 2026-03-10 the field is never null: it is there once the pull request is merged.
            result["pull_request"]["merged_at"] = merged_at
    return result


def issue_comment(
    repo: Repo,
    issue_number: int,
    id: int,
    body: str,
    author: Account,
    *,
    created_at: str = EPOCH,
    updated_at: str | None = None,
    on_pull_request: bool = False,
    author_association: str = "NONE",
    app: App | None = None,
    reactions: Mapping[str, int] | None = None,
) -> Json:
    """A comment on an issue or pull request (`issue-comment`); `app` when an App wrote it."""
    api = f"{repo.api}/issues/comments/{id}"
    return {
        "id": id,
        "node_id": _node_id("IssueComment", id),
        "url": api,
        "html_url": f"{repo.html}/{'pull' if on_pull_request else 'issues'}/{issue_number}#issuecomment-{id}",
        "issue_url": f"{repo.api}/issues/{issue_number}",
        "body": body,
        "user": _user(author, repo),
        "created_at": created_at,
        "updated_at": updated_at or created_at,
        "author_association": author_association,
        "performed_via_github_app": _app(app, repo) if app is not None else None,
        "reactions": _rollup(f"{api}/reactions", reactions),
    }


def reaction(repo: Repo, id: int, content: str, author: Account, *, created_at: str = EPOCH) -> Json:
    """A reaction (`reaction`); `content` is one of REACTIONS."""
    return {
        "id": id,
        "node_id": _node_id("Reaction", id),
        "user": _user(author, repo),
        "content": content,
        "created_at": created_at,
    }


def installation_token(
    token: str,
    expires_at: datetime,
    *,
    permissions: Mapping[str, str] | None = None,
    repository_selection: str = "all",
) -> Json:
    """POST /app/installations/{id}/access_tokens (`installation-token`)."""
    return {
        "token": token,
        "expires_at": timestamp(expires_at),
        "permissions": dict(
            permissions or {"checks": "write", "contents": "read", "issues": "write", "metadata": "read"}
        ),
        "repository_selection": repository_selection,
    }


def installation_object(
    installation_id: int,
    app: App,
    account: Account,
    *,
    repository_selection: str = "selected",
    created_at: str = EPOCH,
    api_url: str = API_URL,
    web_url: str = WEB_URL,
    suspended: tuple[Account, str] | None = None,
) -> Json:
    """An App's installation on `account` (`installation`), as `GET /user/installations`, `GET
    /app/installations`, `GET /repos/{owner}/{repo}/installation` and the `installation` webhook show it;
    `suspended`: who suspended it, and when."""
    api_url, web_url = api_url.rstrip("/"), web_url.rstrip("/")
    by = user(suspended[0].login, suspended[0].id, type=suspended[0].type, api_url=api_url, web_url=web_url) if (
        suspended) else None  # fmt: skip
    return {
        "id": installation_id,
        "account": user(account.login, account.id, type=account.type, api_url=api_url, web_url=web_url),
        "repository_selection": repository_selection,
        "access_tokens_url": f"{api_url}/app/installations/{installation_id}/access_tokens",
        "repositories_url": f"{api_url}/installation/repositories",
        "html_url": f"{web_url}/settings/installations/{installation_id}",
        "app_id": app.id,
        "app_slug": app.slug,
        "target_id": account.id,
        "target_type": "Organization" if account.type == "Organization" else "User",
        "permissions": dict(app.permissions),
        "events": list(app.events),
        "created_at": created_at,
        "updated_at": created_at,
        "single_file_name": None,
        "suspended_by": by,
        "suspended_at": suspended[1] if suspended else None,
    }


def user_installations(installations: Sequence[Json]) -> Json:
    """GET /user/installations: the App's installations the user can reach."""
    return {"total_count": len(installations), "installations": list(installations)}


def user_installation_repositories(repos: Sequence[tuple[Repo, str]], total: int) -> Json:
    """GET /user/installations/{installation_id}/repositories: one page of (repository, the user's role)."""
    rank = ("read", "triage", "write", "maintain", "admin")
    listed = []
    for repo, role in repos:
        level = rank.index(role) if role in rank else 0
        permissions = {"admin": level >= 4, "maintain": level >= 3, "push": level >= 2, "triage": level >= 1,
                       "pull": True}  # fmt: skip
        listed.append({**_repository_core(repo), "permissions": permissions})
    return {"total_count": total, "repository_selection": "selected", "repositories": listed}


def installation_repositories(repos: Sequence[Repo], total: int) -> Json:
    """GET /installation/repositories: one page of the repositories an installation token reaches."""
    return {"total_count": total, "repository_selection": "selected",
            "repositories": [_repository_core(repo) for repo in repos]}  # fmt: skip


def team_membership(url: str, role: str = "member", state: str = "active") -> Json:
    """GET /orgs/{org}/teams/{team_slug}/memberships/{username} (`team-membership`)."""
    return {"url": url, "role": role, "state": state}


def collaborator_permission(
    repo: Repo, account: Account, permission: str, role_name: str, *, base: str | None = None
) -> Json:
    """GET .../collaborators/{username}/permission (`repository-collaborator-permission`).

    `permission` is GitHub's coarse level (`admin`, `write`, `read`, `none`); `role_name` the role
    (`admin`, `maintain`, `write`, `triage`, `read`, or a custom role's name, whose built-in `base` the
    user's permission flags show).
    """
    ranks = ("read", "triage", "write", "maintain", "admin")
    level = base or role_name
    rank = ranks.index(level) if level in ranks else -1
    return {
        "permission": permission,
        "role_name": role_name,
        "user": {
            **_user(account, repo),
            "permissions": {
                "pull": rank >= 0,
                "triage": rank >= 1,
                "push": rank >= 2,
                "maintain": rank >= 3,
                "admin": rank >= 4,
            },
            "role_name": role_name,
        },
    }


def collaborator(repo: Repo, account: Account, role_name: str, *, base: str | None = None) -> Json:
    """An item of GET .../collaborators (`collaborator`): the user, the flags of their role's base level and the
    role's name (built-in, or a custom role's, whose built-in `base` the flags show)."""
    listed: Json = collaborator_permission(repo, account, "", role_name, base=base)["user"]  # as that API shows them
    return listed


def content_file(repo: Repo, path: str, text: str, sha: str, *, ref: str | None = None) -> Json:
    """GET .../contents/{path} for a file (`content-file`): `text` base64-encoded, in 60-character lines."""
    encoded = base64.b64encode(text.encode()).decode()
    # GitHub breaks the base64 into lines; readers that cannot decode that should fail here, not there.
    content = "".join(encoded[i : i + 60] + "\n" for i in range(0, len(encoded), 60))
    branch = ref or repo.default_branch
    api = f"{repo.api}/contents/{urllib.parse.quote(path)}?ref={_quoted(branch)}"
    html = f"{repo.html}/blob/{branch}/{urllib.parse.quote(path)}"
    git = f"{repo.api}/git/blobs/{sha}"
    return {
        "type": "file",
        "encoding": "base64",
        "size": len(text.encode()),
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "content": content,
        "sha": sha,
        "url": api,
        "git_url": git,
        "html_url": html,
        "download_url": f"https://raw.githubusercontent.com/{repo.full_name}/{branch}/{urllib.parse.quote(path)}",
        "_links": {"self": api, "git": git, "html": html},
    }
