"""OpenAI Responses as a source format: the SDK's judges of the requests read and the answers written back
(shared by the source-format tests and the ten-turn run)."""

from __future__ import annotations

from typing import Any

from deepdiff import DeepDiff
from openai.types.responses import Response

from .judges import RESPONSES_REQUEST, judge


def judge_responses_request(request: dict[str, Any]) -> None:
    """The input is a real Responses request: the SDK's ResponseCreateParams keeps every key of it, strictly."""
    judge(RESPONSES_REQUEST, request)


def judge_response(answer: dict[str, Any]) -> None:
    """A whole answer is an SDK `Response` (strict), and the SDK keeps every key of it."""
    dumped = Response.model_validate(answer, strict=True).model_dump(mode="json", exclude_unset=True)
    diff = DeepDiff(answer, dumped, ignore_numeric_type_changes=True)  # created_at: a float in the SDK
    assert not diff, diff.pretty()
