"""The database: schema, migrations, engines, and each concern's reads and writes inside a transaction (the
facets a unit of work is made of: `work.WorkTx`, `evidence.EvidenceTx`, `outbox.OutboxTx`)."""

from .engine import make_engine, normalise_url
from .migrate import upgrade
from .statements import Conflict
from .work import StoredTicket, WorkTx

__all__ = ["Conflict", "StoredTicket", "WorkTx", "make_engine", "normalise_url", "upgrade"]
