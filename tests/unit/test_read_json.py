"""`read_json` (src/baton/github/webhooks.py) reads what `json.loads` reads, to the same value, and refuses what it
refuses, with the same error: the webhook route and the decide lane use it for GitHub's payloads."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton.github.webhooks import read_json
from support.corpus import webhook_examples


def same(left: Any, right: Any) -> bool:
    """Equal, and of the same types all the way down (`1 == 1.0 == True` in Python, not in JSON)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return list(left) == list(right) and all(same(left[key], right[key]) for key in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, float) and math.isnan(left):
        return math.isnan(right)
    return bool(left == right)


def outcome(reader: Any, text: str) -> tuple[str, Any]:
    try:
        return "value", reader(text)
    except (ValueError, RecursionError) as error:
        return type(error).__name__, str(error)


def agree(text: str) -> None:
    ours, theirs = outcome(read_json, text), outcome(json.loads, text)
    assert ours[0] == theirs[0], (text[:80], ours, theirs)
    if ours[0] == "value":
        assert same(ours[1], theirs[1]), text[:80]
    else:
        assert ours[1] == theirs[1]


@pytest.mark.parametrize(
    "text",
    [
        '{"id": 18446744073709551616}',  # past 64 bits: an exact integer, not a float
        '{"id": -9223372036854775809, "n": 123456789012345678901234567890}',
        "1" * 5000,  # more digits than Python converts: ValueError
        "[" * 5000 + "]" * 5000,  # nested past the recursion limit
        '{"a": NaN}',
        '{"a": Infinity, "b": -Infinity}',
        "1e400",
        "-0.0",
        "0.1",
        "2.5e-308",
        '"\\ud800"',  # a lone surrogate, as GitHub can send in text people wrote
        '"\\udfff x \\ud83d\\ude00"',  # a lone low one, and a pair
        '"\u0000"',  # a raw control character in a string
        '"\\u0000"',
        '{"a": 1, "a": 2}',  # the last of a repeated key
        '{"a": 1} trailing',
        "\ufeff{}",  # a byte order mark
        "  {}  ",
        "",
        "[1, 2,]",
        "{'a': 1}",
        '{"a": "x\ny"}',
        "true",
        "null",
    ],
)
def test_what_json_loads_reads_or_refuses_read_json_reads_or_refuses_alike(text: str) -> None:
    agree(text)


def test_every_example_payload_of_github_reads_to_the_same_value() -> None:
    for examples in webhook_examples().values():
        for example in examples:
            agree(json.dumps(example))
            agree(json.dumps(example, ensure_ascii=False, indent=2))


values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(values, st.booleans())
def test_any_json_value_reads_to_the_same_value(value: Any, ascii_only: bool) -> None:
    agree(json.dumps(value, ensure_ascii=ascii_only))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list('{}[]":,0123456789.eE+-tfnrulsaN\\u \n\ud800'))))
def test_any_text_is_read_or_refused_alike(text: str) -> None:
    agree(text)
