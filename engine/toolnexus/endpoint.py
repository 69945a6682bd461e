"""Where and how a provider is called, compiled from a rule file's `endpoint` section."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError
from .loader import RuleSource
from .paths import MISSING, Getter
from .templates import Env, path_getter

EXCERPT_BYTES = 200


@dataclass(frozen=True)
class Endpoint:
    provider: str
    path: str
    auth_header: str
    auth_scheme: str
    headers: dict[str, str]
    api_key_env: tuple[str, ...]
    request_id_header: str | None
    error_type: Getter | None
    error_message: Getter | None

    def url(self, base_url: str, model: str) -> str:
        return base_url.rstrip("/") + self.path.replace("{model}", model)

    def resolve_key(self, explicit: str | None, environ: Mapping[str, str] | None = None) -> str:
        """An explicit key wins; else the first set env var the rules name; else a ConfigError."""
        if explicit:
            return explicit
        env = os.environ if environ is None else environ
        for name in self.api_key_env:
            if env.get(name):
                return env[name]
        raise ConfigError(f"no API key for {self.provider}: pass api_key= or set {' or '.join(self.api_key_env)}")

    def auth_headers(self, key: str) -> dict[str, str]:
        value = f"{self.auth_scheme} {key}" if self.auth_scheme else key
        return {**self.headers, self.auth_header: value}

    def carries_error(self, data: dict[str, Any]) -> bool:
        """Whether a decoded body has the provider's error shape (some gateways answer errors with 200)."""
        return self.error_in(data) is not None

    def error_in(self, data: Any) -> tuple[str | None, str] | None:
        """(error type, message) when a decoded body has the provider's error shape, else None."""
        if not isinstance(data, dict) or self.error_message is None:
            return None
        message = self.error_message(data)
        if not isinstance(message, str):
            return None
        kind = self.error_type(data) if self.error_type else MISSING
        return (kind if isinstance(kind, str) else None), message

    def describe_error(self, content: bytes) -> tuple[str | None, str]:
        """(error type, message) from an error body; a body that is not JSON gives its first bytes."""
        try:
            data: Any = json.loads(content)
        except ValueError:
            data = MISSING
        return self.error_in(data) or (None, f"unreadable body: {excerpt(content)}")


def excerpt(content: bytes) -> str:
    text = content[:EXCERPT_BYTES].decode("utf-8", errors="replace")
    more = "..." if len(content) > EXCERPT_BYTES else ""
    return repr(text + more) if text else "(empty)"


def compile_endpoint(source: RuleSource) -> Endpoint:
    spec = source.data["endpoint"]
    error = spec.get("error", {})
    env = Env(source)
    return Endpoint(
        provider=source.data["provider"],
        path=spec["path"],
        auth_header=spec["auth_header"],
        auth_scheme=spec.get("auth_scheme", ""),
        headers=dict(spec.get("headers", {})),
        api_key_env=tuple(spec["api_key_env"]),
        request_id_header=spec.get("request_id_header"),
        error_type=path_getter(error["type"], ("endpoint", "error", "type"), env) if "type" in error else None,
        error_message=(
            path_getter(error["message"], ("endpoint", "error", "message"), env) if "message" in error else None
        ),
    )
