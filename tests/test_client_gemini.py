"""client.translate(style="gemini") against a real local stub: URL, auth, errors, system, a tool round trip.

The client has no Gemini code: everything here comes from rules/gemini.yaml. (The shared
client behaviours — retries, cancel, hooks, secrets — are provider-neutral and tested in
test_client.py.)
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from toolnexus import ConfigError, ProviderError, create_client, translate_request
from toolnexus.devtools.stub import ProviderStub, StubReply

USER = [{"role": "user", "content": "hi"}]


def reply(parts: list[dict[str, Any]], finish: str = "STOP") -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish, "index": 0}],
        "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 3, "totalTokenCount": 12},
        "modelVersion": "gemini-answered-1",
    }


def test_url_names_the_model_and_the_key_goes_in_x_goog_api_key() -> None:
    with ProviderStub(lambda _: reply([{"text": "hello"}])) as stub:

        async def main() -> Any:
            async with create_client(stub.base_url, "gemini", "gemini-2.5-flash", api_key="g-key") as client:
                return await client.translate(USER)

        result = asyncio.run(main())
    [request] = stub.requests
    assert request.path == "/v1/models/gemini-2.5-flash:generateContent"
    assert request.headers["x-goog-api-key"] == "g-key"
    assert "authorization" not in request.headers
    assert request.body == {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    assert (result.text, result.finish_reason, result.model) == ("hello", "stop", "gemini-answered-1")
    assert result.usage == {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}


@pytest.mark.parametrize("env", ["GEMINI_API_KEY", "GOOGLE_API_KEY"])
def test_key_from_either_env_var(env: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(env, f"from-{env}")
    with ProviderStub(lambda _: reply([{"text": "ok"}])) as stub:

        async def main() -> Any:
            async with create_client(stub.base_url, "gemini", "m") as client:
                return await client.translate(USER)

        asyncio.run(main())
    assert stub.requests[0].headers["x-goog-api-key"] == f"from-{env}"


def test_no_key_is_a_config_error_naming_both_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError) as info:
        create_client("http://127.0.0.1:9/v1beta", "gemini", "m")
    assert "GEMINI_API_KEY" in str(info.value) and "GOOGLE_API_KEY" in str(info.value)


def test_an_error_body_becomes_a_provider_error_with_status_and_message() -> None:
    body = {"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT"}}
    with ProviderStub(lambda _: StubReply(status=400, body=body)) as stub:

        async def main() -> Any:
            async with create_client(stub.base_url, "gemini", "m", api_key="bad") as client:
                return await client.translate(USER)

        with pytest.raises(ProviderError) as info:
            asyncio.run(main())
    error = info.value
    assert (error.status, error.error_type, error.message, error.provider) == (
        400,
        "INVALID_ARGUMENT",
        "API key not valid.",
        "gemini",
    )
    assert len(stub.requests) == 1  # a 400 is not retried


@pytest.mark.parametrize(
    ("transcript", "system", "default", "expected"),
    [
        (USER, None, "client default", "client default"),
        ([{"role": "developer", "content": "from developer"}, *USER], None, "client default", "from developer"),
        ([{"role": "system", "content": "from transcript"}, *USER], "per call", "client default", "per call"),
        (USER, None, None, None),
    ],
)
def test_system_precedence_lands_in_system_instruction(
    transcript: list[Any], system: str | None, default: str | None, expected: str | None
) -> None:
    with ProviderStub(lambda _: reply([{"text": "ok"}])) as stub:

        async def main() -> Any:
            async with create_client(stub.base_url, "gemini", "m", api_key="k", system_prompt=default) as client:
                return await client.translate(transcript, system=system)

        asyncio.run(main())
    body = stub.requests[0].body
    if expected is None:
        assert "systemInstruction" not in body
    else:
        assert body["systemInstruction"] == {"parts": [{"text": expected}]}
    assert all(content["role"] in ("user", "model") for content in body["contents"])


def test_a_tool_round_trip_with_a_synthesized_call_id() -> None:
    replies = [
        reply([{"functionCall": {"name": "weather", "args": {"city": "Paris"}}}]),
        reply([{"text": "Sunny in Paris."}]),
    ]
    tools = [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}]
    position = iter(range(2))
    with ProviderStub(lambda _: replies[next(position)]) as stub:

        async def main() -> Any:
            async with create_client(stub.base_url, "gemini", "m", api_key="k") as client:
                first = await client.translate(USER, tools=tools, max_tokens=64)
                call = first.tool_calls[0]
                history = [
                    *USER,
                    {"role": "assistant", "content": None, "tool_calls": first.tool_calls_json()},
                    {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temp_c": 21})},
                ]
                second = await client.translate(history, tools=tools)
                return first, second

        first, second = asyncio.run(main())
    assert first.finish_reason == "tool_calls" and first.tool_calls[0].arguments == '{"city": "Paris"}'
    assert [note.kind for note in first.notes] == ["synthesized"]
    call_id = first.tool_calls[0].id
    wire = stub.requests[1].body
    assert wire["contents"][1] == {  # Gemini signed nothing: the current turn's call gets the documented dummy
        "role": "model",
        "parts": [
            {
                "functionCall": {"id": call_id, "name": "weather", "args": {"city": "Paris"}},
                "thoughtSignature": "skip_thought_signature_validator",
            }
        ],
    }
    assert wire["contents"][2] == {
        "role": "user",
        "parts": [{"functionResponse": {"id": call_id, "name": "weather", "response": {"temp_c": 21}}}],
    }
    assert stub.requests[0].body["generationConfig"] == {"maxOutputTokens": 64}
    assert second.text == "Sunny in Paris."
    # the body on the wire is exactly the pure translation
    assert wire == translate_request("gemini", {"model": "m", "messages": history_of(first), "tools": tools})


def history_of(first: Any) -> list[Any]:
    call = first.tool_calls[0]
    return [
        *USER,
        {"role": "assistant", "content": None, "tool_calls": first.tool_calls_json()},
        {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temp_c": 21})},
    ]


def test_toolkit_to_gemini_is_the_declaration_the_rules_write() -> None:
    from toolnexus import Toolkit, define_tool

    def weather(city: str, unit: str = "c") -> str:
        """Weather for a city."""
        return city

    toolkit = Toolkit()
    toolkit.register(define_tool(weather))
    body = translate_request("gemini", {"model": "m", "messages": USER, "tools": toolkit.to_openai()})
    assert toolkit.to_gemini() == body["tools"][0]["functionDeclarations"]
    assert toolkit.to_gemini()[0]["parametersJsonSchema"]["required"] == ["city"]
