"""`translate_request` given the request's body (JSON text, as bytes or str): decoded by the engine's strict parse,
which is its check, then translated as the decoded dict is, with no second pass over it."""

from __future__ import annotations

import json
from typing import Any, NoReturn

import pytest

import toolnexus
from support.cases import request_cases, request_outcome
from toolnexus import TranslationError, translate_request

CASES = request_cases(toolnexus.providers())
REQUEST = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0.5}


@pytest.mark.parametrize(("provider", "name", "request_", "options"), CASES, ids=[f"{c[0]}/{c[1]}" for c in CASES])
def test_a_body_translates_as_its_decoded_request(
    provider: str, name: str, request_: dict[str, Any], options: dict[str, Any]
) -> None:
    """Every case file's request (any source format), as bytes and as str: the dict's body and notes, or its
    error at the same path with the same words."""
    text = json.dumps(request_)
    expected = request_outcome(provider, request_, options)
    assert request_outcome(provider, text.encode(), options) == expected
    assert request_outcome(provider, text, options) == expected


def test_a_body_is_checked_by_its_parse_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The body's strict parse is its check: the whole-request check a dict gets is not run on it."""

    def check(*args: Any) -> NoReturn:
        raise AssertionError("a decoded body was checked again")

    for name in ("checked", "read_clean"):  # the whole check, or the batch of what the transcript leaves
        monkeypatch.setattr(f"toolnexus.translate.inbound.{name}", check)
    assert translate_request("anthropic", json.dumps(REQUEST).encode())["temperature"] == 0.5
    with pytest.raises(AssertionError):
        translate_request("anthropic", REQUEST)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b'{"model": "m",\n  "messages": [', "is not valid JSON (Expecting value: line 2 column 16 (char 30))"),
        ("", "is not valid JSON (Expecting value: line 1 column 1 (char 0))"),
        ('{"model": "sk-secret" "m"}', "is not valid JSON (Expecting ',' delimiter: line 1 column 23 (char 22))"),
        (b"\xff\xfe{", "is not valid JSON ("),
        (b'[{"model": "m"}]', "the request must be an object, got list"),
        ('"sk-secret"', "the request must be an object, got str"),
    ],
)
@pytest.mark.parametrize("source", ["openai", "anthropic", "openai-responses"])
def test_a_body_that_is_not_a_json_object_is_refused_at_the_top(body: bytes | str, message: str, source: str) -> None:
    """Text that is not JSON: the decoder's line and column, nothing of the text; JSON of something else: its kind."""
    with pytest.raises(TranslationError) as info:
        translate_request("gemini", body, source=source)
    assert info.value.path == "" and message in str(info.value)
    assert "sk-secret" not in str(info.value)
