"""GitHub's App-manifest flow, as the stand-in serves it.

The registration pages are on GitHub's web host, not its API: `POST /settings/apps/new?state=…` (for the
user signed in, `world.web_login`) and `POST /organizations/{org}/settings/apps/new`, with the manifest as
the form field `manifest` (JSON). GitHub would show the App it is about to make and wait for a click; the
stand-in takes the click as given: it makes the App at once (a fresh RSA key, a webhook secret, an OAuth
client that signs people in at the manifest's `callback_urls` (oauth.py), the manifest's events, permissions and
hook), and sends the browser to the manifest's
`redirect_url` with a one-time `code` and the `state` it was posted with.

`POST /app-manifests/{code}/conversions` (the REST API, no authentication) hands the App's credentials
out for that code: once, within the hour; 404 otherwise.
"""

from __future__ import annotations

import json
import secrets
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode, urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response

from . import shapes
from .world import RegisteredApp, World

CODE_LIFETIME = timedelta(hours=1)


def _refused(message: str) -> Response:
    """GitHub's registration page, saying what is wrong with the manifest (it makes nothing)."""
    return PlainTextResponse(f"Invalid GitHub App manifest: {message}", status_code=422)


def _address(value: Any) -> str | None:
    if not isinstance(value, str) or urlsplit(value).scheme not in ("http", "https") or not urlsplit(value).netloc:
        return None
    return value


def _key_pair() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private, public.decode()


def register(world: World, owner: str, kind: str, manifest: Any) -> tuple[str, str] | str:
    """The App `manifest` describes, made for `owner`: (its one-time code, where to send the browser), or
    what is wrong with the manifest. Call with the world's lock held."""
    if not isinstance(manifest, dict):
        return "the manifest is not a JSON object"
    url, redirect = _address(manifest.get("url")), _address(manifest.get("redirect_url"))
    hook = manifest.get("hook_attributes") or {}
    hook_url = _address(hook.get("url")) if isinstance(hook, dict) else None
    name = manifest.get("name")
    if url is None:
        return "url must be an http(s) address"
    if redirect is None:
        return "redirect_url must be an http(s) address"
    if isinstance(hook, dict) and hook.get("url") is not None and hook_url is None:
        return "hook_attributes.url must be an http(s) address"
    if not isinstance(name, str) or not name.strip():
        return "name is required"
    events, permissions = manifest.get("default_events", []), manifest.get("default_permissions", {})
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        return "default_events must be a list of event names"
    if not isinstance(permissions, dict) or not all(v in ("read", "write") for v in permissions.values()):
        return "default_permissions must map permissions to read or write"
    app_id = world.next_id()
    slug = name.strip().lower().replace(" ", "-")
    if any(app.slug == slug for app in world.apps.values()) or slug == world.app_slug:
        slug = f"{slug}-{app_id}"  # GitHub asks for another name; the stand-in finds one
    app = shapes.App(app_id, slug, name.strip(), world.account(owner, kind),
                     permissions={"metadata": "read", **permissions}, events=tuple(events))  # fmt: skip
    private, public = _key_pair()
    description = manifest.get("description")
    callbacks = manifest.get("callback_urls", [])
    if not isinstance(callbacks, list) or not all(_address(one) for one in callbacks):
        return "callback_urls must be a list of http(s) addresses"
    world.apps[app_id] = app
    client_id, client_secret = world.add_client(app_id, callbacks)
    world.registered[app_id] = RegisteredApp(
        app, public, secrets.token_hex(20), client_id, client_secret, hook_url, url,
        description if isinstance(description, str) else None, world.now(),
    )  # fmt: skip
    code = secrets.token_hex(10)
    world.manifest_codes[code] = (app_id, private, world.now() + CODE_LIFETIME)
    return code, redirect


async def registration_page(world: World, request: Request) -> Response:
    """`POST /settings/apps/new` and `POST /organizations/{org}/settings/apps/new`."""
    form = await request.form()
    raw = form.get("manifest")
    try:
        manifest = json.loads(raw) if isinstance(raw, str) else None
    except json.JSONDecodeError:
        return _refused("the manifest is not JSON")
    org = request.path_params.get("org")
    with world.lock:
        made = register(world, org or world.web_login, "Organization" if org else "User", manifest)
    if isinstance(made, str):
        return _refused(made)
    code, redirect = made
    query = {"code": code, **({"state": request.query_params["state"]} if "state" in request.query_params else {})}
    return RedirectResponse(f"{redirect}{'&' if '?' in redirect else '?'}{urlencode(query)}", status_code=302)


def conversion(world: World, code: str, api_url: str, web_url: str) -> tuple[int, Any]:
    """`POST /app-manifests/{code}/conversions`: the App and its credentials, for a code not used and not
    expired. Call with the world's lock held."""
    found = world.manifest_codes.pop(code, None)
    if found is None or found[2] <= world.now():
        return 404, None
    app_id, private, _ = found
    registered = world.registered[app_id]
    credentials = {"client_id": registered.client_id, "client_secret": registered.client_secret,
                   "webhook_secret": registered.webhook_secret, "pem": private}  # fmt: skip
    return 201, shapes.app_from_manifest(
        registered.app, description=registered.description, external_url=registered.url,
        created_at=shapes.timestamp(registered.created_at), credentials=credentials, api_url=api_url, web_url=web_url,
    )  # fmt: skip
