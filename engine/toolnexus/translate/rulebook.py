"""Finding, loading and compiling rule files, once.

A Rulebook is every provider the rules define: the built-in `rules/` plus,
optionally, a user directory whose files override built-ins of the same name or
add providers. Compiled rulebooks are cached, so callers may pass `rules=DIR` on
every call; a user directory is read once and re-read only when asked
(`load_rules(DIR, reload=True)`). A compiled rulebook never changes after it is built.
"""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import ConfigError, RuleError
from ..language.loader import (
    MAX_FILE_BYTES,
    RuleSource,
    builtin_rules_dir,
    did_you_mean,
    dotted,
    extend,
    parse_rule_text,
    validate_against_schema,
)
from .endpoint import Endpoint, compile_endpoint
from .format_rules import FORMATS_DIR, builtin_formats_dir, compile_format, format_files
from .formats import PLAIN, FusedAnswer, SourceFormat
from .fused_answer_code import with_fused_answers
from .fused_code import with_fused
from .inbound import Inbound, compile_inbound
from .outbound import Outbound, compile_outbound
from .stream_code import Streaming, compiled
from .stream_rules import compile_streaming

RULE_SUFFIX = ".yaml"


@dataclass(frozen=True)
class Provider:
    """One compiled rule file (never changed once built)."""

    name: str
    file: str  # as errors name it: `rules/anthropic.yaml` for a built-in
    doc: str
    endpoint: Endpoint
    inbound: Inbound
    outbound: Outbound
    source: RuleSource
    streaming: Streaming | None = None  # None: the rule file has no `streaming` section
    path: Path | None = None  # the file itself, absolute

    def openable_path(self) -> str:
        """Where a user can open the file: relative to the working directory when inside it, else absolute."""
        if self.path is None:
            return self.file
        try:
            return str(self.path.relative_to(Path.cwd()))
        except ValueError:
            return str(self.path)

    def explain(self, *, code: bool = False) -> str:
        """The compiled plan beside its source: every rule with its file line (and, with
        `code`, the Python each template compiled to)."""
        lines = [f"{self.name}: {self.doc}".rstrip(": "), f"  file: {self.file}"]
        if "extends" in self.source.data:
            lines.append(f"  extends: {self.source.data['extends']} (values marked inherited come from its file)")
        for key, value in _leaves(self.source.data, ()):
            file, line, _ = self.source.locate(key)
            inherited = "  (inherited)" if file != self.file else ""
            lines.append(f"  {file}:{line}  {dotted(key)} = {json.dumps(value, ensure_ascii=False)}{inherited}")
        lines.append(f"  request fields mapped: {', '.join(self.inbound.plan['consumed'])}")
        lines.append(f"  request fields unsupported: {', '.join(sorted(self.inbound.unsupported)) or '-'}")
        ranges = [f"{name} {limits.text()}" for name, limits in sorted(self.inbound.ranges.items())]
        lines.append(f"  request ranges: {', '.join(ranges) or '-'}")
        if code:
            for key, generated in (*self.inbound.code, *self.outbound.templates_code):
                file, line, _ = self.source.locate(key)
                lines.append(f"\n  # {file}:{line} {dotted(key)}")
                lines += [f"  {text}" for text in generated.rstrip().splitlines()]
            line, _ = self.source.where(("response",))
            lines.append(f"\n  # {self.file}:{line} response: the one function the section compiles to")
            lines += [f"  {text}" for text in self.outbound.code.rstrip().splitlines()]
            if self.streaming is not None:
                line, _ = self.source.where(("streaming",))
                lines.append(f"\n  # {self.file}:{line} streaming: one function per event type")
                lines += [f"  {text}" for text in self.streaming.code.rstrip().splitlines()]
        return "\n".join(lines)


def _leaves(value: Any, key: tuple[str | int, ...]) -> list[tuple[tuple[str | int, ...], Any]]:
    """Rules at the granularity a reader scans: templates and table rows, not every scalar."""
    if isinstance(value, dict) and not any(k.startswith("$") for k in value) and len(key) < 3:
        out = []
        for k, v in value.items():
            out.extend(_leaves(v, (*key, k)))
        return out
    return [(key, value)]


MAX_EXTENDS = 8  # parents above a rule file at most (the shipped variants have one)


