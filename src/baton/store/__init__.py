"""The database: schema, migrations, engines and the work rail's transactional reads and writes."""

from .engine import make_engine, normalise_url
from .migrate import upgrade
from .work import Conflict, Store, StoredTicket, WorkTx

__all__ = ["Conflict", "Store", "StoredTicket", "WorkTx", "make_engine", "normalise_url", "upgrade"]
