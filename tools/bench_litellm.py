"""LiteLLM's transforms on the bench's inputs: optional rows of tools/bench.py.

Only when `litellm` is importable (`pip install -e '.[bench]'`); never a runtime or test
dependency. Timed, per request, what `litellm.completion` runs before its HTTP call:
the developer role rewritten to system, `get_optional_params` (with drop_params=True,
LiteLLM's counterpart of toolnexus dropping a field with a note), then the provider's
`transform_request` (for Gemini, `transform_request_body`, which its handler calls).
Per response: the provider's `transform_response` into a fresh `ModelResponse`, given a
stand-in raw response whose `.json()` returns the already decoded body (toolnexus is
timed on decoded bodies too). LiteLLM's output is not compared with toolnexus's: it is
another library with its own choices (it sanitizes Gemini schemas into `parameters`,
where rules/gemini.yaml passes JSON Schema through as `parametersJsonSchema`).

LiteLLM refuses some inputs as given: tool-call arguments given as an object (which the
OpenAI API's Python SDK types allow and the parity fixture uses), and image URLs it
cannot fetch (it downloads http(s) images for Gemini; this machine has no internet).
Such a row says why, and times LiteLLM on a copy with object arguments as JSON text and
http(s) images as data URLs, so the work is still comparable.
"""

from __future__ import annotations

import copy
import json
import logging
import os
from collections.abc import Callable
from functools import partial
from typing import Any

JSON = dict[str, Any]
Translate = Callable[[Any], Any]

MODELS = {"anthropic": "claude-sonnet-4-5", "openai": "gpt-4.1", "gemini": "gemini-2.5-flash"}
TINY_PNG = (  # 1x1 pixel
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


class _Logging:
    """The part of LiteLLM's per-call logging object its transforms touch."""

    def __init__(self) -> None:
        self.optional_params: JSON = {}
        self.litellm_params: JSON = {}
        self.model_call_details: JSON = {}

    def post_call(self, *args: Any, **kwargs: Any) -> None:
        pass


class _RawResponse:
    """An httpx.Response stand-in holding an already decoded body."""

    status_code = 200

    def __init__(self, data: JSON, headers: Any) -> None:
        self._data = data
        self.text = ""  # read only by LiteLLM's logging hook, a no-op here
        self.headers = headers

    def json(self) -> JSON:
        return self._data


class LiteLLM:
    """Request and response transforms of one installed LiteLLM."""

    def __init__(self) -> None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no cost-map download at import
        import httpx
        import litellm
        from litellm.llms.vertex_ai.gemini.transformation import transform_request_body
        from litellm.types.utils import LlmProviders, ModelResponse
        from litellm.utils import ProviderConfigManager, get_optional_params

        logging.getLogger("LiteLLM").setLevel(logging.ERROR)  # its warnings about refused inputs
        litellm.suppress_debug_info = True
        self.version = _version()
        self._optional = get_optional_params
        self._gemini_body = transform_request_body
        self._model_response = ModelResponse
        self._headers = httpx.Headers()
        self._configs = {
            provider: ProviderConfigManager.get_provider_chat_config(model=model, provider=LlmProviders(provider))
            for provider, model in MODELS.items()
        }

    def request(self, provider: str) -> Translate:
        return partial(self._request, provider)

    def response(self, provider: str) -> Translate:
        return partial(self._response, provider)

    def _request(self, provider: str, request: JSON) -> JSON:
        model, config = MODELS[provider], self._configs[provider]
        messages = list(
            config.translate_developer_role_to_system_role(
                request["messages"], model=model, custom_llm_provider=provider, api_base=None, model_info=None
            )
        )
        params = {key: value for key, value in request.items() if key not in ("model", "messages")}
        optional = self._optional(
            model=model, custom_llm_provider=provider, messages=messages, drop_params=True, **params
        )
        if provider == "gemini":
            body: JSON = self._gemini_body(
                messages=messages,
                model=model,
                optional_params=optional,
                custom_llm_provider="gemini",
                litellm_params={},
                cached_content=None,
            )
            return body
        out: JSON = config.transform_request(
            model=model, messages=messages, optional_params=optional, litellm_params={}, headers={}
        )
        return out

    def _response(self, provider: str, response: JSON) -> Any:
        return self._configs[provider].transform_response(
            model=MODELS[provider],
            raw_response=_RawResponse(response, self._headers),
            model_response=self._model_response(),
            logging_obj=_Logging(),
            request_data={},
            messages=[],
            optional_params={},
            litellm_params={},
            encoding=None,
        )


def load() -> LiteLLM | None:
    """LiteLLM's transforms, or None when it is not installed."""
    try:
        return LiteLLM()
    except ImportError:
        return None


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("litellm")
    except metadata.PackageNotFoundError:
        return "?"


def compatible_copy(request: JSON) -> JSON:
    """The request with object arguments as JSON text and http(s) images as data URLs."""
    out = copy.deepcopy(request)
    for message in out["messages"]:
        for call in message.get("tool_calls") or ():
            function = call["function"]
            if not isinstance(function["arguments"], str):
                function["arguments"] = json.dumps(function["arguments"], ensure_ascii=False)
        content = message.get("content")
        for part in content if isinstance(content, list) else ():
            if part.get("type") == "image_url" and not part["image_url"]["url"].startswith("data:"):
                part["image_url"] = {"url": TINY_PNG}
    return out


def first_line(error: BaseException) -> str:
    """A short reason: the exception's type and its message up to the first quoted input."""
    lines = str(error).strip().splitlines()
    text = lines[0].removeprefix("litellm.BadRequestError: ") if lines else ""
    cut = min((i for i in (text.find("{"), text.find("[")) if i > 0), default=len(text))
    return f"{type(error).__name__}: {text[:cut].rstrip(' =:')[:90]}"
