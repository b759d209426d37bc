"""Assembling Baton's parts from the settings: one place, used by the web app and by `baton worker`."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Engine

from baton.environment.clock import SYSTEM, Clock
from baton.environment.settings import Settings
from baton.github.client import GitHubApp, GitHubDirectory, app_credentials
from baton.github.configs import DefaultConfigs, GitHubConfigs
from baton.github.hooks import GitHubHookDeliveries
from baton.github.installations import GitHubInstallations
from baton.github.issues import GitHubIssues
from baton.github.projection import GitHubProjector
from baton.github.verify import Verifier
from baton.intake import Intake
from baton.process.metrics import Metrics
from baton.process.writer import Gate, Writer
from baton.service.evidence import EvidenceService
from baton.service.installations import InstallationSweep, Lookup
from baton.service.offering import Offering
from baton.service.quiet import Sweep
from baton.service.redelivery import Redelivery
from baton.service.resolver import Configs, Directory, NoDirectory, Resolver
from baton.service.retention import Pruning
from baton.service.unit import Units
from baton.service.work import Decided, WorkService
from baton.store import make_engine, upgrade
from baton.store.budget import Budgets, Limits
from baton.store.inbox import Inbox
from baton.store.installations import Installations
from baton.store.outbox.writing import Outbox
from baton.store.redeliveries import Redeliveries
from baton.store.retention import Keep, Retention
from baton.store.sweeps import Sweeps


@dataclass
class Parts:
    engine: Engine
    work: WorkService
    evidence: EvidenceService
    inbox: Inbox
    resolver: Resolver  # who a caller is in a repository, for the webhook intake and the agent API alike
    intake: Intake
    writer: Writer | None  # None without GitHub: the outbox keeps what it would say until then
    sweep: Sweep  # quiet claims: flagged stale, released under `auto_release_after`
    metrics: Metrics  # this process's counts, and the database's figures read at each scrape
    # Missed webhooks asked for again; None without an App or with `BATON_REDELIVER_EVERY=0`.
    redelivery: Redelivery | None = None
    # The App's installations listed from GitHub; None without an App or with `BATON_INSTALLATIONS_EVERY=0`.
    installation_sweep: InstallationSweep | None = None
    # The daily prune of what is kept only for a while (`BATON_KEEP_PAYLOADS`, `BATON_KEEP_DELIVERIES`).
    pruning: Pruning | None = None
    # Run by the decide lane before its first round: what a decision's first GitHub call loads (`GitHubApp.prepare`).
    prepare: Callable[[], None] | None = None


def work_service(
    engine: Engine, answer_delay: float = 2.0, clock: Clock = SYSTEM, decided: Decided | None = None
) -> WorkService:
    """The work service and the evidence service it records `/deliver` reports with, on one database, both
    recording activity at `clock`'s time; `decided` hears of every command decided."""
    units = Units(engine, clock)
    return WorkService(units, EvidenceService(units, answer_delay), answer_delay, decided)


def assemble(
    settings: Settings,
    *,
    migrate: bool = True,
    directory: Directory | None = None,
    configs: Configs | None = None,
    clock: Clock = SYSTEM,
) -> Parts:
    """Raises `SettingsError` (with a message for the user) for unusable App credentials. `clock` is the time
    every part reads: the stores' timestamps and due times, leases, the writer's budgets, the sweeps (a test
    moves it by hand)."""
    engine = make_engine(settings.database_url)
    if migrate:
        upgrade(engine)
    metrics = Metrics(clock, engine)
    work = work_service(engine, settings.answer_delay, clock, metrics.decided)
    evidence = work.evidence
    credentials = app_credentials(settings)
    github = GitHubApp(credentials, settings.github_api_url, settings.github_timeout, metrics) if credentials else None
    inbox = Inbox(engine, clock)
    resolver = Resolver(
        directory or (GitHubDirectory(github) if github else NoDirectory()),
        configs or (GitHubConfigs(github) if github else DefaultConfigs()),
        Installations(engine, clock),
    )
    issues = GitHubIssues(github) if github else None
    if issues is not None:
        work.issue_open = issues.is_open
        work.issue_links = issues.linked
    intake = Intake(
        work,
        resolver,
        settings.app_id,
        resolver.installations,
        evidence,
        Offering(work),
        issues,
        inbox,
        metrics,
        app_login=github.login if github else None,
    )
    writer = None
    if github is not None:
        outbox = Outbox(engine, clock)
        limits = Limits(settings.write_interval, settings.writes_per_minute, settings.writes_per_hour)
        budgets = Budgets(engine, limits, clock)
        # A writer sleeps through the spacing of its installation's writes, not through a longer wait.
        gate = Gate(budgets, outbox, patience=limits.interval + 1.0)
        writer = Writer(outbox, GitHubProjector(github, gate), budgets, gate, evidence, Verifier(github, clock))
    sweep = Sweep(
        work.units, resolver.configs, answer_delay=settings.answer_delay, installations=resolver.installations
    )
    installation_sweep = None
    if github is not None:
        found = GitHubInstallations(github)
        installations = resolver.installations
        assert installations is not None
        lookup = resolver.lookup = Lookup(found, installations)
        if settings.installations_every > 0:
            installation_sweep = InstallationSweep(
                found, installations, Sweeps(engine, clock), settings.installations_every, lookup
            )
    redelivery = None
    if github is not None and settings.redeliver_every > 0:
        redelivery = Redelivery(GitHubHookDeliveries(github), Redeliveries(engine, clock), settings.redeliver_every)
    keep = Keep.of(settings)
    pruning = Pruning(Retention(engine, clock), Sweeps(engine, clock), keep)
    return Parts(
        engine, work, evidence, inbox, resolver, intake, writer, sweep, metrics, redelivery, installation_sweep,
        pruning, github.prepare if github else None,
    )  # fmt: skip
