"""The evidence rail as stored: `evidence_rails.rail` holds `to_dict(rail)`, and the facts log and evidence
events hold `fact_to_dict(fact)`. Reading back builds the rail again from what it keeps, so what it derives
is never trusted from storage. Existing rows are read as they are: change the format only with a migration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any

from baton.domain.evidence import (
    Branch,
    BranchFact,
    CheckFact,
    CompareFact,
    DeliveryReport,
    Deployment,
    DeploymentFact,
    DeploymentStatusFact,
    EvidenceRail,
    Fact,
    LookupFact,
    PullRequest,
    PullRequestFact,
)
from baton.domain.model import Evidence

FACT_KINDS: Mapping[str, type[Fact]] = {
    "pull_request": PullRequestFact,
    "branch": BranchFact,
    "check": CheckFact,
    "deployment": DeploymentFact,
    "deployment_status": DeploymentStatusFact,
    "comparison": CompareFact,
    "report": DeliveryReport,
    "lookup": LookupFact,
}


def _plain(value: object) -> Any:
    if isinstance(value, Evidence):
        return value.to_dict()
    if isinstance(value, frozenset):
        return sorted(value)
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


def fact_to_dict(fact: Fact) -> dict[str, Any]:
    """A fact as JSON-ready data, with its `kind`; `fact_from_dict` reads it back."""
    kind = next(name for name, cls in FACT_KINDS.items() if isinstance(fact, cls))
    return {"kind": kind, **{f.name: _plain(getattr(fact, f.name)) for f in fields(fact)}}


def fact_from_dict(data: Mapping[str, Any]) -> Fact:
    cls = FACT_KINDS[data["kind"]]
    values = {f.name: data[f.name] for f in fields(cls) if f.name in data}
    if "links" in values:
        values["links"] = frozenset(values["links"])
    if values.get("failing_checks") is not None:
        values["failing_checks"] = tuple(values["failing_checks"])
    if "evidence" in values:
        values["evidence"] = Evidence.from_dict(values["evidence"])
    return cls(**values)


def _optional(fact: Fact | None) -> dict[str, Any] | None:
    return None if fact is None else fact_to_dict(fact)


def to_dict(rail: EvidenceRail) -> dict[str, Any]:
    """The rail as JSON-ready data: what it keeps, and what it derives (for readers; `from_dict` derives
    it again rather than trusting it)."""
    return {
        "ticket": rail.ticket,
        "applicable": rail.applicable,
        "pull_requests": [
            {"latest": fact_to_dict(pr.latest), "merge": _optional(pr.merge)} for pr in rail.pull_requests
        ],
        "branches": [
            {
                "latest": fact_to_dict(b.latest),
                "head": _optional(b.head),
                "pushes": [fact_to_dict(push) for push in b.pushes],
                "deletion": _optional(b.deletion),
            }
            for b in rail.branches
        ],
        "checks": [fact_to_dict(check) for check in rail.checks],
        "deployments": [
            {"id": d.id, "created": _optional(d.created), "statuses": [fact_to_dict(s) for s in d.statuses]}
            for d in rail.deployments
        ],
        "comparisons": [fact_to_dict(comparison) for comparison in rail.comparisons],
        "reports": [fact_to_dict(report) for report in rail.reports],
        "lookups": [fact_to_dict(lookup) for lookup in rail.lookups],
        "reported_branch": rail.reported_branch,
        "reported_commit": rail.reported_commit,
        "reported_pull_request": rail.reported_pull_request,
        "verified_head_sha": rail.verified_head_sha,
        "checked_at": rail.checked_at,
        "mismatch": rail.mismatch,
        "repository": rail.repository.value,
        "reason": rail.reason,
        "deployment": rail.deployment.value,
    }


def _pushes(branch: Mapping[str, Any], read: Callable[[Any], Any]) -> tuple[BranchFact, ...]:
    """A branch's kept pushes; rails stored before pushes were kept hold only the head."""
    if "pushes" in branch:
        return tuple(read(push) for push in branch["pushes"])
    return () if branch.get("head") is None else (read(branch["head"]),)


def from_dict(data: Mapping[str, Any]) -> EvidenceRail:
    def read(item: Mapping[str, Any] | None) -> Any:
        return None if item is None else fact_from_dict(item)

    return EvidenceRail(
        ticket=data["ticket"],
        applicable=data.get("applicable", True),
        pull_requests=tuple(PullRequest(read(pr["latest"]), read(pr["merge"])) for pr in data.get("pull_requests", ())),
        branches=tuple(
            Branch(read(b["latest"]), _pushes(b, read), read(b["deletion"])) for b in data.get("branches", ())
        ),
        checks=tuple(read(check) for check in data.get("checks", ())),
        deployments=tuple(
            Deployment(d["id"], read(d["created"]), tuple(read(s) for s in d["statuses"]))
            for d in data.get("deployments", ())
        ),
        comparisons=tuple(read(comparison) for comparison in data.get("comparisons", ())),
        reports=tuple(read(report) for report in data.get("reports", ())),
        lookups=tuple(read(lookup) for lookup in data.get("lookups", ())),
    )
