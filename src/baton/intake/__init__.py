"""From a stored hook to commands decided and evidence recorded.

`envelope.py` parses a hook's payload once; `routing.py` sends each (event, action) to its handler and
runs the decide lane's loop; the handlers are grouped by concern: `commands.py` (comments, bodies,
reviews, `baton:` labels), `evidence.py` (branches, pull requests, checks, deployments, issues closed or
reopened), `offering.py` (issues opened, labelled, closed, reopened, deleted or transferred, and the
backfill of a newly installed repository's issues), `installations.py`. `context.py` holds what they
share: the use cases, and who-is-who through the `Resolver` (`baton.service.resolver`) the agent API uses too.
"""

from .context import Configs, Directory, DirectoryUnavailable, Intake, NoDirectory
from .envelope import Envelope
from .routing import COMMAND_READERS, HANDLERS, MAX_HOOK_ATTEMPTS, comments_only, decide, passing, process, retry_after

__all__ = [
    "COMMAND_READERS",
    "HANDLERS",
    "MAX_HOOK_ATTEMPTS",
    "Configs",
    "Directory",
    "DirectoryUnavailable",
    "Envelope",
    "Intake",
    "NoDirectory",
    "comments_only",
    "decide",
    "passing",
    "process",
    "retry_after",
]
