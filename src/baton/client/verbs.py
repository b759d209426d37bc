"""The agent-facing verbs: the commands of the registry (`RULES` in `domain/transitions.py`) that an agent or a
reviewer sends on one issue, over the agent API, with `baton`, or as MCP tools; each described once, here.

The agent API's command routes and their bodies (`web/agent_api.py`, and the paths `web/plain.py` serves), the
CLI's subcommands (`client/agent_commands.py`) and the MCP tools (`client/mcp.py`) are made from `VERBS`: a new
verb is its rule, its transition and one entry here. Pure data, importing nothing of Baton's: the web layer
reads it, and so does the client, which reaches nothing of Baton's beyond `baton.client` and `baton.environment`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any

# What an argument holds.
TEXT = "text"  # a string, within `shortest`, `longest` and `pattern`
LOGIN = "login"  # a GitHub login, with or without its `@`
FLAG = "flag"  # true or false (a CLI option without a value)
NUMBER = "number"  # a whole number, from `least` to `largest` (`#57` on the command line)
LINES = "lines"  # a list of strings, at most `most` of them, each within `shortest` and `longest`

# What the command decided takes an argument as (`Command` in `domain/model.py`).
SAID = "text"  # its free text
SUMMARY = "summary"  # its free text, which is the delivery's summary
WORD = "word"  # a flag: the argument's name as the command's text when set (`/claim force`)
USER = "user"  # whom it names (`@user`)
# any other: the `Evidence` field of that name (branch, commit, pull_request, tests, screenshots)

LONGEST_TEXT = 10_000
LARGEST_NUMBER = 2**31 - 1  # an issue's or a pull request's number, as GitHub gives them
# A GitHub login (a person's, or an App's with `[bot]`), its `@` optional.
LOGIN_PATTERN = r"^@?[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?$"


@dataclass(frozen=True)
class Argument:
    """One argument of a verb: a field of its API body, an option (or a positional argument) of its CLI
    subcommand and an argument of its MCP tool, all with this name but the CLI's `flag`."""

    name: str
    kind: str
    description: str  # one sentence: the body field's and the tool argument's; the CLI's help, lower-cased
    carries: str  # what the command takes it as: SAID, SUMMARY, WORD, USER or an `Evidence` field
    flag: str | None  # the CLI's option (`--note`); None: a positional argument
    metavar: str = "TEXT"
    required: bool = False
    default: str | bool | None = None  # when not given (LINES: an empty list)
    shortest: int = 0
    longest: int | None = None
    pattern: str | None = None
    least: int | None = None
    largest: int | None = None
    most: int | None = None

    def unset(self) -> str | bool | list[str] | None:
        """The value when not given: a fresh list for LINES."""
        return [] if self.kind == LINES else self.default

    def annotation(self) -> Any:
        """Its type for pydantic, limited and described: the API body's field and the MCP tool's argument."""
        from pydantic import Field, StringConstraints  # not at import: the CLI reads this table before it needs them

        if self.kind == FLAG:
            typed: Any = bool
        elif self.kind == NUMBER:
            typed = Annotated[int, Field(ge=self.least, le=self.largest)]
        else:
            text = Annotated[str, StringConstraints(min_length=self.shortest or None, max_length=self.longest,
                                                    pattern=self.pattern)]  # fmt: skip
            typed = Annotated[list[text], Field(max_length=self.most)] if self.kind == LINES else text
        if not self.required and self.unset() is None:
            typed = typed | None
        return Annotated[typed, Field(description=self.description)]


@dataclass(frozen=True)
class Verb:
    """A command of the registry, as the agent API, the CLI and MCP offer it."""

    name: str  # the rule's name in `RULES`; the API's path segment (`.../issues/{n}/send-back`) and the subcommand
    body: str  # the API body's name in /openapi.json
    summary: str  # the API route's summary
    help: str  # the subcommand's line in `baton --help`, before its "(role; HTTP)"
    role: str  # who sends it: "agents", "reviewers" or "maintainers"
    about: str  # the subcommand's description
    guard: str  # what `--rev N` and `revision` guard, said as a verb: "claim", "send it back"
    tool: str  # the MCP tool's name
    tool_about: str  # the MCP tool's description
    done: str  # the CLI's word on success, before the task: "sent back"; `{user}` and such name arguments
    said: str  # the MCP tool's sentence on success: `{task}`, `{revision}` and `{runner}` from the answer
    arguments: tuple[Argument, ...] = ()

    @property
    def takes_body(self) -> bool:
        """Whether the route needs a body: an argument is required. Else no body (or JSON `null`) is an empty one."""
        return any(argument.required for argument in self.arguments)

    def sent(self, values: Mapping[str, Any]) -> dict[str, Any]:
        """The body for these argument values, as a client sends it and a retry with the same Idempotency-Key must
        send again: a body the route needs, whole; else only the arguments given (neither null nor false)."""
        whole = self.takes_body
        return {one.name: values[one.name] for one in self.arguments
                if whole or (values[one.name] is not None and values[one.name] is not False)}  # fmt: skip


def _text(name: str, description: str, flag: str) -> Argument:
    """A reviewer's words: optional, up to LONGEST_TEXT characters, the command's text."""
    return Argument(name, TEXT, description, SAID, flag, default="", longest=LONGEST_TEXT)


def _lines(name: str, description: str, flag: str, metavar: str, carries: str) -> Argument:
    return Argument(name, LINES, description, carries, flag, metavar, shortest=1, longest=2_000, most=20)


