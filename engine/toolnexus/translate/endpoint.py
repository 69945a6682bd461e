"""Where and how a provider is called, compiled from a rule file's `endpoint` section."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, quote, urlsplit

from ..errors import ConfigError
from ..language.jsonsafe import loads
from ..language.loader import RuleSource
from ..language.paths import MISSING, Getter
from ..language.templates import Env, path_getter
from ..redact import control_character, header_problem

if TYPE_CHECKING:
    import httpx

EXCERPT_BYTES = 200
PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
PLACEHOLDERS = ("model",)  # the values an endpoint path may name


@dataclass(frozen=True)
class Auth:
    """How a request proves who sends it (`endpoint.auth`); the HTTP layer (http/auth.py) applies it.

    header: the key in `header`, after `prefix` when one is given; bearer: `Authorization: Bearer <key>`;
    none: nothing (a local server); aws-sigv4: every attempt signed for `service` in `region` (None: the
    AWS chain's region) with the AWS chain's credentials; google-oauth: a token for `scopes` from Google's
    application default credentials. A key given to none or a chained scheme is sent as a bearer token.
    """

    scheme: str
    header: str = "Authorization"
    prefix: str = ""
    service: str = ""
    region: str | None = None
    scopes: tuple[str, ...] = ()

    @property
    def takes_key(self) -> bool:
        """Whether a call needs an API key (the other schemes work without one)."""
        return self.scheme in ("header", "bearer")


@dataclass(frozen=True)
class Endpoint:
    provider: str
    path: str
    base_url: str | None  # the provider's public base URL; the client's base_url wins
    auth: Auth
    headers: dict[str, str]
    api_key_env: tuple[str, ...]
    request_id_header: str | None
    error_type: Getter | None
    error_message: Getter | None

    def url(self, base_url: str | None, model: str, path: str | None = None) -> httpx.URL:
        """The URL to call: the base URL (given, else the rule file's) + the path with its placeholders filled.

        Each placeholder value is percent-encoded as exactly one path segment, so a model name
        can neither climb out of the path (`../x`) nor add a query or fragment (`m?alt=x#`).
        """
        import httpx  # only the client builds URLs: translation never loads the HTTP stack

        base = check_base_url(base_url if base_url is not None else self.base_url, self.provider)
        values = {"model": model}
        filled = PLACEHOLDER.sub(lambda m: path_segment(m.group(1), values[m.group(1)]), path or self.path)
        try:
            return httpx.URL(base.rstrip("/") + filled)
        except httpx.InvalidURL:  # never quoted: the base URL may carry credentials
            raise ConfigError(f"base_url for {self.provider} is not usable: httpx cannot send to it") from None

    def resolve_key(self, explicit: str | None, environ: Mapping[str, str] | None = None) -> str:
        """An explicit key wins; else the first set env var the rules name; else a ConfigError when the
        auth scheme needs a key, "" when it does not (none, or a chained scheme's credential chain).

        A key HTTP cannot carry (a trailing newline from a file, say) is refused here, never quoted.
        """
        env = os.environ if environ is None else environ
        if explicit:
            where, key = "api_key=", explicit
        else:
            named = next((name for name in self.api_key_env if env.get(name)), None)
            if named is None:
                if not self.auth.takes_key:
                    return ""
                wanted = f" or set {' or '.join(self.api_key_env)}" if self.api_key_env else ""
                raise ConfigError(f"no API key for {self.provider}: pass api_key={wanted}")
            where, key = f"${named}", env[named]
        if header_problem("key", key) is not None:
            raise ConfigError(
                f"the API key from {where} holds a control character (a trailing newline?) or non-ASCII text, "
                "which an HTTP header cannot carry; strip it (the key is not shown)"
            )
        return key

    def auth_headers(self, key: str) -> dict[str, str]:
        """The headers every request carries: the rule file's, and the key where the scheme (or a chained
        scheme given a key, as a bearer token) sends one."""
        auth = self.auth
        if not auth.takes_key and not key:
            return dict(self.headers)
        if auth.scheme != "header":
            return {**self.headers, "Authorization": f"Bearer {key}"}
        value = f"{auth.prefix} {key}" if auth.prefix else key
        return {**self.headers, auth.header: value}

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
            data: Any = loads(content)
        except ValueError:
            data = MISSING
        return self.error_in(data) or (None, f"unreadable body: {excerpt(content)}")


def check_headers(headers: Mapping[Any, Any]) -> None:
    """Every header HTTP can carry, or a ConfigError naming the first that it cannot (never its value)."""
    for name, value in headers.items():
        problem = header_problem(name, value)
        if problem is not None:
            raise ConfigError(f"headers: {problem}")


def path_segment(name: str, value: object) -> str:
    """`value` percent-encoded as one URL path segment; a value that cannot be one is a ConfigError."""
    if not isinstance(value, str) or control_character(value):
        raise ConfigError(
            f"{name} cannot be a URL path segment: it must be text without control characters (CR, LF, ...)"
        )
    if value in ("", ".", ".."):
        raise ConfigError(f"{name} {value!r} cannot be a URL path segment")
    try:
        return quote(value, safe="")
    except UnicodeEncodeError:  # a lone surrogate
        raise ConfigError(f"{name} cannot be a URL path segment: it is not valid Unicode text") from None


def check_base_url(base_url: str | None, provider: str) -> str:
    """`base_url` when it is an http(s) URL without query or fragment, else a ConfigError (never quoting it:
    it may carry credentials)."""
    if base_url is None:
        raise ConfigError(f"no base URL for {provider}: its rule file names none (endpoint.base_url); pass base_url=")
    problem = None
    if not isinstance(base_url, str) or control_character(base_url):
        problem = "it must be a string without control characters (CR, LF, ...)"
    else:
        url: SplitResult | None
        try:  # the standard library's parser, so loading rules never imports the HTTP stack
            url = urlsplit(base_url)
            url.port  # noqa: B018  (a port that is no number, or out of range, raises)
        except ValueError:
            url = None
        if url is None or url.scheme not in ("http", "https") or not url.hostname:
            problem = "it must be an absolute http:// or https:// URL"
        elif url.query or url.fragment or "?" in base_url or "#" in base_url:
            problem = "it cannot carry a query or a fragment (the endpoint path is appended to it)"
    if problem is not None:
        raise ConfigError(f"base_url for {provider} is not usable: {problem}")
    return base_url


def excerpt(content: bytes) -> str:
    text = content[:EXCERPT_BYTES].decode("utf-8", errors="replace")
    more = "..." if len(content) > EXCERPT_BYTES else ""
    return repr(text + more) if text else "(empty)"


def compile_endpoint(source: RuleSource) -> Endpoint:
    spec = source.data["endpoint"]
    error = spec.get("error", {})
    env = Env(source)
    paths = {("endpoint", "path"): spec["path"], ("streaming", "path"): source.data.get("streaming", {}).get("path")}
    for key, path in paths.items():
        for name in PLACEHOLDER.findall(path or ""):
            if name not in PLACEHOLDERS:
                raise env.error(key, f"unknown placeholder {{{name}}}; known: {', '.join(PLACEHOLDERS)}")
    base_url = spec.get("base_url")
    if base_url is not None:
        try:
            check_base_url(base_url, source.data["provider"])
        except ConfigError as exc:
            raise env.error(("endpoint", "base_url"), str(exc)) from None
    auth, auth_key = compile_auth(spec, env)
    sent: list[tuple[tuple[str, ...], Any, Any]] = [(("headers", k), k, v) for k, v in spec.get("headers", {}).items()]
    for where, name, value in [*sent, (auth_key, auth.header, "key")]:
        problem = header_problem(name, value)
        if problem is not None:
            raise env.error(("endpoint", *where), problem)
    if auth.takes_key and not spec.get("api_key_env"):
        raise env.error(("endpoint",), f"auth {auth.scheme} sends an API key: name api_key_env")
    return Endpoint(
        provider=source.data["provider"],
        path=spec["path"],
        base_url=base_url,
        auth=auth,
        headers=dict(spec.get("headers", {})),
        api_key_env=tuple(spec.get("api_key_env", ())),
        request_id_header=spec.get("request_id_header"),
        error_type=path_getter(error["type"], ("endpoint", "error", "type"), env) if "type" in error else None,
        error_message=(
            path_getter(error["message"], ("endpoint", "error", "message"), env) if "message" in error else None
        ),
    )


def compile_auth(spec: dict[str, Any], env: Env) -> tuple[Auth, tuple[str, ...]]:
    """`endpoint.auth` (a scheme's name, or a mapping with `scheme` and its parameters), or the first
    edition's `auth_header` + `auth_scheme`, which mean `{scheme: header, header: ..., prefix: ...}`.
    Returns the Auth and the rule key its header name sits under (for a located error)."""
    if "auth" not in spec:
        if "auth_header" not in spec:
            raise env.error(("endpoint",), "no auth: name one (see endpoint.auth in rules.schema.json)")
        return Auth("header", spec["auth_header"], spec.get("auth_scheme", "")), ("auth_header",)
    if "auth_header" in spec or "auth_scheme" in spec:
        raise env.error(("endpoint", "auth"), "auth replaces auth_header and auth_scheme: give one or the other")
    given = spec["auth"]
    options = {"scheme": given} if isinstance(given, str) else dict(given)
    scheme = options.pop("scheme")
    if scheme == "header":
        return Auth(scheme, options["header"], options.get("prefix", "")), ("auth", "header")
    region, scopes = options.get("region"), tuple(options.get("scopes", ()))
    return Auth(scheme, service=options.get("service", ""), region=region, scopes=scopes), ("auth",)
