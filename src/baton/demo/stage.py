"""Baton and the stand-in GitHub, each a real HTTP server on 127.0.0.1, wired to each other.

`with Stage.open(database_url) as stage:` gives a running pair: the stand-in knows the App's public key
and sends its webhooks to Baton; Baton holds the private key and calls the stand-in as its GitHub. An
organisation `octo` has installed the App on its repository `octo/shop` (and on the private repositories
`hidden` names). With `oauth`, the App has an OAuth client whose callback is Baton's, so people sign in to the
board with GitHub (whoever `hub.world.web_login` names is signed in at the stand-in). For `baton demo` and the
end-to-end tests.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pydantic import SecretStr

from baton.environment.clock import SYSTEM, Clock
from baton.environment.settings import Settings
from baton.web import create_app
from baton.web.wire import protocol
from github_standin import shapes
from github_standin.actions import ISSUER_PATH
from github_standin.people import Hub, Person
from github_standin.serving import Served
from github_standin.world import Repository, World

APP_ID = 4242
OWNER, NAME = "octo", "shop"


def key_pair() -> tuple[str, str]:
    """A fresh App key: (private PEM for Baton, public PEM for the stand-in)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


@dataclass
class Stage:
    hub: Hub
    repository: Repository
    settings: Settings
    baton_url: str
    github_url: str
    app: Any  # Baton's FastAPI application

    @property
    def full_name(self) -> str:
        return self.repository.full_name

    def other(self, name: str) -> Repository:
        """Another repository of `octo` the App is installed on (one of `hidden`)."""
        found = self.hub.world.repository(f"{OWNER}/{name}")
        assert found is not None, name
        return found

    def person(self, login: str, permission: str = "read") -> Person:
        """A user of `octo/shop` with a role there (`read`, `triage`, `write`, `maintain`, `admin`)."""
        with self.hub.world.lock:
            self.hub.world.account(login)
            self.repository.permissions[login.lower()] = permission
        return self.hub.person(login)

    @classmethod
    @contextmanager
    def open(
        cls,
        database_url: str,
        *,
        key: tuple[str, str] | None = None,
        checked: bool = True,
        baton_port: int = 0,
        lanes: bool = True,
        clock: Clock = SYSTEM,
        oauth: bool = False,
        hidden: tuple[str, ...] = (),
        announce: bool = True,
        **settings: Any,
    ) -> Iterator[Stage]:
        """`settings` override Baton's (e.g. `answer_delay`, `write_interval`, `api_token`); Baton listens
        on `baton_port` (0: any free port). Without `lanes` nothing writes to GitHub by itself: a delivery
        is decided right after its answer, and the caller writes with `stage.app.state.writer.drain()`. `clock`:
        Baton's time, for quiet claims (a test moves it by hand). Without `announce`, GitHub never tells Baton
        it was installed (as for an App installed before Baton ran, or a new database)."""
        private, public = key or key_pair()
        secret = secrets.token_hex(16)
        world = World(APP_ID, public)
        with world.lock:
            installation = world.install(OWNER)
            repository = world.add_repository(installation, NAME)
            others = [world.add_repository(installation, name) for name in hidden]
            for other in others:
                other.private = True
            client = world.add_client(APP_ID) if oauth else None
        hub = Hub.checked(world, secret) if checked else Hub(world, secret)
        with ExitStack() as stack:
            stack.callback(hub.close)
            github = stack.enter_context(Served(hub.rest.app))
            hub.api_url = github.url
            # the stand-in issues GitHub Actions' OIDC tokens too: taken once `oidc_audience` is set
            options: dict[str, Any] = {"answer_delay": 0.3, "write_interval": 0.0,
                                       "oidc_issuer": f"{github.url}{ISSUER_PATH}", **settings}  # fmt: skip
            if client is not None:
                options.update(client_id=client[0], client_secret=SecretStr(client[1]))
            baton_settings = Settings(
                database_url=database_url, webhook_secret=SecretStr(secret), app_id=APP_ID,
                private_key=SecretStr(private), github_api_url=github.url, **options,
            )  # fmt: skip
            app = create_app(baton_settings, lanes=lanes, clock=clock)
            baton = stack.enter_context(Served(app, port=baton_port, http=protocol()))  # as `baton serve` serves
            hub.hook_url = f"{baton.url}/webhooks/github"
            if client is not None:
                with world.lock:
                    world.clients[client[0]].callback_urls.append(f"{baton.url}/auth/github/callback")
            # GitHub tells the App it was installed, and where, before anything else happens.
            with world.lock:
                installed = shapes.installation_event(
                    installation.id, world.app, installation.account, world.account(f"{OWNER}-admin"),
                    [one.shape(github.url) for one in (repository, *others)], api_url=github.url,
                )  # fmt: skip
            if announce:
                hub.deliver("installation", installed)
            yield cls(hub, repository, baton_settings, baton.url, github.url, app)
