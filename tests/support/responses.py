"""OpenAI Responses as a source format: the openai SDK's judges of the requests read and of what toolnexus writes
back (a `Response`, each stream event), and the SDK's own stream accumulator over a stream."""

from __future__ import annotations

import random
import typing
from typing import Any

from deepdiff import DeepDiff
from openai import omit
from openai.lib.streaming.responses import ResponseStreamState
from openai.types.responses import Response, ResponseStreamEvent
from pydantic import BaseModel

from support.judges import RESPONSES_REQUEST, judge
from support.sse_encoders import ENCODERS, data_of, framing_of

# The event union's members by their `type` literal: a failing event is judged by its own type alone.
EVENT_TYPES: dict[str, type[BaseModel]] = {
    typing.get_args(cls.model_fields["type"].annotation)[0]: cls
    for cls in typing.get_args(typing.get_args(ResponseStreamEvent)[0])
}


def unknown_keys(value: Any, at: str = "") -> list[str]:
    """Where a validated value holds a key its SDK model does not declare (the openai models allow extra keys:
    this walk is what makes them refuse one)."""
    out: list[str] = []
    if isinstance(value, BaseModel):
        out += [f"{at}.{key}" for key in value.model_extra or {}]
        for name in type(value).model_fields:
            out += unknown_keys(getattr(value, name), f"{at}.{name}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            out += unknown_keys(item, f"{at}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            out += unknown_keys(item, f"{at}.{key}")
    return out


def judge_responses_request(request: dict[str, Any]) -> None:
    """The input is a real Responses request: the SDK's ResponseCreateParams keeps every key of it, strictly."""
    judge(RESPONSES_REQUEST, request)


def judge_response(answer: dict[str, Any]) -> Response:
    """A whole answer is an SDK `Response` (strict), every key of it declared, and the SDK's model says back
    exactly the answer (no value coerced)."""
    model = Response.model_validate(answer, strict=True)
    assert not unknown_keys(model), unknown_keys(model)
    diff = DeepDiff(answer, model.model_dump(mode="json", exclude_unset=True), ignore_numeric_type_changes=True)
    assert not diff, diff.pretty()  # created_at: a float in the SDK
    return model


def judge_responses_event(event: dict[str, Any]) -> BaseModel:
    """A stream event is the SDK's event of its `type` (strict), every key of it declared."""
    cls = EVENT_TYPES.get(event.get("type", ""))
    assert cls is not None, f"not a Responses stream event type: {event.get('type')!r}"
    model = cls.model_validate(event, strict=True)
    assert not unknown_keys(model), unknown_keys(model)
    return model


def sdk_accumulates(events: list[dict[str, Any]]) -> Response:
    """The Response the openai SDK's own stream accumulator builds from the events (it asserts each delta lands
    on an item of the right type at its index)."""
    state: ResponseStreamState[Any] = ResponseStreamState(input_tools=omit, text_format=omit)
    built: Any = None
    for event in events:
        for parsed in state.handle_event(judge_responses_event(event)):  # type: ignore[arg-type]
            if parsed.type in ("response.completed", "response.incomplete"):
                built = parsed.response
    assert built is not None, "the stream never completed"
    return typing.cast(Response, built)


def provider_data(provider: str, response: dict[str, Any], seed: int) -> list[str]:
    """The provider's stream for `response` (its test encoder's), as the data of each event: SSE lines split at
    "\\n" only (a text may hold U+2028, which `str.splitlines` would cut at)."""
    out = []
    for event in ENCODERS[provider](response, random.Random(seed)):
        if framing_of(provider) in ("ndjson", "aws-eventstream"):
            out.append(data_of(provider, event))
        else:
            out += [line[len("data: ") :] for line in event.decode().split("\n") if line.startswith("data: ")]
    return out
