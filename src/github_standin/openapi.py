"""GitHub's REST description, read: which operation a concrete path is (`routes`), and the subset of the
description that openapi-core is handed (`subset`), as of one API version and with the fixes `patch` makes.
Pure functions over the parsed JSON document; `github_standin.contract` uses them."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


# -- routing: concrete path -> operation -------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    method: str
    template: str
    operation_id: str
    pattern: re.Pattern[str]
    names: tuple[str, ...]
    # Sorts the most specific template first: more literal segments; then, at the first place two templates
    # differ, a literal before a parameter (/issues/comments before /issues/{issue_number}) and a whole-segment
    # parameter before one inside a segment (/compare/{basehead} before /compare/{base}...{head}, which
    # GitHub keeps for the same operation); then fewer parameters that may hold slashes.
    rank: tuple[int, tuple[int, ...], int]


_PARAM = re.compile(r"\{([^}]+)\}")


def _route(method: str, template: str, operation_id: str, multi_segment: frozenset[str]) -> Route:
    names: list[str] = []
    kinds: list[int] = []
    parts: list[str] = []
    multis = 0
    for segment in template.strip("/").split("/"):
        params = _PARAM.findall(segment)
        if not params:
            kinds.append(0)
            parts.append(re.escape(segment))
            continue
        whole = len(params) == 1 and segment == "{" + params[0] + "}"
        # GitHub marks the parameters that may hold slashes (`x-multi-segment`): file paths, branch names.
        multi = whole and params[0] in multi_segment
        multis += multi
        kinds.append(1 if whole else 2)
        regex = ""
        last = 0
        for match in _PARAM.finditer(segment):
            regex += re.escape(segment[last : match.start()])
            regex += "(.+)" if multi else "([^/]+)" if whole else "([^/]+?)"
            names.append(match.group(1))
            last = match.end()
        parts.append(regex + re.escape(segment[last:]))
    pattern = re.compile("/" + "/".join(parts))
    rank = (-kinds.count(0), tuple(kinds), multis)
    return Route(method, template, operation_id, pattern, tuple(names), rank)


def routes(document: Mapping[str, Any]) -> dict[str, list[Route]]:
    parameters = document.get("components", {}).get("parameters", {})
    by_method: dict[str, list[Route]] = {}
    for template, item in document["paths"].items():
        declared = [*item.get("parameters", [])]
        for method in HTTP_METHODS:
            if method in item:
                declared += item[method].get("parameters", [])
        multi = frozenset(
            p["name"] for p in (_resolve_parameter(parameters, d) for d in declared) if p.get("x-multi-segment")
        )
        for method in HTTP_METHODS:
            operation = item.get(method)
            if operation is not None:
                route = _route(method.upper(), template, operation["operationId"], multi)
                by_method.setdefault(route.method, []).append(route)
    for routes in by_method.values():
        routes.sort(key=lambda r: r.rank)
    return by_method


def _resolve_parameter(parameters: Mapping[str, Any], parameter: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = parameter.get("$ref")
    if isinstance(ref, str):
        resolved: Mapping[str, Any] = parameters[ref.rsplit("/", 1)[-1]]
        return resolved
    return parameter


# -- the subset of the description handed to openapi-core ---------------------------------------------


def subset(document: Mapping[str, Any], operations: Iterable[tuple[str, str]], version: str) -> dict[str, Any]:
    """The named operations and, transitively, every component they reference, as of API `version`.

    Examples are left out: a third of the size, and never validated.
    """
    paths: dict[str, Any] = {}
    for method, template in operations:
        item = document["paths"][template]
        target = paths.setdefault(template, {k: v for k, v in item.items() if k not in HTTP_METHODS})
        target[method.lower()] = item[method.lower()]
    paths = _without_examples(_as_of(copy.deepcopy(paths), version))
    components: dict[str, dict[str, Any]] = {}
    pending = list(_refs(paths))
    seen: set[str] = set()
    while pending:
        ref = pending.pop()
        if ref in seen:
            continue
        seen.add(ref)
        _, _, kind, name = ref.split("/", 3)
        node = _without_examples(_as_of(copy.deepcopy(document["components"][kind][name]), version))
        components.setdefault(kind, {})[name] = node
        pending.extend(_refs(node))
    return {
        "openapi": document["openapi"],
        "info": document["info"],
        "servers": document.get("servers", [{"url": "/"}]),
        "paths": paths,
        "components": components,
    }


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            yield ref
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _as_of(node: Any, version: str) -> Any:
    """Applies, in place, the changes GitHub made up to API `version`.

    The description is the oldest version's, and each object that later versions changed carries them as
    `x-github-breaking-changes`: JSON merge patches (RFC 7396) tagged with the version that made them.
    """
    if isinstance(node, dict):
        for change in node.pop("x-github-breaking-changes", []):
            if change["version"] <= version:
                _merge(node, change["patch"])
        for value in node.values():
            _as_of(value, version)
    elif isinstance(node, list):
        for value in node:
            _as_of(value, version)
    return node


def _merge(target: dict[str, Any], patch: Mapping[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict):
            current = target.get(key)
            if not isinstance(current, dict):
                current = target[key] = {}
            _merge(current, value)
        else:
            target[key] = copy.deepcopy(value)


def _without_examples(node: Any) -> Any:
    """Drops the `examples` of media types, parameters and headers: a third of the subset, never validated."""
    if isinstance(node, dict):
        if "schema" in node and isinstance(node.get("examples"), dict):
            del node["examples"]
        for key, value in node.items():
            # Inside `properties` a key is a field name, and a field may well be called `examples`.
            if key != "properties":
                _without_examples(value)
            elif isinstance(value, dict):
                for child in value.values():
                    _without_examples(child)
    elif isinstance(node, list):
        for value in node:
            _without_examples(value)
    return node


_ACCOUNTS = {"Simple User", "Enterprise"}  # the two kinds of account an App can be installed on


def patch(node: Any) -> list[str]:
    """Fixes, in place, what GitHub's description says but does not mean; returns what it changed.

    - `nullable: true` beside an `enum` without null: GitHub sends null (an issue's `state_reason`), and the
      OpenAPI 3.0 validator checks the enum even then. Null joins the enum.
    - a `oneOf` whose members are all nullable: null then matches every member, and `oneOf` wants exactly
      one (a validation error's `errors[].value`). It becomes an `anyOf`, which is what it means.
    - `nullable: true` beside a `oneOf`/`anyOf` (a commit's `author`, null when GitHub knows no account for
      the commit's e-mail): the validator applies `nullable` only beside a `type`, so null would match no
      member. A member that is only null joins them.
    - an `allOf` of a Simple User and an Enterprise (an installation's `account` in `GET /app/installations`):
      an account is one or the other, as the `installation` component says with an `anyOf`. It becomes one.
    """
    changed: list[str] = []

    def walk(value: Any, where: str) -> None:
        if isinstance(value, dict):
            every = value.get("allOf")
            if isinstance(every, list) and {m.get("title") for m in every if isinstance(m, dict)} == _ACCOUNTS:
                value["anyOf"] = value.pop("allOf")
                changed.append(f"{where}: allOf of a user and an enterprise made anyOf")
            enum = value.get("enum")
            if value.get("nullable") is True and isinstance(enum, list) and None not in enum:
                enum.append(None)
                changed.append(f"{where}: null added to the enum of a nullable field")
            for combined in ("oneOf", "anyOf"):
                members = value.get(combined)
                if value.get("nullable") is True and "type" not in value and isinstance(members, list):
                    members.append({"nullable": True, "enum": [None]})
                    changed.append(f"{where}: null added to the members of a nullable {combined}")
            members = value.get("oneOf")
            if (
                isinstance(members, list)
                and len(members) > 1
                and all(isinstance(m, dict) and m.get("nullable") is True for m in members)
            ):
                value["anyOf"] = value.pop("oneOf")
                changed.append(f"{where}: oneOf of nullable members made anyOf")
            for key, child in value.items():
                walk(child, f"{where}/{key}")
        elif isinstance(value, list):
            for index, child in enumerate(value):
                walk(child, f"{where}/{index}")

    walk(node, "#")
    return changed
