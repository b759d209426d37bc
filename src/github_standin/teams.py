"""The stand-in GitHub's organisation teams: `GET /orgs/{org}/teams/{team_slug}/memberships/{username}`."""

from __future__ import annotations

from typing import Any

from . import shapes
from .world import World


def team_membership(
    world: World, base: str, headers: dict[str, str], org: str, team_slug: str, username: str
) -> tuple[int, Any]:
    """200 with the membership (`active`, or `pending` for an invitation) for a member; 404 for anyone else
    or an unknown team; 403 when the installation lacks the `members` permission. Errors are (status,
    message). Call with `world.lock` held."""
    scheme, _, credential = headers.get("authorization", "").partition(" ")
    token = world.tokens.get(credential) if scheme.lower() in ("token", "bearer") else None
    if token is None or token.expires_at <= world.now():
        return 401, "Bad credentials"
    installation = world.installations[token.installation_id]
    if installation.account.login.lower() != org.lower():
        return 404, "Not Found"
    if "members" not in installation.permissions:
        return 403, "Resource not accessible by integration"
    found = world.teams.get((org.lower(), team_slug.lower()), {}).get(username.lower())
    if found is None:
        return 404, "Not Found"
    url = f"{base}/organizations/{installation.account.id}/team/{team_slug}/memberships/{username}"
    return 200, shapes.team_membership(url, found.role, found.state)