def read_rule_source(
    path: Path, display: str | None = None, chain: tuple[Path, ...] = (), search: tuple[Path, ...] = ()
) -> RuleSource:
    """One rule file parsed, with its `extends:` parent (and theirs) merged under it.

    A parent is looked up as `<name>.yaml` in `search` (a user rules directory), then in the
    extending file's own directory, then in the built-in rules, the file itself excepted (so a
    user's `openai.yaml` may extend the built-in `openai`). An unknown parent, a cycle or a chain
    longer than MAX_EXTENDS is a RuleError at the `extends:` line.
    """
    display = display or _shown(path)
    try:
        with path.open("rb") as stream:
            raw = stream.read(MAX_FILE_BYTES + 1)  # a larger file is refused without reading it all
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleError(f"cannot read: {exc}", file=display) from None
    source = parse_rule_text(text, display)
    if not isinstance(source.data, dict) or "extends" not in source.data:
        return source
    parent_name = source.data["extends"]
    here = ("extends",)
    if not isinstance(parent_name, str):
        raise source.error(here, "extends names one provider (a rule file's name)")
    if not isinstance(source.data.get("provider"), str):
        raise source.error((), "a rule file that extends another names its own provider (provider: <name>)")
    chain = (*chain, path.resolve())
    if len(chain) > MAX_EXTENDS:
        raise source.error(here, f"more than {MAX_EXTENDS} rule files extend one another")
    directories = (*search, path.parent, builtin_rules_dir())
    candidates = [d / f"{parent_name}{RULE_SUFFIX}" for d in directories]
    found = [c for c in candidates if c.is_file() and c.resolve() != path.resolve()]
    if not found:
        known = sorted({p.stem for d in directories for p in _rule_files(d)} - {path.stem})
        raise source.error(
            here,
            f"extends unknown provider '{parent_name}'{did_you_mean(parent_name, known)}; known: {', '.join(known)}",
        )
    if found[0].resolve() in chain:
        names = " -> ".join(p.stem for p in (*chain, found[0]))
        raise source.error(here, f"extends makes a cycle: {names}")
    return extend(read_rule_source(found[0], chain=chain, search=search), source)


def _shown(path: Path) -> str:
    """A rule file as errors name it: `rules/anthropic.yaml` for a built-in, else its path."""
    base = builtin_rules_dir().resolve()
    return _display(path.resolve(), base) if base in path.resolve().parents else str(path)


def compile_rule_file(path: Path, display: str | None = None, search: tuple[Path, ...] = ()) -> Provider:
    """Parse, validate and compile one rule file (merged over its `extends:` parent), or raise a located RuleError."""
    display = display or str(path)
    source = read_rule_source(path, display, search=search)
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
        streaming=compiled(compile_streaming(source, outbound, endpoint)),
        path=path.absolute(),
    )


class Rulebook:
    """The providers the rules define, by name."""

    def __init__(self, providers: dict[str, Provider], directory: Path | None = None) -> None:
        self.providers: Mapping[str, Provider] = MappingProxyType(dict(sorted(providers.items())))
        self.directory = directory  # the user rules directory, whose formats/ comes before the built-in one
        self._formats: dict[str, SourceFormat] = {}  # compiled on first use, then never changed
        # Each compiled format's fused answer functions, by provider (`SourceFormat.fused_answers`): a format not
        # compiled yet (a bad name, a broken file) is `format`'s to report, after the answer's own error.
        self.fused_answers: dict[str, Mapping[str, FusedAnswer]] = {}

    def _format_dirs(self) -> tuple[Path, ...]:
        """Where format files are looked up, first match wins: the user's, then the built-in."""
        mine = () if self.directory is None else (self.directory / FORMATS_DIR,)
        return (*mine, builtin_formats_dir())

    def formats(self) -> list[str]:
        """The source formats: the normal form (`openai`) first, then the user's and the built-in format files."""
        names = {p.stem for d in self._format_dirs() for p in format_files(d)} - {PLAIN}
        return [PLAIN, *sorted(names)]

    def format(self, name: str) -> SourceFormat:
        """A source format, compiled against these rules (what it derives reads its provider's file here).
        An unknown name is a ConfigError (the call is asked wrongly); a broken file, a located RuleError."""
        if type(name) is not str:  # None, a number, a list: asked wrongly, like an unknown name
            raise ConfigError(f"a source format is named by a string, not {type(name).__name__}; "
                              f"known: {', '.join(self.formats())}")  # fmt: skip
        found = self._formats.get(name)
        if found is None:
            dirs = (builtin_formats_dir(),) if name == PLAIN else self._format_dirs()  # the reader's is built in
            paths = [d / f"{name}{RULE_SUFFIX}" for d in dirs]
            path = next((p for p in paths if p.is_file()), None)
            if path is None:
                known = self.formats()
                raise ConfigError(f"no source format '{name}'{did_you_mean(name, known)}; known: {', '.join(known)}")
            found = compile_format(path, self.providers, _shown(path))
            found = with_fused_answers(with_fused(found, self.providers), self.providers)  # (where pairs compose)
            self._formats[name] = found
            self.fused_answers[name] = found.fused_answers
        return found

    def names(self) -> list[str]:
        return list(self.providers)

    def get(self, name: str) -> Provider:
        try:
            return self.providers[name]
        except (KeyError, TypeError):  # TypeError: a name that cannot be a key (a list)
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


