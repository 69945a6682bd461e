"""The request body on the wire (issue 6): orjson when installed, the standard encoder's meaning always.

Every property runs on both paths: with orjson (the `fast` extra, in the test extra) and with
the standard encoder alone (orjson hidden). Whatever the path, the bytes parse to what the
standard encoder would have sent, and what it refuses is refused.
"""

from __future__ import annotations

import datetime
import json
import math
import os
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolnexus
from toolnexus.http import wire

HAS_ORJSON = wire.orjson is not None
SETTINGS = settings(max_examples=200, deadline=None, derandomize=bool(os.environ.get("CI")))


@pytest.fixture(params=["orjson", "standard"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "orjson" and not HAS_ORJSON:
        pytest.skip("orjson is not installed (pip install -e '.[fast]')")
    if request.param == "standard":
        monkeypatch.setattr(wire, "orjson", None)
    yield request.param


def standard(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)  # past 64 bits too
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()  # any code point but lone surrogates
)
JSON_VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5), max_leaves=40
)


@SETTINGS
@given(value=JSON_VALUES)
def test_the_bytes_mean_what_the_standard_encoder_sends(value: Any) -> None:
    for hidden in (False, True):  # hypothesis and function-scoped fixtures do not mix: both paths here
        saved = wire.orjson
        if hidden:
            wire.orjson = None  # type: ignore[assignment]
        try:
            sent = wire.dumps(value)
        finally:
            wire.orjson = saved
        assert json.loads(sent) == json.loads(standard(value))
        sent.decode("utf-8")  # UTF-8, as the content-type says


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("where", ["top", "nested", "beside a null"])
def test_nan_and_infinity_are_refused_on_both_paths(path: str, bad: float, where: str) -> None:
    value: Any = {
        "top": bad,
        "nested": {"messages": [{"content": [1, {"x": bad}]}]},
        "beside a null": {"a": None, "b": [bad]},
    }[where]
    with pytest.raises(ValueError):
        wire.dumps(value)


@pytest.mark.parametrize(
    "value",
    [{1: "a", None: "b"}, [2**80], {"k": -(2**65)}],
    ids=["non-string keys", "a big integer", "a big negative integer"],
)
def test_what_orjson_cannot_write_is_left_to_the_standard_encoder(path: str, value: Any) -> None:
    assert wire.dumps(value) == standard(value)


@pytest.mark.parametrize("value", [datetime.datetime(2025, 1, 1), {"when": datetime.date(2025, 1, 1)}, "\ud800"])
def test_what_the_standard_encoder_refuses_is_refused(path: str, value: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        wire.dumps(value)


@pytest.mark.skipif(not HAS_ORJSON, reason="orjson is not installed")
def test_orjson_writes_a_body_without_null_values_and_defers_on_one() -> None:
    body = {"messages": [{"role": "user", "content": "Grüße, 東京 🚀"}], "schema": {"type": ["string", "null"]}}
    assert wire.dumps(body) == wire.orjson.dumps(body)  # "null" inside a string is not a null value
    with_null = {**body, "content": None}
    assert wire.dumps(with_null) == standard(with_null)


def test_the_client_refuses_a_body_with_nan_before_sending(path: str) -> None:
    import asyncio

    from toolnexus import TranslationError

    async def main() -> None:
        async with toolnexus.create_client("http://127.0.0.1:9/v1", "anthropic", "m", api_key="k") as client:
            await client.translate(
                [{"role": "user", "content": "hi"}],
                tools=[{"type": "function", "function": {"name": "f", "parameters": {"maximum": math.nan}}}],
            )

    with pytest.raises(TranslationError) as caught:
        asyncio.run(main())
    assert caught.value.path == "tools[0].function.parameters.maximum"
