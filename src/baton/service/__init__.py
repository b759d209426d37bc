"""The service layer: the use cases, each one unit of work (`unit.py`) over the store's facets.

`work.py` decides commands on the work rail; `evidence.py` records evidence on the evidence rails and has
no path to the work rail (so this package's face re-exports nothing: importing one module never loads the
other). Both are built once, explicitly, by `baton.process.wiring`.
"""
