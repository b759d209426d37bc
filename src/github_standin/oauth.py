"""GitHub's web-application flow for an App's OAuth client (signing people in), as the stand-in serves it.

- `GET /login/oauth/authorize?client_id=…&redirect_uri=…&state=…` (a web page): GitHub would ask whoever is
  signed in on its pages to authorise the App; the stand-in takes that as given for the person signed in
  there (`world.web_login`, which a test sets) and sends the browser to `redirect_uri` with a one-time `code`
  and the `state` it came with. `redirect_uri` must lie under one of the client's callback URLs (the
  manifest's `callback_urls`); without it the first is used. An unknown client is a 404 page.
- `POST /login/oauth/access_token` (client_id, client_secret, code, redirect_uri; form, JSON or query): the
  code, once and within ten minutes, for a user access token of that person (`GET /user` names them). As
  on GitHub, a refusal is a 200 whose body holds an `error`; the answer is JSON for `Accept:
  application/json`, a form otherwise. Refresh tokens are handed out but not taken back.
- `GET /user/installations` and `GET /user/installations/{installation_id}/repositories` (the REST API,
  with that token): the token's App's installations on which the person has an explicit role on some
  repository, and those repositories, a page at a time (`per_page`, `page`), each with the person's role.
"""

from __future__ import annotations

import hmac
import json
import re
import secrets
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from . import shapes
from .world import Installation, Repository, World

CODE_LIFETIME = timedelta(minutes=10)
TOKEN_LIFETIME = 8 * 3600  # seconds, as GitHub's expiring user access tokens last


def _under(uri: str, callback: str) -> bool:
    """GitHub's rule: the same scheme, host and port, and a path at or under the callback's."""
    given, allowed = urlsplit(uri), urlsplit(callback)
    same_place = (given.scheme, given.netloc) == (allowed.scheme, allowed.netloc)
    base = allowed.path.rstrip("/")
    return same_place and (given.path == allowed.path or given.path.startswith(f"{base}/"))


def authorize(world: World, request: Request) -> Response:
    """`GET /login/oauth/authorize`."""
    query = request.query_params
    with world.lock:
        client = world.clients.get(query.get("client_id", ""))
        if client is None:
            return PlainTextResponse("Not Found: no OAuth client with this client_id", status_code=404)
        redirect = query.get("redirect_uri") or (client.callback_urls[0] if client.callback_urls else "")
        if not redirect or not any(_under(redirect, callback) for callback in client.callback_urls):
            return PlainTextResponse("The redirect_uri MUST match the registered callback URL for this application.",
                                     status_code=400)  # fmt: skip
        code = secrets.token_hex(10)
        login = world.account(world.web_login).login
        world.oauth_codes[code] = (query["client_id"], login, redirect, world.now() + CODE_LIFETIME)
    back = {"code": code, **({"state": query["state"]} if "state" in query else {})}
    return RedirectResponse(f"{redirect}{'&' if '?' in redirect else '?'}{urlencode(back)}", status_code=302)


async def _fields(request: Request) -> dict[str, str]:
    fields = dict(request.query_params)
    body = (await request.body()).decode("utf-8", "replace")
    if "json" in request.headers.get("content-type", ""):
        try:
            parsed = json.loads(body or "{}")
        except json.JSONDecodeError:
            parsed = {}
        fields.update({str(k): str(v) for k, v in parsed.items()} if isinstance(parsed, dict) else {})
    else:
        fields.update(parse_qsl(body))
    return fields


def exchange(world: World, fields: dict[str, str]) -> dict[str, Any]:
    """The answer to a code's exchange: a token, or GitHub's `error`. Call with the world's lock held."""
    client = world.clients.get(fields.get("client_id", ""))
    if client is None or not hmac.compare_digest(fields.get("client_secret", "").encode(), client.secret.encode()):
        return {"error": "incorrect_client_credentials",
                "error_description": "The client_id and/or client_secret passed are incorrect."}  # fmt: skip
    found = world.oauth_codes.pop(fields.get("code", ""), None)
    if found is None or found[0] != fields["client_id"] or found[3] <= world.now():
        return {"error": "bad_verification_code", "error_description": "The code passed is incorrect or expired."}
    if fields.get("redirect_uri") and fields["redirect_uri"] != found[2]:
        return {
            "error": "redirect_uri_mismatch",
            "error_description": "The redirect_uri MUST match the registered callback URL for this application.",
        }
    token = f"ghu_{secrets.token_hex(18)}"
    world.user_tokens[token] = found[1].lower()
    world.token_apps[token] = client.app_id
    return {"access_token": token, "expires_in": TOKEN_LIFETIME, "refresh_token": f"ghr_{secrets.token_hex(30)}",
            "refresh_token_expires_in": 15897600, "token_type": "bearer", "scope": ""}  # fmt: skip


async def access_token(world: World, request: Request) -> Response:
    """`POST /login/oauth/access_token`."""
    fields = await _fields(request)
    with world.lock:
        answer = exchange(world, fields)
    if "application/json" in request.headers.get("accept", ""):
        return Response(json.dumps(answer), media_type="application/json")
    return Response(urlencode(answer), media_type="application/x-www-form-urlencoded")


# -- the REST side -----------------------------------------------------------------------------------


def _role(repository: Repository, login: str) -> str | None:
    """The person's explicit role on the repository (what GitHub lists repositories by), as a built-in role."""
    if login.lower() == repository.owner.login.lower():
        return "admin"
    role = repository.permissions.get(login.lower())
    base = repository.custom_roles.get(role, role) if role is not None else None
    return None if base in (None, "none") else base


def _reached(world: World, installation: Installation, login: str) -> list[tuple[Repository, str]]:
    reached = []
    for repository in sorted(world.repositories.values(), key=lambda r: r.id):
        role = _role(repository, login) if repository.installation_id == installation.id else None
        if role is not None:
            reached.append((repository, role))
    return reached


def _page(items: list[Any], query: dict[str, str]) -> list[Any]:
    per_page = max(1, min(100, int(query.get("per_page") or 30)))
    page = max(1, int(query.get("page") or 1))
    return items[(page - 1) * per_page : page * per_page]


def user_installations(
    world: World, base: str, web: str, headers: dict[str, str], path: str, query: dict[str, str]
) -> tuple[int, Any]:
    """`GET /user/installations` and `GET /user/installations/{id}/repositories`: (status, body, or GitHub's
    message for a refusal). Call with the world's lock held."""
    scheme, _, credential = headers.get("authorization", "").partition(" ")
    login = world.user_tokens.get(credential) if scheme.lower() in ("token", "bearer") else None
    if login is None:
        return 401, "Bad credentials"
    app_id = world.token_apps.get(credential)
    if app_id is None:
        return (
            403,
            "You must authenticate with an access token authorized to a GitHub App in order to list installations",
        )
    mine = [one for one in world.installations.values() if one.app_id == app_id and _reached(world, one, login)]
    if path == "/user/installations":
        shown = [shapes.installation_object(one.id, world.app_of(one.app_id), one.account, api_url=base, web_url=web)
                 for one in _page(mine, query)]  # fmt: skip
        return 200, {**shapes.user_installations(shown), "total_count": len(mine)}
    asked = re.fullmatch(r"/user/installations/([0-9]+)/repositories", path)
    installation = next((one for one in mine if asked is not None and one.id == int(asked.group(1))), None)
    if installation is None:
        return 404, "Not Found"
    reached = _reached(world, installation, login)
    return 200, shapes.user_installation_repositories(
        [(repository.shape(base), role) for repository, role in _page(reached, query)], len(reached)
    )
