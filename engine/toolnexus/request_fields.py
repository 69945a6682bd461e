"""The top-level fields of an OpenAI Chat Completions request: knowledge of the input format, kept in one place.

A rule file's request side may name only these (its body's paths, `request.unsupported`,
`request.elsewhere`), so a misspelt field (`temprature`) is refused at load with a did-you-mean
instead of loading and silently never matching. From the API reference
(https://platform.openai.com/docs/api-reference/chat/create).
"""

from __future__ import annotations

OPENAI_REQUEST_FIELDS = frozenset(
    {
        "model",
        "messages",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "max_tokens",
        "max_completion_tokens",
        "temperature",
        "top_p",
        "stop",
        "user",
        "n",
        "frequency_penalty",
        "presence_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "seed",
        "response_format",
        "reasoning_effort",
        "store",
        "metadata",
        "service_tier",
        "prediction",
        "prompt_cache_key",
        "safety_identifier",
        "verbosity",
        "modalities",
        "audio",
        "web_search_options",
        "stream",
        "stream_options",
        "functions",
        "function_call",
    }
)
