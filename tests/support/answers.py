"""Provider answers several test modules read (each defined once here)."""

from __future__ import annotations

from typing import Any

# A Gemini answer with a thought, text and a signed function call: the source-format tests translate it back
# into each source format's answer and check that the call's signature returns in the next request.
GEMINI_ANSWER: dict[str, Any] = {
    "responseId": "resp-1",
    "modelVersion": "gemini-2.5-flash",
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [
                    {"text": "Thinking about it.", "thought": True},
                    {"text": "Here."},
                    {
                        "functionCall": {"id": "fc1", "name": "weather", "args": {"city": "Bern"}},
                        "thoughtSignature": "U0lH",
                    },
                ],
            },
            "finishReason": "STOP",
        }
    ],
    "usageMetadata": {
        "promptTokenCount": 50,
        "candidatesTokenCount": 7,
        "cachedContentTokenCount": 20,
        "totalTokenCount": 60,
        "thoughtsTokenCount": 3,
    },
}
