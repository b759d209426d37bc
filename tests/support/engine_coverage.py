"""Which lines of `baton.store` only the PostgreSQL runs of unmarked tests reach (CONTRIBUTING.md, "Which database a
test runs on"): reads a coverage file recorded with one context per test and prints, for each such line, the tests
that reach it, fewest marks needed first. Prints nothing, and exits 0, when the default run's PostgreSQL tests
reach every line that any test reaches there.

    python tests/support/engine_coverage.py COVERAGE_FILE
"""

from __future__ import annotations

import sys
from collections import defaultdict


def _left_out() -> set[str]:
    """The PostgreSQL runs the default run leaves out: the node ids pytest collects with `--engines
    postgresql-rest`, as tests/conftest.py chooses them."""
    import pytest

    found: set[str] = set()

    class Collect:
        def pytest_collection_finish(self, session: pytest.Session) -> None:
            found.update(item.nodeid for item in session.items)

    quiet = ["-o", "addopts=", "-p", "no:cacheprovider", "-p", "no:terminal"]
    pytest.main(["--collect-only", "--engines", "postgresql-rest", *quiet], plugins=[Collect()])
    return found


def main(path: str) -> int:
    import coverage

    data = coverage.Coverage(data_file=path)
    data.load()
    recorded = data.get_data()
    left_out = _left_out()
    left: dict[tuple[str, int], list[str]] = {}
    for file in recorded.measured_files():
        for line, contexts in recorded.contexts_by_lineno(file).items():
            tests = [context.split("|")[0] for context in contexts if "::" in context]
            if tests and all(test in left_out for test in tests):
                left[(file.split("src/")[-1], line)] = tests
    by_test: defaultdict[str, set[tuple[str, int]]] = defaultdict(set)
    for place, tests in left.items():
        for test in tests:
            by_test[test].add(place)
    remaining = set(left)
    while remaining:
        test, places = max(by_test.items(), key=lambda pair: len(pair[1] & remaining))
        reached = sorted(places & remaining)
        print(f"{test}: {len(reached)} lines, e.g. {', '.join(f'{file}:{line}' for file, line in reached[:3])}")
        remaining -= places
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
