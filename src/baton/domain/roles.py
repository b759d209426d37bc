"""Who is who, as the transition guards ask it: maintainers, eligible runners and reviewers under a
repository's settings, and the words a refusal uses to say who may act and how to become one."""

from __future__ import annotations

from collections.abc import Iterable

from .model import WORKFLOW, Actor, Permission, Policy, Role, Ticket


def names(entries: Iterable[str]) -> str:
    """`@login`, `@org/team`, `role:NAME` and `workflow:PATH` entries, sorted, for a refusal."""
    listed = sorted(name.lstrip("@") for name in entries)
    return ", ".join(name if name.startswith(("role:", WORKFLOW)) else f"@{name}" for name in listed)


def is_maintainer(actor: Actor, policy: Policy) -> bool:
    """A repository maintainer: listed in `maintainers` when the repository sets it, else someone GitHub
    gives maintain or admin permission. A bot counts only when listed by name."""
    if policy.maintainers:
        return policy.lists(policy.maintainers, actor, by_name=actor.is_bot)
    return actor.permission.can_maintain and not actor.is_bot


def may_run(actor: Actor, policy: Policy) -> bool:
    """An eligible runner: listed in `runners` when set; else, by `runners:`, a collaborator of the repository
    (the default), anyone with read access or more (`readers`), or anyone at all (`anyone`). Triage or more
    is given to collaborators only, so it counts as one whatever the actor says.

    A GitHub Actions run (`actor.workflow`) runs where `runners` lists its workflow; where `runners` lists
    workflows but not its own, it may not, whoever its actor is. Where `runners` lists no workflow, the run is
    its actor, as any caller."""
    workflows = policy.workflows()
    if actor.workflow is not None and workflows:
        return actor.workflow.lower() in workflows
    if policy.runners:
        return policy.lists(policy.runners, actor)
    if policy.runner_access == "anyone":
        return True
    if policy.runner_access == "readers":
        return actor.permission is not Permission.NONE
    return actor.collaborator or actor.permission not in (Permission.NONE, Permission.READ)


def runners_are(repository: str, actor: Actor, policy: Policy) -> str:
    """Who may run a task, for a refusal: the setting in force, and how to change it or get in."""
    if actor.workflow is not None and policy.workflows():
        return (
            f"{repository} lists the workflows whose runs may run tasks in `runners:` of `.github/baton.yml` "
            f"({names(policy.runners)}), and workflow:{actor.workflow} is not one of them. Ask to have it added "
            "to that list"
        )
    if policy.runners:
        return (
            f"{repository} lists its runners in `runners:` of `.github/baton.yml` ({names(policy.runners)}). "
            "Ask to be added to that list"
        )
    if policy.runner_access == "readers":
        return (
            f"only people with read access may run tasks here (`runners: readers` in `.github/baton.yml`; "
            f"`runners: anyone` widens it), and @{actor.login} has none. Ask a maintainer for access"
        )
    return (
        f"only collaborators may run tasks here (`runners: collaborators` in `.github/baton.yml`, the default; "
        f"`runners: readers` or `runners: anyone` widens it), and @{actor.login} is not a collaborator on "
        f"{repository}. Ask a maintainer to add you as a collaborator"
    )


def review_role(ticket: Ticket, actor: Actor, policy: Policy) -> Role | None:
    """The role under which this actor may review, or None.

    The brief's named reviewer (a login, or a team whose active members review) and the configured
    reviewers review as `reviewer`. Without a configured list every maintainer is a reviewer; with one, a
    maintainer outside it still may, but the event says `repository_maintainer`, so an override never
    looks like an ordinary review. Bots review only when named.
    """
    named = ticket.brief.reviewer if ticket.brief is not None else None
    if named is not None and policy.lists(frozenset({named}), actor, by_name=actor.is_bot):
        return Role.REVIEWER
    if policy.reviewers:
        if policy.lists(policy.reviewers, actor, by_name=actor.is_bot):
            return Role.REVIEWER
        return Role.REPOSITORY_MAINTAINER if is_maintainer(actor, policy) else None
    return Role.REVIEWER if is_maintainer(actor, policy) else None


def has(actor: Actor) -> str:
    """What GitHub gives the actor on the repository, in words: `@maria has maintain`."""
    role = actor.role_name or actor.permission.value
    return f"@{actor.login} has {role}" + (
        f" (based on {actor.permission.value})" if actor.role_name and role != actor.permission.value else ""
    )


def maintainers_are(repository: str, actor: Actor, policy: Policy) -> tuple[str, str]:
    """Who a repository's maintainers are, and how to become one (or get one to act), for a refusal."""
    bot = " (bots count only when listed by name)" if actor.is_bot else ""
    if policy.maintainers:
        who = f"someone listed in `maintainers:` of `.github/baton.yml` ({names(policy.maintainers)}){bot}"
        return who, "Ask one of them, or ask to be added to that list"
    who = f"someone with the maintain or admin role on {repository} ({has(actor)}){bot}"
    return who, "Ask a maintainer, or ask an admin for the maintain role"
