"""The service layer: the use cases, each one unit of work (`unit.py`) over the store's facets.

`work.py` decides commands on the work rail; `baton.evidence` records evidence on the evidence rails.
They are built once, explicitly, by `baton.wiring.assemble` (tests build them the same way).
"""

from .unit import UnitOfWork, Units
from .work import Issue, Outcome, Request, Source, WorkService

__all__ = ["Issue", "Outcome", "Request", "Source", "UnitOfWork", "Units", "WorkService"]
