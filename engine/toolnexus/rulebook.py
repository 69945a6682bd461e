"""Finding, loading and compiling rule files, once.

A Rulebook is every provider the rules define: the built-in `rules/` plus,
optionally, a user directory whose files override built-ins of the same name or
add providers. Compiled rulebooks are cached, so callers may pass `rules=DIR` on
every call; a user directory is re-read when one of its files changes.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from .endpoint import Endpoint, compile_endpoint
from .errors import RuleError
from .inbound import Inbound, compile_inbound
from .loader import RuleSource, builtin_rules_dir, did_you_mean, dotted, parse_rule_text, validate_against_schema
from .outbound import Outbound, compile_outbound
from .stream_rules import Streaming, compile_streaming

RULE_SUFFIX = ".yaml"


@dataclass
class Provider:
    """One compiled rule file."""

    name: str
    file: str
    doc: str
    endpoint: Endpoint
    inbound: Inbound
    outbound: Outbound
    source: RuleSource
    streaming: Streaming | None = None  # None: the rule file has no `streaming` section

    def explain(self, *, code: bool = False) -> str:
        """The compiled plan beside its source: every rule with its file line (and, with
        `code`, the Python each template compiled to)."""
        lines = [f"{self.name}: {self.doc}".rstrip(": "), f"  file: {self.file}"]
        for key, value in _leaves(self.source.data, ()):
            line, _ = self.source.where(key)
            lines.append(f"  {self.file}:{line}  {dotted(key)} = {json.dumps(value, ensure_ascii=False)}")
        lines.append(f"  request fields mapped: {', '.join(self.inbound.plan['consumed'])}")
        lines.append(f"  request fields unsupported: {', '.join(sorted(self.inbound.unsupported)) or '-'}")
        ranges = [f"{name} {limits.text()}" for name, limits in sorted(self.inbound.ranges.items())]
        lines.append(f"  request ranges: {', '.join(ranges) or '-'}")
        if code:
            for key, generated in self.source.generated.items():
                line, _ = self.source.where(key)
                lines.append(f"\n  # {self.file}:{line} {dotted(key)}")
                lines += [f"  {text}" for text in generated.rstrip().splitlines()]
        return "\n".join(lines)


def _leaves(value: Any, key: tuple[str | int, ...]) -> list[tuple[tuple[str | int, ...], Any]]:
    """Rules at the granularity a reader scans: templates and table rows, not every scalar."""
    if isinstance(value, dict) and not any(k.startswith("$") for k in value) and len(key) < 3:
        out = []
        for k, v in value.items():
            out.extend(_leaves(v, (*key, k)))
        return out
    return [(key, value)]


def compile_rule_file(path: Path, display: str | None = None) -> Provider:
    """Parse, validate and compile one rule file, or raise a located RuleError."""
    display = display or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleError(f"cannot read: {exc}", file=display) from None
    source = parse_rule_text(text, display)
    validate_against_schema(source)
    name = source.data["provider"]
    if path.suffix == RULE_SUFFIX and path.stem != name:
        raise source.error(("provider",), f"provider '{name}' must be defined in a file named {name}{RULE_SUFFIX}")
    endpoint = compile_endpoint(source)
    inbound = compile_inbound(source)
    outbound = compile_outbound(source)
    return Provider(
        name=name,
        file=display,
        doc=source.data.get("doc", ""),
        endpoint=endpoint,
        inbound=inbound,
        outbound=outbound,
        source=source,
        streaming=compile_streaming(source, outbound, endpoint),
    )


class Rulebook:
    """The providers the rules define, by name."""

    def __init__(self, providers: dict[str, Provider]) -> None:
        self.providers = dict(sorted(providers.items()))

    def names(self) -> list[str]:
        return list(self.providers)

    def get(self, name: str) -> Provider:
        try:
            return self.providers[name]
        except KeyError:
            raise RuleError(
                f"no rules for provider '{name}'{did_you_mean(name, self.providers)};"
                f" known: {', '.join(self.providers)}"
            ) from None


def _rule_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob(f"*{RULE_SUFFIX}") if p.is_file())


def _display(path: Path, base: Path) -> str:
    """Paths as a user reads them: `rules/anthropic.yaml` for built-ins."""
    try:
        return str(Path(base.name) / path.relative_to(base))
    except ValueError:
        return str(path)


@cache
def builtin_rulebook() -> Rulebook:
    base = builtin_rules_dir()
    return Rulebook({p.name: p for p in (compile_rule_file(f, _display(f, base)) for f in _rule_files(base))})


@cache
def _user_rulebook(directory: str, stamp: tuple[tuple[str, int, int], ...]) -> Rulebook:
    providers = dict(builtin_rulebook().providers)
    for name, _, _ in stamp:
        path = Path(directory) / name
        provider = compile_rule_file(path)
        providers[provider.name] = provider
    return Rulebook(providers)


RulesArg = str | os.PathLike[str] | Rulebook | None


def load_rules(rules: RulesArg = None) -> Rulebook:
    """The built-in rulebook, or it overlaid with a user rules directory."""
    if rules is None:
        return builtin_rulebook()
    if isinstance(rules, Rulebook):
        return rules
    directory = Path(rules)
    if not directory.is_dir():
        raise RuleError(f"rules directory not found: {directory}")
    stamp = tuple((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in _rule_files(directory))
    return _user_rulebook(str(directory.resolve()), stamp)
