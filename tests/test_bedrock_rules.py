"""The bedrock rule file's own decisions, each shown on one request or answer (the case tables hold the
cross-provider concerns), judged by botocore's bedrock-runtime model: a thinking block without text."""

from __future__ import annotations

from typing import Any

import pytest

from support.judges import judge_bedrock
from toolnexus import translate_request, translate_response

P = "bedrock"
MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"


def turn(*blocks: dict[str, Any]) -> dict[str, Any]:
    """A request whose assistant turn carries these thinking blocks back."""
    return {
        "model": MODEL,
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "Hello.", "thinking_blocks": list(blocks)},
            {"role": "user", "content": "and now?"},
        ],
    }


@pytest.mark.parametrize(
    ("block", "sent"),
    [
        ({"type": "thinking", "signature": "sig"}, {"text": "", "signature": "sig"}),
        ({"type": "thinking", "thinking": None, "signature": "sig"}, {"text": "", "signature": "sig"}),
        ({"type": "thinking"}, {"text": ""}),
        ({"type": "thinking", "thinking": "", "signature": "sig"}, {"text": "", "signature": "sig"}),
        ({"type": "thinking", "thinking": "Hm.", "signature": "sig"}, {"text": "Hm.", "signature": "sig"}),
    ],
)
def test_a_thinking_block_without_text_sends_the_empty_text_converse_requires(
    block: dict[str, Any], sent: dict[str, Any]
) -> None:
    """reasoningText.text is required (a string, no minimum): never null; the signature is what matters."""
    body = translate_request(P, turn(block))
    assert body["messages"][1]["content"][0] == {"reasoningContent": {"reasoningText": sent}}
    judge_bedrock(dict(body))


def test_a_converse_answer_signed_without_text_goes_back_as_converse_takes_it() -> None:
    answer = {
        "output": {
            "message": {
                "role": "assistant",
                "content": [{"reasoningContent": {"reasoningText": {"signature": "sig"}}}, {"text": "Hello."}],
            }
        },
        "stopReason": "end_turn",
        "usage": {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7},
    }
    result = translate_response(P, answer, requested_model=MODEL)
    request = turn()
    request["messages"][1] = result.assistant_message()
    body = translate_request(P, request)
    assert body["messages"][1]["content"][0] == {
        "reasoningContent": {"reasoningText": {"text": "", "signature": "sig"}}
    }
    judge_bedrock(dict(body))
