"""Assembling Baton's parts from the settings: one place, used by the web app and by `baton worker`."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Engine

from baton.github.client import GitHubApp, GitHubDirectory, app_credentials
from baton.github.configs import DefaultConfigs, GitHubConfigs
from baton.github.projection import GitHubProjector, Pace
from baton.github.verify import Verifier
from baton.intake import Configs, Directory, Intake, NoDirectory, process
from baton.service import WorkService
from baton.settings import Settings
from baton.store import Store, make_engine, upgrade
from baton.store.inbox import Inbox
from baton.store.installations import Installations
from baton.store.outbox import Outbox
from baton.worker import Worker

log = logging.getLogger("baton.worker")


@dataclass
class Parts:
    engine: Engine
    store: Store
    work: WorkService
    inbox: Inbox
    intake: Intake
    worker: Worker | None  # None without GitHub: the outbox keeps what it would say until then


def assemble(
    settings: Settings, *, migrate: bool = True, directory: Directory | None = None, configs: Configs | None = None
) -> Parts:
    """Raises `ConfigurationError` (with a message for the user) for unusable App credentials."""
    engine = make_engine(settings.database_url)
    if migrate:
        upgrade(engine)
    store = Store(engine)
    work = WorkService(store, settings.answer_delay)
    credentials = app_credentials(settings)
    github = GitHubApp(credentials, settings.github_api_url) if credentials else None
    intake = Intake(
        work,
        directory or (GitHubDirectory(github) if github else NoDirectory()),
        configs or (GitHubConfigs(github) if github else DefaultConfigs()),
        settings.app_id,
        Installations(engine),
        work.evidence,
    )
    worker = None
    if github is not None:
        projector = GitHubProjector(github, Pace(settings.write_interval))
        worker = Worker(Outbox(store), projector, work.evidence, Verifier(github))
    return Parts(engine, store, work, Inbox(engine), intake, worker)


def work_round(parts: Parts, longest: float, before_each: Callable[[], None] | None = None) -> float:
    """Process the stored deliveries, oldest first, then drain the outbox. Returns how long to wait
    before the next round (at most `longest`). `before_each` runs before each delivery."""
    for delivery_id in parts.inbox.pending():
        if before_each is not None:
            before_each()
        process(parts.inbox, parts.intake, delivery_id)
    if parts.worker is None:
        return longest
    parts.worker.drain()
    return parts.worker.idle(longest)


def work_loop(parts: Parts, stop: threading.Event, poll: float = 0.1) -> None:
    """`baton worker`: process stored deliveries and drain the outbox until `stop` is set. Looking
    for new deliveries every `poll` seconds is one indexed query."""
    while not stop.is_set():
        wait = poll
        try:
            wait = work_round(parts, poll)
        except Exception:  # the database went away for a moment: the rows are still there
            log.exception("worker round failed")
        stop.wait(wait)
