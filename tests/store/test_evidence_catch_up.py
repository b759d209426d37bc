"""A new ticket's evidence rail catches up on the repository's log, on SQLite and on PostgreSQL: the logged pull
requests and branches that link its issue, and no others."""

from __future__ import annotations

from baton.domain import RepositoryKey, RepositoryState, TicketKey
from baton.domain.evidence import BranchFact, PullRequestFact, Repository, Sighting
from baton.process.wiring import work_service
from baton.reading.linking import branch_links
from baton.service.unit import Units
from baton.service.work import Issue
from support.payloads import HEAD, NEWER

PLACE = RepositoryKey(7, 1001)
SHOP = Repository(PLACE, "octo/shop")


def pull_request(number: int, links: set[int], ref: str, sha: str = HEAD) -> Sighting:
    fact = PullRequestFact(number, ref, sha, "main", "open", "2024-05-01T10:00:00Z", links=frozenset(links))
    return Sighting(fact, fact.links)


def branch(name: str, sha: str = NEWER) -> Sighting:
    fact = BranchFact(name, "2024-05-01T10:05:00Z", sha, links=branch_links(name))
    return Sighting(fact, fact.links)


def test_a_new_ticket_catches_up_on_what_links_its_number_exactly(store: Units) -> None:
    service = work_service(store.engine)
    logged = [
        pull_request(57, {12}, "empty-cart"),
        pull_request(58, {112, 1}, "styles"),  # other numbers sharing digits
        pull_request(59, set(), "docs"),  # mentions nothing
        branch("agent/12-retry"),
        branch("120-other"),
    ]
    assert service.evidence.record(SHOP, logged, "test") == []  # no ticket yet: logged only

    key = TicketKey(PLACE.installation_id, PLACE.repository_id, 12)
    assert service.open_ticket(Issue(key, SHOP.name, "olivia"), "open-12").applied
    rail = service.evidence.rail(key)
    assert [pr.number for pr in rail.pull_requests] == [57]
    assert [b.name for b in rail.branches] == ["agent/12-retry"]
    assert rail.repository is RepositoryState.PULL_REQUEST_OPEN
    events = service.evidence.reads.events(key)
    assert sorted(e["type"] for e in events) == ["branch", "pull_request"]
    assert all(e["data"]["caught_up"] and e["source"] == "open-12" for e in events)

    quiet = TicketKey(PLACE.installation_id, PLACE.repository_id, 2)
    assert service.open_ticket(Issue(quiet, SHOP.name, "olivia"), "open-2").applied
    assert service.evidence.rail(quiet).repository is RepositoryState.UNREPORTED
    assert service.evidence.reads.events(quiet) == []
