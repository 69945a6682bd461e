"""Anthropic Messages as a source format: the SDK's judges of what toolnexus writes back, and a stream's
accumulation into the Message it builds (shared by the source-format tests and the ten-turn run)."""

from __future__ import annotations

import copy
import json
from typing import Any

from anthropic.types import Message, RawMessageStreamEvent
from deepdiff import DeepDiff
from pydantic import TypeAdapter

STREAM_EVENT: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)


def judge_message(answer: dict[str, Any]) -> None:
    """A whole answer is an SDK `Message` (strict), and the SDK keeps every key of it."""
    dumped = Message.model_validate(answer, strict=True).model_dump(mode="json", exclude_unset=True)
    assert not DeepDiff(answer, dumped), DeepDiff(answer, dumped).pretty()


def judge_event(event: dict[str, Any]) -> None:
    """A stream event is an SDK `RawMessageStreamEvent` (strict), and the SDK keeps every key of it."""
    dumped = STREAM_EVENT.validate_python(event, strict=True).model_dump(mode="json", exclude_unset=True)
    assert not DeepDiff(event, dumped), DeepDiff(event, dumped).pretty()


DELTA_FIELDS = {"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature"}


def accumulate(events: list[dict[str, Any]]) -> dict[str, Any]:
    """The Message a Messages stream builds, block by block, as a client accumulates it."""
    message: dict[str, Any] = {}
    partial: dict[int, str] = {}
    for event in events:
        kind = event["type"]
        if kind == "message_start":
            message = copy.deepcopy(event["message"])
        elif kind == "content_block_start":
            assert event["index"] == len(message["content"])
            message["content"].append(copy.deepcopy(event["content_block"]))
        elif kind == "content_block_delta":
            block, delta, index = message["content"][event["index"]], event["delta"], event["index"]
            if delta["type"] == "input_json_delta":
                partial[index] = partial.get(index, "") + delta["partial_json"]
            else:
                name = DELTA_FIELDS[delta["type"]]
                block[name] = block.get(name, "") + delta[name]
        elif kind == "content_block_stop" and event["index"] in partial:
            message["content"][event["index"]]["input"] = json.loads(partial.pop(event["index"]))
        elif kind == "message_delta":
            message.update(event["delta"])
            message["usage"] = {**message["usage"], **{k: v for k, v in event["usage"].items() if v is not None}}
    return message
