"""What every dialect's `derive` promises (`dialects.base.DialectModule.derive`), checked for
each dialect of the registry: it never raises, and a payload read as JSON text (a record
read from a capture file) gives the facts the decoded payload gives.

Random objects rarely hold what a derivation reads, so they are built from the members
each dialect's `derive` reads (`MEMBERS`); a dialect not listed there gets all of them.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import derive_uncaught
from model_call_capture.dialects import DIALECTS, get_dialect

from .conftest import as_json_text, json_values

MEMBERS: dict[str, list[str]] = {
    "responses": [
        *("output", "usage", "type", "summary", "content", "text", "arguments", "input"),
        *("call_id", "name", "id", "model", "status", "incomplete_details", "reason"),
        *("input_tokens", "output_tokens", "input_tokens_details", "cached_tokens"),
    ],
    "chat": [
        *("choices", "message", "usage", "tool_calls", "function", "arguments", "id"),
        *("model", "index"),
    ],
    "messages": [
        *("id", "model", "stop_reason", "usage", "content", "type", "name", "input"),
        *("thinking", "input_tokens", "output_tokens", "cache_read_input_tokens"),
        "cache_creation_input_tokens",
    ],
}
"""The members each dialect's `derive` reads, for the random payloads."""

_ALL = sorted({member for members in MEMBERS.values() for member in members})


def _payloads(dialect: str, data: st.DataObject) -> tuple[Any, Any]:
    keys = st.sampled_from(MEMBERS.get(dialect, _ALL))
    values = json_values(keys)
    request = data.draw(st.none() | st.dictionaries(keys, values, max_size=3), label="request")
    response = data.draw(st.none() | st.dictionaries(keys, values, max_size=5), label="response")
    return request, response


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_derive_from_json_text_equals_derive_from_the_dicts(
    dialect: str, data: st.DataObject
) -> None:
    derive = get_dialect(dialect).derive
    request, response = _payloads(dialect, data)
    assert derive(as_json_text(request), as_json_text(response)) == derive(request, response)


@pytest.mark.parametrize("dialect", sorted(DIALECTS))
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_derive_never_raises(dialect: str, data: st.DataObject) -> None:
    # Outside any catch-all a dialect puts in derive: the net keeps a record alive, it must
    # not be what lets this pass (`derive_uncaught`).
    request, response = _payloads(dialect, data)
    derived = derive_uncaught(dialect, request, response)
    assert get_dialect(dialect).derive(request, response) == derived
