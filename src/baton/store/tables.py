"""The schema, in SQLAlchemy Core. Alembic migrations create it; tests compare the two."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    func,
)

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

# SQLite only gives AUTOINCREMENT-free rowid aliases to INTEGER primary keys.
Id = BigInteger().with_variant(Integer(), "sqlite")

tickets = Table(
    "tickets",
    metadata,
    Column("id", Id, primary_key=True),
    Column("installation_id", BigInteger, nullable=False),
    Column("repository_id", BigInteger, nullable=False),
    Column("number", Integer, nullable=False),
    Column("repository", String(200), nullable=False),
    Column("state", String(20), nullable=False),
    Column("revision", Integer, nullable=False),
    Column("owner", String(100), nullable=False),
    Column("runner", String(100)),
    Column("attempt", Integer, nullable=False),
    Column("deliveries", Integer, nullable=False),
    Column("brief", JSON),
    Column("title", Text),  # the issue's title, as GitHub last told it (None: not told)
    Column("priority", SmallInteger),  # the brief's: 0 (p0, first) to 4; None: not said (handed out as p2)
    # the issue's labels as GitHub last told them (but Baton's own), lower-case, each between two newlines
    # (`store/ready.py`); None: not told
    Column("labels", Text),
    # the issue's labels', as `priority_labels` maps them (the lowest): counts when the brief says none
    Column("label_priority", SmallInteger),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    # when it entered its state, or while claimed its runner's hands (a brief's edit does not move it)
    Column("state_since", DateTime(timezone=True)),
    UniqueConstraint("installation_id", "repository_id", "number"),
    Index(None, "repository", "state"),
)
# The board's column order (a state's tickets, the longest there first), and a ticket found by its repository's
# name in any case: over the very expressions the reads use (`store/reads.py`), which both engines index.
Index("ix_tickets_state_since", tickets.c.state, func.coalesce(tickets.c.state_since, tickets.c.updated_at),
      tickets.c.id)  # fmt: skip
Index("ix_tickets_lower_repository_number", func.lower(tickets.c.repository), tickets.c.number)

# What keeps an issue from being ready (docs/agents.md, "Ready work"): GitHub's "blocked by" dependencies and,
# for an issue with sub-issues, each sub-issue. The blocked issue is keyed as a ticket is (it need not be one
# yet); the blocker is named `owner/repo#N` as GitHub last named it, with its state as last seen.
dependencies = Table(
    "dependencies",
    metadata,
    Column("installation_id", BigInteger, primary_key=True),
    Column("repository_id", BigInteger, primary_key=True),
    Column("number", Integer, primary_key=True),
    Column("source", String(20), primary_key=True),  # blocked_by | sub_issue
    Column("blocker", String(300), primary_key=True),  # owner/repo#N, lower-case
    Column("open", Boolean, nullable=False),
    Column("seen_at", DateTime(timezone=True), nullable=False),
    Index("ix_dependencies_blocker", "blocker"),
)

# When each label of a ticket last changed (`ready.label_name`'s form), as the hook that said so arrived: a
# change about the label that arrived before it is not applied (hooks may be decided in another order).
label_changes = Table(
    "label_changes",
    metadata,
    Column("installation_id", BigInteger, primary_key=True),
    Column("repository_id", BigInteger, primary_key=True),
    Column("number", Integer, primary_key=True),
    Column("label", Text, primary_key=True),
    Column("changed_at", DateTime(timezone=True), nullable=False),
)

attempts = Table(
    "attempts",
    metadata,
    Column("id", Id, primary_key=True),
    Column("ticket_id", ForeignKey("tickets.id"), nullable=False),
    Column("number", Integer, nullable=False),
    Column("runner", String(100), nullable=False),
    Column("started_revision", Integer, nullable=False),
    Column("started_at", DateTime(timezone=True), nullable=False),
    Column("ended_at", DateTime(timezone=True)),
    Column("end_reason", String(40)),
    UniqueConstraint("ticket_id", "number"),
)

deliveries = Table(
    "deliveries",
    metadata,
    Column("id", Id, primary_key=True),
    Column("ticket_id", ForeignKey("tickets.id"), nullable=False),
    Column("number", Integer, nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("runner", String(100), nullable=False),
    Column("text", Text, nullable=False),
    Column("evidence", JSON, nullable=False),
    Column("revision", Integer, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("ticket_id", "number"),
)

reviews = Table(
    "reviews",
    metadata,
    Column("id", Id, primary_key=True),
    Column("ticket_id", ForeignKey("tickets.id"), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("delivery", Integer, nullable=False),
    Column("reviewer", String(100), nullable=False),
    Column("role", String(40), nullable=False),
    Column("verdict", String(20), nullable=False),
    Column("independent", Boolean, nullable=False),
    Column("note", Text, nullable=False),
    Column("revision", Integer, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Index(None, "ticket_id", "id"),
)

events = Table(
    "events",
    metadata,
    Column("id", Id, primary_key=True),
    Column("ticket_id", ForeignKey("tickets.id"), nullable=False),
    Column("type", String(40), nullable=False),
    Column("actor", String(100), nullable=False),
    Column("role", String(40), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("revision", Integer, nullable=False),
    Column("operation_id", String(200)),
    Column("data", JSON, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Index(None, "ticket_id", "id"),
)

# A retried operation (same comment id, same Idempotency-Key) finds its first result here.
operations = Table(
    "operations",
    metadata,
    Column("id", String(200), primary_key=True),
    Column("ticket_id", ForeignKey("tickets.id")),
    Column("result", JSON, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
)

# How many tickets each runner holds as `claimed`, per repository. The claim limit is a conditional
# increment of this row, in the claim's own transaction, so it holds across processes.
runner_claims = Table(
    "runner_claims",
    metadata,
    Column("installation_id", BigInteger, primary_key=True),
    Column("repository_id", BigInteger, primary_key=True),
    Column("login", String(100), primary_key=True),  # lower-case
    Column("active", Integer, nullable=False),
)

# A runner's last activity on a ticket (a comment, a push or pull request update on a linked branch, an
# applied command), and whether the claim is flagged stale. Kept beside the ticket, never in its row: activity
# is not a work state, and recording it moves no revision.
ticket_activity = Table(
    "ticket_activity",
    metadata,
    Column("ticket_id", ForeignKey("tickets.id"), primary_key=True),
    Column("last_activity_at", DateTime(timezone=True), nullable=False),
    Column("source", String(40), nullable=False),  # what the last activity was: comment, push, command, …
    Column("stale_at", DateTime(timezone=True)),  # when the claim was flagged stale; None: it is not
)

# The issue's own state on GitHub, as its last `issues` `closed` or `reopened` hook told it
# (`baton.domain.issue`): kept beside the ticket, never in its row, since it is not a work state. `at` is
# GitHub's stamp of the change (`closed_at`, or `updated_at` for a reopening), which orders hooks that
# arrive out of order; `merged` says a merged pull request closed it.
issue_states = Table(
    "issue_states",
    metadata,
    Column("ticket_id", ForeignKey("tickets.id"), primary_key=True),
    Column("state", String(10), nullable=False),
    Column("reason", String(40)),
    Column("actor", String(100)),
    Column("at", String(40), nullable=False),
    Column("merged", Boolean, nullable=False),
)

# The webhook inbox: every accepted hook, keyed by GitHub's `X-GitHub-Delivery`, so a redelivery
# is recognised and a hook whose processing failed can be processed again.
webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    Column("id", String(100), primary_key=True),
    Column("event", String(60), nullable=False),
    Column("action", String(60)),
    Column("installation_id", BigInteger),
    Column("status", String(20), nullable=False),  # pending | processing | done | ignored | failed
    Column("attempts", Integer, nullable=False),
    Column("error", Text),
    Column("received_at", DateTime(timezone=True), nullable=False),
    Column("processed_at", DateTime(timezone=True)),
    Column("next_attempt_at", DateTime(timezone=True)),  # a hook that failed for a passing reason waits
    Index(None, "status", "received_at"),
)

# Each hook's payload, the JSON text exactly as GitHub sent it, apart from the row whose status changes: written once,
# never again (SQLite rewrites a whole row, payload and all, on every update, and a hook's status changes twice).
# A hook processed long ago has no row here (`baton.store.retention`).
webhook_payloads = Table(
    "webhook_payloads",
    metadata,
    Column("id", String(100), primary_key=True),  # the hook's (`webhook_deliveries.id`)
    Column("payload", Text, nullable=False),
)

# The outbox: what GitHub must be told, written in the same transaction as the change it reports.
# One row per issue marks its labels, assignee and status comment as due for reconciling; `version`
# rises with every change, so the writer only clears a row that nothing has touched since it read it.
# `urgency` 0 means a 👍 waits on it: such rows are written before any other of their installation.
outbox = Table(
    "outbox",
    metadata,
    Column("installation_id", BigInteger, primary_key=True),
    Column("repository_id", BigInteger, primary_key=True),
    Column("number", Integer, primary_key=True),
    Column("repository", String(200), nullable=False),
    Column("version", Integer, nullable=False),
    Column("due_at", DateTime(timezone=True), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("last_error", Text),
    Column("urgency", Integer, nullable=False, server_default="1"),
    Index(None, "due_at"),
)

# Redeliveries Baton asked GitHub for (`baton.service.redelivery`): one row per entry of GitHub's delivery log,
# keyed by GitHub's id of that entry, so each failed hook is asked for once, by one process. `guid` is the
# `X-GitHub-Delivery` the entry carried. `status`: asking (a process is asking now; taken over once `asked_at`
# is older than a call to GitHub can take) | asked (GitHub took it) | refused (GitHub refused it for good).
redeliveries = Table(
    "redeliveries",
    metadata,
    Column("delivery_id", BigInteger, primary_key=True, autoincrement=False),
    Column("guid", String(100), nullable=False),
    Column("event", String(60), nullable=False),
    Column("status", String(20), nullable=False),
    Column("asked_at", DateTime(timezone=True), nullable=False),
    Column("error", Text),
    Index(None, "guid"),
)

# The board's sessions of people signed in with GitHub (`baton.store.board_sessions`): `id` is the SHA-256 of the
# random session id the cookie carries (never the id itself); `token` the person's GitHub token, encrypted
# (`baton.web.github_sign_in`); `repositories` the ids of the repositories they may read, as GitHub said at
# `checked_at`.
board_sessions = Table(
    "board_sessions",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("login", String(100), nullable=False),
    Column("token", Text, nullable=False),
    Column("repositories", JSON, nullable=False),
    Column("checked_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=False),
    Index(None, "expires_at"),
)

# Per-command answers on GitHub: a reaction on the command's comment, or a reply (refusals and /help,
# coalesced per issue into one comment). `result_id` is the reply comment GitHub created; `dropped` says
# why an answer was given up (it is then never sent).
outbox_items = Table(
    "outbox_items",
    metadata,
    Column("id", Id, primary_key=True),
    Column("installation_id", BigInteger, nullable=False),
    Column("repository_id", BigInteger, nullable=False),
    Column("number", Integer, nullable=False),
    Column("kind", String(20), nullable=False),  # reaction | reply
    Column("comment_id", BigInteger),  # the command's comment; None: the issue's own body
    Column("author", String(100), nullable=False),
    Column("message", Text, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("sent_at", DateTime(timezone=True)),
    Column("result_id", BigInteger),
    Column("due_at", DateTime(timezone=True)),  # a reply waits until then for others to share its comment
    Column("dropped", Text),  # why it was given up unsent: GitHub refused it, or failed it on the last try
    Index(None, "installation_id", "repository_id", "number", "sent_at"),
)

# What Baton has put on GitHub for an issue, so it finds its own status comment again.
projections = Table(
    "projections",
    metadata,
    Column("installation_id", BigInteger, primary_key=True),
    Column("repository_id", BigInteger, primary_key=True),
    Column("number", Integer, primary_key=True),
    Column("status_comment_id", BigInteger),
)

# Installations and their repositories, as GitHub reports them. An uninstalled or suspended
# installation's commands and GitHub writes stop; nothing of its history is deleted.
installations = Table(
    "installations",
    metadata,
    Column("id", BigInteger, primary_key=True, autoincrement=False),
    Column("account", String(100), nullable=False),
    Column("status", String(20), nullable=False),  # active | suspended | deleted
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

installation_repositories = Table(
    "installation_repositories",
    metadata,
    Column("installation_id", BigInteger, primary_key=True),
    Column("repository_id", BigInteger, primary_key=True),
    Column("full_name", String(200), nullable=False),
    Column("present", Boolean, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

# Sweeps only one process makes at a time (the App's installations): who holds one, until when (a process that
# died holding it lets go then), and when the last one ended.
sweeps = Table(
    "sweeps",
    metadata,
    Column("name", String(60), primary_key=True),
    Column("holder", String(100)),
    Column("held_until", DateTime(timezone=True)),
    Column("swept_at", DateTime(timezone=True)),
)

# The agent API's idempotency keys (docs/agents.md): a retry with the same key gets the first answer; the key
# used again for another request is refused. `login` is lower-case; `status` and `body` are the answer, once given.
api_requests = Table(
    "api_requests",
    metadata,
    Column("login", String(100), primary_key=True),
    Column("key", String(200), primary_key=True),
    Column("fingerprint", String(64), nullable=False),
    Column("status", Integer),
    Column("body", Text),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("issue", Integer),  # the issue a create-and-claim opened, once GitHub opened it
)

# The evidence rails (docs/design.md §1 and §4, docs/evidence.md): one row per ticket holding
# `baton.domain.evidence.to_dict(rail)`. `version` rises with every change and writers compare-and-swap on it,
# so two hooks about one ticket never lose a fact. The two states are copied out of the JSON for queries: a
# deployment reaches the merged rails.
evidence_rails = Table(
    "evidence_rails",
    metadata,
    Column("ticket_id", ForeignKey("tickets.id"), primary_key=True, autoincrement=False),
    Column("installation_id", BigInteger, nullable=False),
    Column("repository_id", BigInteger, nullable=False),
    Column("version", Integer, nullable=False),
    Column("repository_state", String(20), nullable=False),
    Column("deployment_state", String(20), nullable=False),
    Column("rail", JSON, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Index("ix_evidence_rails_repository_state", "installation_id", "repository_id", "repository_state"),
)

# Which rails hold a subject ("pr:57", "branch:42-empty-state", "sha:…", "deployment:9", "compare:…"), so a
# fact about it reaches them even when it no longer links them (an edited body unlinks a pull request); and
# "timeline" once the issue's timeline on GitHub was read for the ticket.
# Rows are only added: a rail never forgets a subject it held.
evidence_links = Table(
    "evidence_links",
    metadata,
    Column("installation_id", BigInteger, primary_key=True),
    Column("repository_id", BigInteger, primary_key=True),
    Column("subject", String(300), primary_key=True),
    Column("ticket_id", ForeignKey("tickets.id"), primary_key=True),
)

# Every fact GitHub told Baton about a repository, once (`digest` is the fact's own), whether or not it reached
# a ticket then. A rail that starts holding a subject later (a delivery reports a branch pushed an hour ago, a
# pull request is linked by an edit, a merge arrives after its deployment) catches up from here.
evidence_facts = Table(
    "evidence_facts",
    metadata,
    Column("id", Id, primary_key=True),
    Column("installation_id", BigInteger, nullable=False),
    Column("repository_id", BigInteger, nullable=False),
    Column("subject", String(300), nullable=False),
    Column("kind", String(20), nullable=False),
    Column("stamp", DateTime(timezone=True)),
    Column("digest", String(64), nullable=False),
    Column("fact", JSON, nullable=False),
    Column("source", String(120), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    UniqueConstraint("installation_id", "repository_id", "digest"),
    Index(None, "installation_id", "repository_id", "subject"),
    Index(None, "installation_id", "repository_id", "kind", "stamp"),
)

# The evidence rail's own append-only history, apart from the work `events`: each fact that changed a rail,
# and the issue closed or reopened on GitHub (which never moves the work state).
evidence_events = Table(
    "evidence_events",
    metadata,
    Column("id", Id, primary_key=True),
    Column("ticket_id", ForeignKey("tickets.id"), nullable=False),
    Column("type", String(40), nullable=False),
    Column("source", String(120), nullable=False),
    Column("data", JSON, nullable=False),
    Column("repository_state", String(20), nullable=False),
    Column("deployment_state", String(20), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Index(None, "ticket_id", "id"),
)

# The `baton/acceptance` check run Baton keeps on each pull request head, and what it last wrote there. A row
# without `check_run_id` is a run being created: after a crash it is looked for on GitHub before another is made.
check_runs = Table(
    "check_runs",
    metadata,
    Column("installation_id", BigInteger, primary_key=True),
    Column("repository_id", BigInteger, primary_key=True),
    Column("head_sha", String(64), primary_key=True),
    Column("check_run_id", BigInteger),
    Column("shown", JSON),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)

# One write budget per installation, shared by every process: the earliest time of its next GitHub write, a
# pause that a rate limit seen by any process sets, and which writer holds the installation (one at a time,
# so its writes go out most urgent first and never faster than the budget).
write_budgets = Table(
    "write_budgets",
    metadata,
    Column("installation_id", BigInteger, primary_key=True, autoincrement=False),
    Column("next_at", DateTime(timezone=True)),
    Column("paused_until", DateTime(timezone=True)),
    Column("pause_reason", Text),
    Column("holder", String(100)),
    Column("held_until", DateTime(timezone=True)),
)

# The installation's GitHub writes of the last hour, for the per-minute and per-hour limits.
write_log = Table(
    "write_log",
    metadata,
    Column("id", Id, primary_key=True),
    Column("installation_id", BigInteger, nullable=False),
    Column("at", DateTime(timezone=True), nullable=False),
    # offering an issue (its label, for offering or a backfill): held to a share of the budget
    Column("offering", Boolean, nullable=False, server_default=false()),
    Index(None, "installation_id", "at"),
)
