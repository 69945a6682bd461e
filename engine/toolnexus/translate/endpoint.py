"""Where and how a provider is called, compiled from a rule file's `endpoint` section."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any
from urllib.parse import SplitResult, quote, urlencode, urlsplit

from ..errors import ConfigError
from ..language.jsonsafe import loads
from ..language.loader import RuleSource, did_you_mean
from ..language.paths import MISSING, Getter, simple_steps
from ..language.templates import Env, path_getter
from ..redact import control_character, header_problem

if TYPE_CHECKING:
    import httpx

EXCERPT_BYTES = 200
PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
MODEL = "model"  # the one placeholder every endpoint may name; the others are its declared `options`


@dataclass(frozen=True)
class EndpointOption:
    """A value the client supplies for the URL, a query parameter or a header (`endpoint.options`)."""

    default: str | None
    optional: bool  # absent and no default: the query parameters and headers naming it are left out
    secret: bool  # scrubbed from errors, logs and events like the API key
    where: str  # `rules/azure-openai.yaml:20 endpoint.options.deployment`, for errors


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
    options: Mapping[str, EndpointOption] = field(default_factory=lambda: MappingProxyType({}))
    query: tuple[tuple[str, str], ...] = ()  # (parameter, value with placeholders), in file order
    option_headers: tuple[tuple[str, str], ...] = ()  # headers whose value names placeholders
    # the field a plain error message path starts at: a body without it (an answer) is no error, told by one lookup
    error_root: str | None = None
    # the message path is that field alone (`message`): a body whose field there is no str is no error either (a
    # Cohere-shaped answer's `message` object), told without the call
    error_root_only: bool = False

    def values(self, model: str, given: Mapping[str, Any] | None = None) -> dict[str, str]:
        """What the placeholders take: the model, and each option as given, else its default."""
        given = dict(given or {})
        for name, value in given.items():
            if name not in self.options:
                known = ", ".join(self.options) or "none"
                raise ConfigError(
                    f"endpoint_options: {self.provider} has no option '{name}'{did_you_mean(str(name), self.options)}"
                    f"; known: {known}"
                )
            if not isinstance(value, str):
                raise ConfigError(f"endpoint_options['{name}'] must be text")
        values = {MODEL: model}
        for name, option in self.options.items():
            value = given.get(name, option.default)
            if value is not None:
                values[name] = value
        return values

    def secrets(self, values: Mapping[str, str]) -> list[str]:
        """The option values to scrub like the key."""
        return [values[name] for name, option in self.options.items() if option.secret and name in values]

    def _need(self, name: str, values: Mapping[str, str]) -> str:
        if name in values:
            return values[name]
        raise ConfigError(
            f"{self.provider} needs the endpoint option '{name}' ({self.options[name].where}):"
            f" pass endpoint_options={{'{name}': ...}}"
        )

    def _omitted(self, template: str, values: Mapping[str, str]) -> bool:
        """A query parameter or header naming an optional option that was not given is left out."""
        return any(n not in values and self.options[n].optional for n in PLACEHOLDER.findall(template))

    def base(self, base_url: str | None, values: Mapping[str, str]) -> str:
        """The base URL given, as is; else the rule file's, its placeholders filled as path segments."""
        if base_url is None and self.base_url is not None:
            base_url = PLACEHOLDER.sub(
                lambda m: path_segment(m.group(1), self._need(m.group(1), values)), self.base_url
            )
        return check_base_url(base_url, self.provider)

    def url(
        self, base_url: str | None, model: str, path: str | None = None, values: Mapping[str, str] | None = None
    ) -> httpx.URL:
        """The URL to call: the base URL (given as is, else the rule file's with its placeholders filled) + the
        path with its placeholders filled + the rule file's query parameters.

        Each placeholder value is percent-encoded as exactly one path segment, so a model name
        can neither climb out of the path (`../x`) nor add a query or fragment (`m?alt=x#`);
        query values are percent-encoded as query values.
        """
        import httpx  # only the client builds URLs: translation never loads the HTTP stack

        values = values if values is not None else self.values(model)
        base = self.base(base_url, values)
        filled = PLACEHOLDER.sub(lambda m: path_segment(m.group(1), self._need(m.group(1), values)), path or self.path)
        pairs = [
            (name, PLACEHOLDER.sub(lambda m: self._need(m.group(1), values), template))
            for name, template in self.query
            if not self._omitted(template, values)
        ]
        if pairs:
            filled += ("&" if "?" in filled else "?") + urlencode(pairs, quote_via=quote)
        try:
            return httpx.URL(base.rstrip("/") + filled)
        except httpx.InvalidURL:  # never quoted: the base URL may carry credentials
            raise ConfigError(f"base_url for {self.provider} is not usable: httpx cannot send to it") from None

    def headers_for(self, values: Mapping[str, str]) -> dict[str, str]:
        """The headers whose values name options, filled (an optional one not given is left out)."""
        out = {}
        for name, template in self.option_headers:
            if not self._omitted(template, values):
                out[name] = PLACEHOLDER.sub(lambda m: self._need(m.group(1), values), template)
        check_headers(out)
        return out

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
        if self.error_root is not None and data.get(self.error_root) is None:  # a message path through nothing
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
    options = _compile_options(spec.get("options", {}), source)
    paths = {
        ("endpoint", "base_url"): spec.get("base_url"),
        ("endpoint", "path"): spec["path"],
        ("streaming", "path"): source.data.get("streaming", {}).get("path"),
    }
    templated: dict[tuple[str, ...], str] = {("endpoint", "query", k): v for k, v in spec.get("query", {}).items()}
    templated.update({("endpoint", "headers", k): v for k, v in spec.get("headers", {}).items()})
    for key, text in [*paths.items(), *templated.items()]:
        for name in PLACEHOLDER.findall(text or ""):
            if name != MODEL and name not in options:
                known = ", ".join((MODEL, *options))
                raise env.error(key, f"unknown placeholder {{{name}}}{did_you_mean(name, options)}; known: {known}")
            if key in paths and name in options and options[name].optional:
                raise env.error(key, f"{{{name}}} is in the URL, so its option cannot be optional")
            if key[1] != "headers" and name in options and options[name].secret:  # URLs show in reprs and logs
                raise env.error(key, f"{{{name}}} is a secret option, so it may only be sent in a header, not the URL")
    base_url = spec.get("base_url")
    if base_url is not None:
        try:
            check_base_url(PLACEHOLDER.sub("x", base_url), source.data["provider"])
        except ConfigError as exc:
            raise env.error(("endpoint", "base_url"), str(exc)) from None
    auth, auth_key = compile_auth(spec, env)
    headers = spec.get("headers", {})
    sent: list[tuple[tuple[str, ...], Any, Any]] = [
        (("headers", k), k, PLACEHOLDER.sub("x", v)) for k, v in headers.items()
    ]
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
        headers={k: v for k, v in headers.items() if not PLACEHOLDER.search(v)},
        api_key_env=tuple(spec.get("api_key_env", ())),
        request_id_header=spec.get("request_id_header"),
        error_type=path_getter(error["type"], ("endpoint", "error", "type"), env) if "type" in error else None,
        error_message=(
            path_getter(error["message"], ("endpoint", "error", "message"), env) if "message" in error else None
        ),
        options=MappingProxyType(options),
        query=tuple(spec.get("query", {}).items()),
        option_headers=tuple((k, v) for k, v in headers.items() if PLACEHOLDER.search(v)),
        error_root=_plain_root(error.get("message")),
        error_root_only=isinstance(error.get("message"), str) and simple_steps(error["message"]) == [error["message"]],
    )


def _plain_root(path: Any) -> str | None:
    """The first field of a plain path (`error.message` -> `error`), None for an expression or anything else."""
    steps = simple_steps(path) if isinstance(path, str) else None
    return steps[0] if steps and isinstance(steps[0], str) else None


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


def _compile_options(spec: dict[str, Any], source: RuleSource) -> dict[str, EndpointOption]:
    out = {}
    for name, option in spec.items():
        key = ("endpoint", "options", name)
        if option.get("optional") and "default" in option:
            raise source.error(key, "an option with a default is never absent: drop optional or the default")
        if option.get("secret") and "default" in option:
            raise source.error(
                (*key, "default"), "a secret option has no default: a secret is never written in a rule file"
            )
        file, line, _ = source.locate(key)
        out[name] = EndpointOption(
            default=option.get("default"),
            optional=bool(option.get("optional")),
            secret=bool(option.get("secret")),
            where=f"{file}:{line} endpoint.options.{name}",
        )
    return out