def read_rules_dir(directory: Path) -> Rulebook:
    """The built-in rulebook overlaid with every rule file in `directory`, read and compiled now."""
    if not directory.exists():
        raise RuleError(f"rules directory not found: {directory}")
    if not directory.is_dir():
        raise RuleError(
            f"{directory} is a file; give the directory that holds rule files ({directory.parent}),"
            f" with a rule file per provider named <provider>{RULE_SUFFIX}"
        )
    files = _rule_files(directory)
    if not files and not format_files(directory / FORMATS_DIR):
        raise RuleError(
            f"no rule files in {directory}: a rules directory holds <provider>{RULE_SUFFIX} files"
            f" (copy one from the built-in rules to start) or {FORMATS_DIR}/<format>{RULE_SUFFIX} files"
        )
    normal = directory / FORMATS_DIR / f"{PLAIN}{RULE_SUFFIX}"
    if normal.is_file() and normal.read_bytes() != (builtin_formats_dir() / normal.name).read_bytes():
        raise RuleError(  # a copy of it (a copied rules directory) is no change: only a changed one is refused
            f"the normal form's file ({FORMATS_DIR}/{normal.name}) is the request reader's own and built in;"
            " a rules directory cannot change it",
            file=str(normal),
        )
    builtin = builtin_rulebook().providers
    providers = dict(builtin)
    for path in files:
        provider = compile_rule_file(path)
        providers[provider.name] = provider
    mine = {p.stem for p in files}
    parents = parents_of(providers)
    for name, provider in builtin.items():  # a built-in variant follows a parent the directory overrides
        if name not in mine and mine & set(lineage(name, parents)[1:]) and provider.path is not None:
            providers[name] = compile_rule_file(provider.path, provider.file, search=(directory,))
    return Rulebook(providers, directory)


def parents_of(providers: Mapping[str, Provider]) -> dict[str, str]:
    """Each provider whose rule file `extends:` another, and that parent."""
    return {name: p.source.data["extends"] for name, p in providers.items() if "extends" in p.source.data}


def lineage(provider: str, parents: Mapping[str, str]) -> list[str]:
    """`provider`, its parent, the parent's parent, ...: where a variant looks for what it does not have."""
    out = [provider]
    while out[-1] in parents and parents[out[-1]] not in out:
        out.append(parents[out[-1]])
    return out


RulesArg = str | os.PathLike[str] | Rulebook | None

CACHED_DIRECTORIES = 8  # rulebooks of user directories kept, least recently used dropped first
_loaded: OrderedDict[str, Rulebook] = OrderedDict()
_loaded_lock = threading.Lock()


def load_rules(rules: RulesArg = None, *, reload: bool = False) -> Rulebook:
    """The built-in rulebook, or it overlaid with a user rules directory.

    A directory is read and compiled once and then served from a small cache (the
    CACHED_DIRECTORIES most recently used), so `rules=DIR` on every call costs one
    dictionary lookup: files are not looked at again. After editing the files, call
    `load_rules(DIR, reload=True)` (or keep the returned Rulebook and load a new one):
    reloading is explicit. A Rulebook never changes once built, so threads may share it.
    """
    if rules is None:
        return builtin_rulebook()
    if isinstance(rules, Rulebook):
        return rules
    key = os.path.abspath(os.fspath(rules))  # no file system access, unlike resolve()
    if not reload:
        with _loaded_lock:
            book = _loaded.get(key)
            if book is not None:
                _loaded.move_to_end(key)
                return book
    book = read_rules_dir(Path(key))  # outside the lock: compiling takes a while
    with _loaded_lock:
        _loaded[key] = book
        _loaded.move_to_end(key)
        while len(_loaded) > CACHED_DIRECTORIES:
            _loaded.popitem(last=False)
    return book
