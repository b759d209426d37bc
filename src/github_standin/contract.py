"""What GitHub accepts and answers, checked against GitHub's own descriptions.

The stand-in GitHub is only worth something while it behaves like the real one. This module checks every
request Baton sends it and every answer it gives against GitHub's official REST description (npm
`@octokit/openapi`), every 2xx answer also against the githubkit model Baton parses it with, and every
webhook payload it delivers against `@octokit/webhooks-schemas`.

The descriptions are test data, installed by `npm ci --prefix tests` (pinned in `tests/package.json`), and
the validators (`openapi-core`, `jsonschema`) come with the `test` extra. Nothing of either is imported
until a check is asked for, so `baton demo` runs on a machine that has neither: `Contract.load()` and
`webhook_problems()` then raise `ContractUnavailable` and the caller skips validation.

Only the operations in `OPERATIONS` and the components they reference (300 kB of the 13 MB) are handed to
openapi-core, as GitHub answers them for API_VERSION and with a few patches for what openapi-core reads
differently from GitHub (see `openapi.patch`). A call to any other operation is reported, not waved through.
"""

from __future__ import annotations

import datetime
import functools
import json
import os
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import openapi

if TYPE_CHECKING:
    import jsonschema.exceptions
    import openapi_core
    import pydantic

INSTALL_COMMAND = "npm ci --prefix tests"
PIP_COMMAND = "pip install -e '.[test]'"
OPENAPI_PACKAGE = "@octokit/openapi"
OPENAPI_FILE = Path("@octokit") / "openapi" / "generated" / "api.github.com.json"
WEBHOOK_SCHEMAS_PACKAGE = "@octokit/webhooks-schemas"
WEBHOOK_SCHEMAS_FILE = Path("@octokit") / "webhooks-schemas" / "schema.json"
# githubkit 0.16.1 sends this `X-GitHub-Api-Version` and parses answers with the models generated for it;
# the contract describes GitHub as it answers that version.
API_VERSION = "2026-03-10"
GITHUBKIT_MODELS_MODULE = "githubkit_schemas.v2026_03_10.models"
TOKEN_EXPIRY_FORMAT = "%Y-%m-%dT%H:%M:%SZ"