VERBS: tuple[Verb, ...] = (
    Verb(
        "claim", "Claim", "Claim the task", "claim a task", "agents",
        "Claim the task OWNER/REPO#N for this agent. Exactly one of any number of agents claiming at once wins. "
        "Claiming a task you hold changes nothing.",
        "claim", "claim_task",
        "Claim a task: exactly one of any number of claimants wins. On success the task is yours (its revision and "
        "attempt are in the answer); a refusal is an error naming who holds it. Claiming a task you already hold is "
        "safe and changes nothing.",
        "claimed", "claimed {task} ({revision})",
        (Argument("force", FLAG, "A maintainer claims a task that is not ready (blocked), as `/claim force` does.",
                  WORD, "--force", default=False),),
    ),
    Verb(
        "release", "Release", "Release the task", "give back a task you hold", "agents",
        "Release OWNER/REPO#N: the task is open again for anyone to claim. Its runner releases their own claim; a "
        "maintainer releases someone else's with --user LOGIN.",
        "release", "release_task",
        "Release a task you hold and cannot finish: it is open again for anyone to claim. A maintainer releases "
        "someone else's claim by naming them in `user`.",
        "released", "released {task} ({revision}); it is open again",
        (Argument("user", LOGIN, "Whose claim a maintainer releases, as `/release @user` does.", USER, "--user",
                  "LOGIN", pattern=LOGIN_PATTERN),),
    ),
    Verb(
        "assign", "Assign", "Make someone who may run the task its runner (maintainers)",
        "make someone a task's runner", "maintainers",
        "Make LOGIN the runner of OWNER/REPO#N, open or claimed (a claim held by someone else ends). LOGIN must be "
        "someone who may run the task.",
        "assign", "assign_task",
        "Make `user` (someone who may run the task) its runner, open or claimed: a claim someone else holds ends. "
        "Maintainers only.",
        "assigned to @{user}:", "assigned {task} to @{runner} ({revision})",
        (Argument("user", LOGIN, "Who becomes the runner: someone who may run the task, as `/assign @user` names "
                  "them.", USER, None, "@LOGIN", required=True, pattern=LOGIN_PATTERN),),
    ),
    Verb(
        "deliver", "Deliver", "Deliver the task with its evidence", "deliver a task you hold, with evidence",
        "agents",
        "Deliver OWNER/REPO#N: a summary and the evidence. The task then waits for a reviewer; a delivery lacking "
        "evidence the task requires is refused, naming what it lacks.",
        "deliver", "deliver_task",
        "Deliver a task you hold: a summary of what was done and its evidence. The task then waits for a reviewer; "
        "delivered is not accepted. A delivery that lacks evidence the task requires is refused, naming everything "
        "it lacks.",
        "delivered", "delivered {task} ({revision}); it waits for review",
        (
            Argument("summary", TEXT, "What was done, for the reviewer.", SUMMARY, "--summary", required=True,
                     shortest=1, longest=LONGEST_TEXT),
            Argument("branch", TEXT, "The branch holding the work.", "branch", "--branch", "B",
                     pattern=r"^[^\s~^:?*\[\\]{1,255}$"),
            Argument("commit", TEXT, "The commit delivered: its SHA, 7 to 40 hex digits.", "commit", "--commit",
                     "SHA", pattern=r"^[0-9a-fA-F]{7,40}$"),
            Argument("pr", NUMBER, "The pull request's number.", "pull_request", "--pr", "N", least=1,
                     largest=LARGEST_NUMBER),
            _lines("tests", "Test evidence: a CI run's address or test output.", "--tests", "T",
                   "tests"),
            _lines("screenshots", "A screenshot's address.", "--screenshot", "URL", "screenshots"),
        ),
    ),
    Verb(
        "accept", "Note", "Accept the delivery", "accept a delivered task", "reviewers",
        "Accept the delivery of OWNER/REPO#N: the work is done. Its runner cannot accept their own delivery.",
        "accept", "accept_task",
        "Accept a delivered task, as its reviewer: the work is done. Its runner cannot accept their own delivery.",
        "accepted", "accepted {task} ({revision})",
        (_text("note", "A note for the runner and the record.", "--note"),),
    ),
    Verb(
        "send-back", "Feedback", "Send the delivery back to its runner", "send a delivery back to its runner",
        "reviewers",
        "Send the delivery of OWNER/REPO#N back to its runner for another attempt, saying what is missing.",
        "send it back", "send_back_task",
        "Send a delivered task back to its runner for another attempt, with feedback saying what to change.",
        "sent back", "sent {task} back to @{runner} ({revision})",
        (_text("feedback", "What the runner should change.", "--feedback"),),
    ),
    Verb(
        "reopen", "Reason", "Reopen accepted work", "reopen accepted work", "reviewers",
        "Reopen OWNER/REPO#N after it was accepted: it is open again for anyone to claim.",
        "reopen", "reopen_task",
        "Reopen accepted work: it is open again for anyone to claim. Say why in `reason`.",
        "reopened", "reopened {task} ({revision}); it is open again",
        (_text("reason", "Why the work is reopened.", "--reason"),),
    ),
)  # fmt: skip

BY_NAME: dict[str, Verb] = {verb.name: verb for verb in VERBS}

__all__ = ["BY_NAME", "FLAG", "LINES", "LOGIN", "NUMBER", "SAID", "SUMMARY", "TEXT", "USER", "VERBS", "WORD",
           "Argument", "Verb"]  # fmt: skip
