"""The evidence rails of a ticket: where its code is (repository) and whether it shipped (deployment).

docs/design.md §1 and §4. Facts — what a webhook, the REST API or the runner's `/deliver` report says
about one pull request, branch, check, deployment or commit comparison of one repository — are folded
into an `EvidenceRail`, one per ticket, by `apply()`. The rail keeps, per subject (a pull request's number, a
branch's name, a check's commit and name, a deployment's id), a join of what it was told: the newest fact by
its stamp, plus the few facts that stay true once seen (a merge, a deployment's success). A join does not
care about order or repetition, so late, repeated or shuffled hooks give the rail the ordered ones
give. The states, the verified head and the mismatch are derived from what is kept, each time, never
stored beside it.

Nothing here knows the work rail: evidence never claims, delivers or accepts anything, and this package
imports nothing that could. The rules are written out, with examples, in docs/evidence.md.
"""

from .facts import (
    OWN_CHECK,
    BranchFact,
    CheckFact,
    CompareFact,
    DeliveryReport,
    DeploymentFact,
    DeploymentStatusFact,
    Fact,
    Includes,
    LookupFact,
    PullRequestFact,
    branch_name,
    instant,
    same_commit,
    short,
    stamp,
)
from .rail import (
    Branch,
    Deployment,
    EnvironmentDeployment,
    EvidenceRail,
    PullRequest,
    accepted_heads,
    apply,
    blocker,
    deployment_state,
    environments,
    failing_checks,
    lead_pull_request,
    pull_request_head,
    unanswered_comparisons,
    unrequired_failures,
    unseen_pull_request,
    unverified_branch,
)
from .sightings import (
    DEPLOYMENT_MARGIN,
    Repository,
    Sighting,
    Subject,
    may_ship,
    merge_stamps,
    reaches,
    subject,
    subjects,
)
from .verification import NOT_FOUND, UNVERIFIED, VERIFIED, ReportedItem, not_found, unverified, verification
from .words import NOT_FOUND_WORDS, deployment_text, mismatch_text, repository_text

__all__ = [
    "DEPLOYMENT_MARGIN",
    "NOT_FOUND",
    "NOT_FOUND_WORDS",
    "OWN_CHECK",
    "UNVERIFIED",
    "VERIFIED",
    "Branch",
    "BranchFact",
    "CheckFact",
    "CompareFact",
    "DeliveryReport",
    "Deployment",
    "DeploymentFact",
    "DeploymentStatusFact",
    "EnvironmentDeployment",
    "EvidenceRail",
    "Fact",
    "Includes",
    "LookupFact",
    "PullRequest",
    "PullRequestFact",
    "ReportedItem",
    "Repository",
    "Sighting",
    "Subject",
    "accepted_heads",
    "apply",
    "blocker",
    "branch_name",
    "deployment_state",
    "deployment_text",
    "environments",
    "failing_checks",
    "instant",
    "lead_pull_request",
    "may_ship",
    "merge_stamps",
    "mismatch_text",
    "not_found",
    "pull_request_head",
    "reaches",
    "repository_text",
    "same_commit",
    "short",
    "stamp",
    "subject",
    "subjects",
    "unanswered_comparisons",
    "unrequired_failures",
    "unseen_pull_request",
    "unverified",
    "unverified_branch",
    "verification",
]