# Every operation the stand-in serves: what Baton calls, and what it is about to call.
OPERATIONS: tuple[tuple[str, str], ...] = (
    ("POST", "/app/installations/{installation_id}/access_tokens"),
    ("GET", "/app"),
    ("POST", "/app-manifests/{code}/conversions"),
    ("GET", "/app/hook/deliveries"),
    ("GET", "/app/installations"),
    ("GET", "/installation/repositories"),
    ("GET", "/repos/{owner}/{repo}/installation"),
    ("POST", "/app/hook/deliveries/{delivery_id}/attempts"),
    ("GET", "/repos/{owner}/{repo}"),
    ("GET", "/repos/{owner}/{repo}/branches/{branch}"),
    ("POST", "/repos/{owner}/{repo}/check-runs"),
    ("PATCH", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    ("GET", "/repos/{owner}/{repo}/commits/{ref}"),
    ("GET", "/repos/{owner}/{repo}/commits/{ref}/check-runs"),
    ("GET", "/repos/{owner}/{repo}/collaborators"),
    ("GET", "/repos/{owner}/{repo}/collaborators/{username}/permission"),
    ("GET", "/repos/{owner}/{repo}/collaborators/{username}"),
    ("GET", "/repos/{owner}/{repo}/compare/{basehead}"),
    ("GET", "/repos/{owner}/{repo}/contents/{path}"),
    ("GET", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("PATCH", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("POST", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"),
    ("GET", "/repos/{owner}/{repo}/issues"),
    ("POST", "/repos/{owner}/{repo}/issues"),
    ("GET", "/repos/{owner}/{repo}/issues/{issue_number}"),
    ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/assignees"),
    ("DELETE", "/repos/{owner}/{repo}/issues/{issue_number}/assignees"),
    ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/timeline"),
    ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/labels"),
    ("DELETE", "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}"),
    ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/reactions"),
    ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/dependencies/blocked_by"),
    ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/dependencies/blocked_by"),
    ("DELETE", "/repos/{owner}/{repo}/issues/{issue_number}/dependencies/blocked_by/{issue_id}"),
    ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/dependencies/blocking"),
    ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/sub_issues"),
    ("POST", "/repos/{owner}/{repo}/issues/{issue_number}/sub_issues"),
    ("DELETE", "/repos/{owner}/{repo}/issues/{issue_number}/sub_issue"),
    ("GET", "/repos/{owner}/{repo}/issues/{issue_number}/parent"),
    ("POST", "/repos/{owner}/{repo}/labels"),
    ("GET", "/repos/{owner}/{repo}/labels/{name}"),
    ("GET", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("GET", "/orgs/{org}/teams/{team_slug}/memberships/{username}"),
    ("GET", "/user"),
    ("GET", "/user/installations"),
    ("GET", "/user/installations/{installation_id}/repositories"),
)

# operationId -> the type githubkit parses its 2xx answer into (names in GITHUBKIT_MODELS_MODULE; `|`
# separates the members of a union, `list[X]` is a JSON array of X (`list[X | Y]` of either), `None` no body
# at all), as each githubkit method declares it.
GITHUBKIT_MODELS: Mapping[str, str] = {
    "apps/create-installation-access-token": "InstallationToken",
    "apps/get-authenticated": "Integration",
    "repos/check-collaborator": "None",
    "repos/list-collaborators": "list[Collaborator]",
    "apps/create-from-manifest": "AppManifestsCodeConversionsPostResponse201",
    "apps/list-webhook-deliveries": "list[HookDeliveryItem]",
    "apps/redeliver-webhook-delivery": "AppHookDeliveriesDeliveryIdAttemptsPostResponse202",
    "apps/list-installations": "list[Installation]",
    "apps/list-repos-accessible-to-installation": "InstallationRepositoriesGetResponse200",
    "apps/get-repo-installation": "Installation",
    "repos/get": "FullRepository",
    "repos/get-branch": "BranchWithProtection",
    "checks/create": "CheckRun",
    "checks/update": "CheckRun",
    "checks/list-for-ref": "ReposOwnerRepoCommitsRefCheckRunsGetResponse200",
    "repos/get-collaborator-permission-level": "RepositoryCollaboratorPermission",
    "repos/compare-commits-with-basehead": "CommitComparison",
    "repos/get-commit": "Commit",
    "repos/get-content": "list[ContentDirectoryItems] | ContentFile | ContentSymlink | ContentSubmodule",
    "issues/get-comment": "IssueComment",
    "issues/update-comment": "IssueComment",
    "reactions/create-for-issue-comment": "Reaction",
    "issues/get": "Issue",
    "issues/list-for-repo": "list[Issue]",
    "issues/list-dependencies-blocked-by": "list[Issue]",
    "issues/add-blocked-by-dependency": "Issue",
    "issues/remove-dependency-blocked-by": "Issue",
    "issues/list-dependencies-blocking": "list[Issue]",
    "issues/list-sub-issues": "list[Issue]",
    "issues/add-sub-issue": "Issue",
    "issues/remove-sub-issue": "Issue",
    "issues/get-parent": "Issue",
    "issues/create": "Issue",
    "issues/add-assignees": "Issue",
    "issues/remove-assignees": "Issue",
    "issues/list-comments": "list[IssueComment]",
    # githubkit declares a union of every timeline event; the stand-in serves closes, reopenings and mentions
    "issues/list-events-for-timeline": "list[StateChangeIssueEvent | TimelineCrossReferencedEvent]",
    "issues/create-comment": "IssueComment",
    "issues/add-labels": "list[Label]",
    "issues/remove-label": "list[Label]",
    "reactions/create-for-issue": "Reaction",
    "issues/create-label": "Label",
    "issues/get-label": "Label",
    "pulls/get": "PullRequest",
    "teams/get-membership-for-user-in-org": "TeamMembership",
    "users/get-authenticated": "PrivateUser | PublicUser",
    "apps/list-installations-for-authenticated-user": "UserInstallationsGetResponse200",
    "apps/list-installation-repos-for-authenticated-user": "UserInstallationsInstallationIdRepositoriesGetResponse200",
}

_DEFAULT_ROOT = Path(__file__).resolve().parents[2] / "tests" / "node_modules"
CORPUS_DIR_VARIABLE = "BATON_CORPUS_DIR"  # where the npm packages are, when not in tests/node_modules
_MAX_SHOWN = 80  # characters of an offending value quoted in a problem


def corpus_root() -> Path:
    """The folder holding the npm packages: `BATON_CORPUS_DIR` when set, else this repository's tests/node_modules."""
    named = os.environ.get(CORPUS_DIR_VARIABLE)
    return Path(named) if named else _DEFAULT_ROOT


class ContractUnavailable(Exception):
    """The descriptions (npm) or the validators (the `test` extra) are not installed here."""


# -- the request and response objects openapi-core reads -----------------------------------------------


@dataclass
class _Request:
    host_url: str
    path: str
    path_pattern: str
    method: str
    body: bytes | None
    content_type: str
    parameters: Any = field(default=None)


@dataclass
class _Response:
    status_code: int
    content_type: str
    headers: Any
    data: bytes | None


# -- turning validator errors into short sentences ----------------------------------------------------


def _where(root: str, path: Iterable[Any]) -> str:
    text = root
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def _shown(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, bytes | bytearray) else repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 1] + "…"


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else type(value).__name__


def _describe(error: jsonschema.exceptions.ValidationError, root: str) -> list[str]:
    """One sentence per thing wrong: `body.user.login is required`, `body.color is integer, expected string`."""
    from jsonschema.exceptions import best_match

    where = _where(root, error.absolute_path)
    kind = str(error.validator)
    instance = error.instance
    expected: Any = error.validator_value
    if kind == "required" and isinstance(instance, dict):
        missing = [name for name in expected if name not in instance]
        return [f"{where}.{name} is required" for name in missing] or [f"{where}: {error.message}"]
    if kind == "additionalProperties" and isinstance(instance, dict):
        schema: Any = error.schema
        allowed = set(schema.get("properties", {}))
        extra = [name for name in instance if name not in allowed]
        return [f"{where}.{name} is not allowed here" for name in extra] or [f"{where}: {error.message}"]
    if kind == "type":
        return [f"{where} is {_json_type(instance)}, expected {expected}"]
    if kind == "enum":
        return [f"{where} is {_shown(instance)}, expected one of {_shown(expected)}"]
    if kind == "const":
        return [f"{where} is {_shown(instance)}, expected {_shown(expected)}"]
    if kind == "format":
        return [f"{where} is {_shown(instance)}, not a valid {expected}"]
    if kind in ("oneOf", "anyOf") and error.context:
        # The member that came closest tells more than "not valid under any of the given schemas".
        closest = best_match(error.context)
        if closest is not None:
            return _describe(closest, root)
    if kind == "oneOf" and not error.context:
        return [f"{where} matches more than one of the allowed shapes"]
    return [f"{where}: {error.message if len(error.message) <= 2 * _MAX_SHOWN else kind + ' failed'}"]


def _schema_problems(errors: Iterable[Exception], root: str) -> list[str]:
    from jsonschema.exceptions import ValidationError

    problems: list[str] = []
    for error in errors:
        described = _describe(error, root) if isinstance(error, ValidationError) else [f"{root}: {error}"]
        problems += [line for line in described if line not in problems]
    return problems


def _openapi_problems(exc: BaseException, side: str) -> list[str]:
    """Sentences for one openapi-core error: schema errors in detail, the rest as openapi-core words them."""
    from openapi_core.deserializing.exceptions import DeserializeError
    from openapi_core.templating.media_types.exceptions import MediaTypeNotFound
    from openapi_core.validation.request.exceptions import (
        MissingParameterError,
        MissingRequiredRequestBody,
        ParameterValidationError,
    )
    from openapi_core.validation.response.exceptions import HeaderValidationError, MissingData, MissingHeaderError
    from openapi_core.validation.schemas.exceptions import InvalidSchemaValue

    if isinstance(exc, MissingParameterError):
        return [f"{exc.location} parameter {exc.name} is required"]
    if isinstance(exc, MissingRequiredRequestBody):
        return ["body is required"]
    if isinstance(exc, MissingData):
        return ["body is missing"]
    if isinstance(exc, MissingHeaderError):
        return [f"header {exc.name} is required"]
    if isinstance(exc, MediaTypeNotFound):
        return [f"content type {exc.mimetype!r} is not one GitHub answers with (it uses {exc.availableMimetypes})"]
    root = "body"
    if isinstance(exc, ParameterValidationError):
        root = f"{exc.location}.{exc.name}"
    elif isinstance(exc, HeaderValidationError) and hasattr(exc, "name"):
        root = f"header.{exc.name}"
    cause = exc.__cause__
    if isinstance(cause, InvalidSchemaValue):
        return _schema_problems(cause.schema_errors, root)
    if isinstance(cause, DeserializeError):
        return [f"{root} is not valid {'JSON' if root == 'body' else 'for its type'}: {cause}"]
    return [f"{root}: {exc}" if side == "request" else str(exc)]


# -- the contract -------------------------------------------------------------------------------------


def _package_file(root: Path | None, relative: Path, package: str) -> Path:
    path = (root if root is not None else corpus_root()) / relative
    if not path.is_file():
        raise ContractUnavailable(f"{package} is not installed ({path} is missing): run `{INSTALL_COMMAND}`")
    return path


def _require_validators() -> None:
    try:
        import jsonschema  # noqa: F401
        import jsonschema_rs  # noqa: F401
        import openapi_core  # noqa: F401
    except ImportError as exc:
        raise ContractUnavailable(f"the validators are not installed ({exc.name}): run `{PIP_COMMAND}`") from exc


@functools.cache
def _githubkit_adapter(spec: str) -> pydantic.TypeAdapter[Any]:
    """The pydantic adapter for one GITHUBKIT_MODELS entry, as githubkit itself builds it to parse answers."""
    import importlib
    import operator

    from pydantic import TypeAdapter

    models = importlib.import_module(GITHUBKIT_MODELS_MODULE)

    def union(names: str) -> Any:
        return functools.reduce(operator.or_, [getattr(models, name.strip()) for name in names.split("|")])

    members: list[Any] = []
    for member in (part.strip() for part in re.split(r"\|(?![^\[]*\])", spec)):  # the `|` outside `list[…]`
        listed = re.fullmatch(r"list\[([\w |]+)\]", member)
        members.append(list[union(listed.group(1))] if listed else getattr(models, member))  # type: ignore[misc]
    return TypeAdapter(functools.reduce(operator.or_, members))


# Headers no operation of GitHub's description declares, and that differ between otherwise equal requests.
_UNDESCRIBED_HEADERS = frozenset({"authorization", "host", "content-length", "user-agent", "connection"})


class Contract:
    """GitHub's REST description for the operations in OPERATIONS, loaded into openapi-core once a process."""

    def __init__(self, document: Mapping[str, Any], description: Path) -> None:
        from openapi_core import Config, OpenAPI

        self.description = description
        self._routes = openapi.routes(document)
        subset = openapi.subset(document, OPERATIONS, API_VERSION)
        self.patches = openapi.patch(subset)
        self.subset = subset  # what openapi-core was given, for inspection
        self.covered = frozenset(
            subset["paths"][template][method.lower()]["operationId"] for method, template in OPERATIONS
        )
        self._host = subset["servers"][0]["url"].rstrip("/")
        self._basic_error = subset["components"]["schemas"].get("basic-error")
        # openapi-core's self-check of the description would double the load time; the subset passes it,
        # and tests/system/test_standin_contract.py runs it once.
        config = Config(spec_validator_cls=None)  # type: ignore[arg-type]  # None is openapi-core's documented "off"
        self._openapi: openapi_core.OpenAPI = OpenAPI.from_dict(subset, config=config)
        self._checked: dict[tuple[Any, ...], tuple[str, ...]] = {}  # a request or an answer -> its problems

    @classmethod
    def load(cls, root: Path | None = None) -> Contract:
        """The contract read from `root` (default: `corpus_root()`), cached per process."""
        path = _package_file(root, OPENAPI_FILE, OPENAPI_PACKAGE)
        _require_validators()
        return _load_contract(path.resolve())

    # -- routing

    def _match(self, method: str, path: str) -> tuple[openapi.Route, dict[str, str]] | None:
        for route in self._routes.get(method.upper(), []):
            found = route.pattern.fullmatch(path)
            if found is not None:
                values = [urllib.parse.unquote(value) for value in found.groups()]
                return route, dict(zip(route.names, values, strict=True))
        return None

    def operation(self, method: str, path: str) -> str | None:
        """The operationId GitHub gives `METHOD path` (a concrete, percent-encoded path), or None if none."""
        matched = self._match(method, path)
        return matched[0].operation_id if matched is not None else None

    def _covered(self, method: str, path: str, side: str) -> tuple[openapi.Route, dict[str, str]] | str:
        matched = self._match(method, path)
        if matched is None:
            return f"{method.upper()} {path} {side}: GitHub has no such operation"
        if matched[0].operation_id not in self.covered:
            return f"{matched[0].operation_id} {side}: not in the contract (add it to contract.OPERATIONS)"
        return matched

    def _request(
        self,
        route: openapi.Route,
        params: Mapping[str, str],
        query: Mapping[str, str],
        headers: Mapping[str, str],
        body: bytes | None,
    ) -> _Request:
        from openapi_core.datatypes import RequestParameters
        from werkzeug.datastructures import Headers, ImmutableMultiDict

        header_map = Headers(list(headers.items()))
        content_type = header_map.get("content-type", "application/json" if body else "")
        return _Request(
            host_url=self._host,
            path=route.template,
            path_pattern=route.template,
            method=route.method.lower(),
            body=body or None,
            content_type=content_type.lower(),
            parameters=RequestParameters(
                path=dict(params), query=ImmutableMultiDict(list(query.items())), header=header_map
            ),
        )

    # -- the checks

    def request_problems(
        self, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str], body: bytes | None
    ) -> list[str]:
        """What is wrong with a request for GitHub (empty: nothing): parameters, query and JSON body. Requests
        repeat (the same label added on every claim): each distinct one is checked once."""
        kept = tuple(sorted((k.lower(), v) for k, v in headers.items() if k.lower() not in _UNDESCRIBED_HEADERS))
        seen = (method.upper(), path, tuple(sorted(query.items())), kept, body)
        return self._once(seen, lambda: self._request_problems(method, path, query, headers, body))

    def _once(self, seen: tuple[Any, ...], problems: Callable[[], list[str]]) -> list[str]:
        """`problems()` of a request or answer, worked out the first time it is `seen`."""
        known = self._checked.get(seen)
        if known is None:
            known = self._checked[seen] = tuple(problems())
            if len(self._checked) > 10_000:
                self._checked.clear()
        return list(known)

    def _request_problems(
        self, method: str, path: str, query: Mapping[str, str], headers: Mapping[str, str], body: bytes | None
    ) -> list[str]:
        covered = self._covered(method, path, "request")
        if isinstance(covered, str):
            return [covered]
        route, params = covered
        label = f"{route.operation_id} request"
        request = self._request(route, params, query, headers, body)
        problems = [
            f"{label}: {line}"
            for exc in self._openapi.request_validator.iter_errors(request)
            for line in _openapi_problems(exc, "request")
        ]
        declared = self._query_parameters(route)
        problems += [
            f"{label}: query.{name} is not a parameter of this operation" for name in query if name not in declared
        ]
        version = request.parameters.header.get("x-github-api-version")
        if version is not None and version != API_VERSION:
            # GitHub answers each version differently, and the stand-in answers as API_VERSION.
            problems.append(
                f"{label}: header X-GitHub-Api-Version is {version!r}, the contract describes {API_VERSION}"
            )
        return problems

    def _query_parameters(self, route: openapi.Route) -> set[str]:
        spec = self._openapi.spec / "paths" / route.template
        declared: list[Any] = [*spec.get("parameters", [])]
        declared += (spec / route.method.lower()).get("parameters", [])
        return {p["name"] for p in declared if p["in"] == "query"}

    def response_problems(
        self, method: str, path: str, status: int, headers: Mapping[str, str], body: bytes
    ) -> list[str]:
        """What is wrong with GitHub's (the stand-in's) answer to `METHOD path`; for 2xx, githubkit's view too.
        Answers repeat (the same permission, the same labels): each distinct one is checked once."""
        seen = (method.upper(), path, status, tuple(sorted(headers.items())), body)
        return self._once(seen, lambda: self._response_problems(method, path, status, headers, body))

    def _response_problems(
        self, method: str, path: str, status: int, headers: Mapping[str, str], body: bytes
    ) -> list[str]:
        from openapi_core.templating.responses.exceptions import ResponseNotFound
        from werkzeug.datastructures import Headers

        covered = self._covered(method, path, "response")
        if isinstance(covered, str):
            return [covered]
        route, params = covered
        label = f"{route.operation_id} response {status}"
        header_map = Headers(list(headers.items()))
        request = self._request(route, params, {}, {}, None)
        response = _Response(
            status_code=status,
            content_type=header_map.get("content-type", "application/json" if body else "").lower(),
            headers=header_map,
            data=body or None,
        )
        problems: list[str] = []
        for exc in self._openapi.response_validator.iter_errors(request, response):
            if isinstance(exc, ResponseNotFound):
                if 200 <= status < 300:
                    problems.append(f"{label}: GitHub does not answer this operation with {status}")
                else:
                    # GitHub answers any call with errors it does not list (rate limits, outages): they
                    # are fine, as long as they look like GitHub's errors.
                    problems += [f"{label}: {line}" for line in self._error_problems(body)]
                continue
            problems += [f"{label}: {line}" for line in _openapi_problems(exc, "response")]
        if 200 <= status < 300 and route.operation_id in GITHUBKIT_MODELS:
            problems += self._githubkit_problems(route.operation_id, label, body)
        return problems

    def _error_problems(self, body: bytes) -> list[str]:
        from openapi_schema_validator import OAS30Validator

        if self._basic_error is None or not body:
            return []
        try:
            value = json.loads(body)
        except ValueError:
            return ["body is not JSON (GitHub's errors are JSON objects)"]
        return _schema_problems(OAS30Validator(self._basic_error).iter_errors(value), "body")

    def _githubkit_problems(self, operation_id: str, label: str, body: bytes) -> list[str]:
        import pydantic

        spec = GITHUBKIT_MODELS[operation_id]
        if spec == "None":  # an answer without a body (204): githubkit reads nothing
            return []
        try:
            parsed = _githubkit_adapter(spec).validate_json(body)
        except pydantic.ValidationError as exc:
            problems = []
            for error in exc.errors(include_url=False):
                problems.append(f"{label} (githubkit {spec}): {_where('body', error['loc'])}: {error['msg']}")
            return problems[:20]
        if operation_id == "apps/create-installation-access-token":
            # githubkit's App auth reads the expiry in exactly this format, and fails on any other.
            try:
                datetime.datetime.strptime(parsed.expires_at, TOKEN_EXPIRY_FORMAT)
            except ValueError:
                shown = _shown(parsed.expires_at)
                return [f"{label} (githubkit App auth): body.expires_at is {shown}, not in {TOKEN_EXPIRY_FORMAT}"]
        return []


@functools.cache
def _load_contract(description: Path) -> Contract:
    document = json.loads(description.read_text(encoding="utf-8"))
    return Contract(document, description)


# -- webhooks -----------------------------------------------------------------------------------------


class _WebhookSchemas:
    def __init__(self, definitions: Mapping[str, Any]) -> None:
        self.definitions = definitions
        self._validators: dict[str, Any] = {}
        self._fast: dict[str, Any] = {}

    def name(self, event: str, action: Any) -> str | list[str] | None:
        """The definition for `event` with `action`; the event's actions if `action` is not one of them."""
        grouped = self.definitions.get(f"{event}_event")
        if grouped is not None:
            actions = [ref["$ref"].rsplit("$", 1)[-1] for ref in grouped.get("oneOf", [])]
            return f"{event}${action}" if action in actions else actions
        return f"{event}$event" if f"{event}$event" in self.definitions else None

    def validator(self, name: str) -> Any:
        from jsonschema import Draft7Validator, FormatChecker

        if name not in self._validators:
            # jsonschema checks a format only when an optional package for it happens to be installed; the
            # checks here are the same everywhere: date-time, and a URI has at least a scheme (without that
            # check, an empty `environment_url` matches both shapes a deployment status allows).
            formats = FormatChecker(formats=("date-time",))
            formats.checks("uri")(_has_scheme)
            document = {"$ref": f"#/definitions/{name}", "definitions": self.definitions}
            self._validators[name] = Draft7Validator(document, format_checker=formats)
        return self._validators[name]

    def accepts(self, name: str, payload: Mapping[str, Any]) -> bool:
        """Whether the payload is valid for definition `name`, checked by jsonschema-rs: about 300 times faster
        than `validator(name)` (3 ms an issue comment), which words the problems once this says there are some.
        It checks every format jsonschema-rs knows, so it accepts nothing `validator(name)` refuses
        (tests/system/test_standin_contract.py holds it to that over GitHub's example payloads)."""
        import jsonschema_rs

        if name not in self._fast:
            document = {"$ref": f"#/definitions/{name}", "definitions": self.definitions}
            self._fast[name] = jsonschema_rs.Draft7Validator(
                document, validate_formats=True, formats={"uri": _has_scheme}
            )
        return bool(self._fast[name].is_valid(payload))


def _has_scheme(value: object) -> bool:
    return not isinstance(value, str) or bool(urllib.parse.urlsplit(value).scheme)


# Events @octokit/webhooks-schemas does not have, checked against GitHub's REST description instead: its
# components `webhook-<event>-<action>` (dashes for underscores), OpenAPI 3.0 schemas, with `openapi.patch`.
DESCRIBED_WEBHOOKS = ("issue_dependencies", "sub_issues")


@functools.cache
def _described_webhook_validator(description: Path, name: str) -> Any:
    from jsonschema import FormatChecker
    from openapi_schema_validator import OAS30Validator

    components = json.loads(description.read_text(encoding="utf-8"))["components"]
    openapi.patch(components)  # what the description says but does not mean, as for the REST answers
    if name not in components["schemas"]:
        return None
    formats = FormatChecker(formats=("date-time",))
    formats.checks("uri")(_has_scheme)
    return OAS30Validator({"$ref": f"#/components/schemas/{name}", "components": components}, format_checker=formats)


def _described_webhook_problems(
    event: str, action: Any, payload: Mapping[str, Any], label: str, root: Path | None
) -> list[str]:
    description = _package_file(root, OPENAPI_FILE, OPENAPI_PACKAGE).resolve()
    name = f"webhook-{event}-{action}".replace("_", "-")
    validator = _described_webhook_validator(description, name) if isinstance(action, str) else None
    if validator is None:
        return [f"{label}: {OPENAPI_PACKAGE} describes no {event} webhook with action {action!r}"]
    return [f"{label}: {line}" for line in _schema_problems(validator.iter_errors(dict(payload)), "payload")]


@functools.cache
def _webhook_schemas(path: Path) -> _WebhookSchemas:
    document = json.loads(path.read_text(encoding="utf-8"))
    return _WebhookSchemas(document["definitions"])


def _without_newer_events(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """The payload with the events its installation subscribes to left out where the webhook schemas predate
    them (`DESCRIBED_WEBHOOKS`: GitHub's REST description names them, and its `installation.events` takes any
    name); the rest of the list is checked as the schemas have it."""
    installation = payload.get("installation")
    events = installation.get("events") if isinstance(installation, Mapping) else None
    if not isinstance(installation, Mapping) or not isinstance(events, list):
        return payload
    known = [one for one in events if one not in DESCRIBED_WEBHOOKS]
    return payload if len(known) == len(events) else {**payload, "installation": {**installation, "events": known}}


# Fields of a webhook's issue objects that GitHub's REST description gives (`webhook-issues-labeled` …) and the
# webhook schemas predate: left out before the schemas check the rest.
NEWER_ISSUE_FIELDS = ("issue_dependencies_summary", "sub_issues_summary")


def _without_newer_fields(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    def plain(issue: Any) -> Any:
        if not isinstance(issue, Mapping):
            return issue
        return {name: value for name, value in issue.items() if name not in NEWER_ISSUE_FIELDS}

    result = dict(payload)
    if "issue" in result:
        result["issue"] = plain(result["issue"])
    changes = result.get("changes")
    if isinstance(changes, Mapping) and "new_issue" in changes:
        result["changes"] = {**changes, "new_issue": plain(changes["new_issue"])}
    return result


def webhook_problems(event: str, payload: Mapping[str, Any], root: Path | None = None) -> list[str]:
    """What is wrong with a webhook payload for `event` (the `X-GitHub-Event` value); empty: nothing."""
    path = _package_file(root, WEBHOOK_SCHEMAS_FILE, WEBHOOK_SCHEMAS_PACKAGE)
    _require_validators()
    schemas = _webhook_schemas(path.resolve())
    action = payload.get("action")
    label = f"{event}.{action} webhook" if isinstance(action, str) else f"{event} webhook"
    name = schemas.name(event, action)
    if name is None and event in DESCRIBED_WEBHOOKS:
        return _described_webhook_problems(event, action, payload, label, root)
    if name is None:
        return [f"{label}: {WEBHOOK_SCHEMAS_PACKAGE} knows no event {event!r}"]
    if isinstance(name, list):
        return [f"{label}: payload.action is {_shown(action)}, expected one of {_shown(name)}"]
    payload = _without_newer_fields(_without_newer_events(payload))
    if schemas.accepts(name, payload):
        return []
    errors = schemas.validator(name).iter_errors(dict(payload))
    return [f"{label}: {line}" for line in _schema_problems(errors, "payload")]
