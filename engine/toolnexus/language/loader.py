"""Read a rule file into plain data while keeping where every value came from.

Why not `yaml.safe_load`: it silently keeps the last of two duplicate keys and
forgets line numbers. We compose nodes (which keep positions), refuse duplicate
keys and non-standard tags, build the value ourselves, and validate it against
the rule-format JSON Schema, so every RuleError names `file:line:column`.

Loading is bounded, so a hostile or broken file fails fast instead of hanging: a
file of at most MAX_FILE_BYTES, at most MAX_NODES keys and values as written,
nested at most MAX_DEPTH deep, and aliases that add at most MAX_ALIAS_VALUES
values in all (a YAML alias repeats its anchor's whole subtree).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import AliasEvent
from yaml.resolver import Resolver

from ..errors import RuleError

Key = tuple[str | int, ...]

MAX_FILE_BYTES = 256 * 1024  # the largest shipped rule file is about 12 KB
MAX_NODES = 20_000  # keys and values as written (the shipped files have under 1,000)
MAX_DEPTH = 40  # levels of nesting, aliases expanded (the shipped files reach 10)
MAX_ALIAS_VALUES = 1_000  # keys and values all aliases together may add by repeating their anchors

_SAFE_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
}


@dataclass
class RuleSource:
    """A loaded rule document: the data, plus the position of every value and key.

    A document merged from an `extends:` parent keeps, for each inherited value, the
    parent file it came from (`files`), so errors and reports point at the file that holds it.
    """

    file: str
    data: Any
    positions: dict[Key, tuple[int, int]] = field(default_factory=dict)
    files: dict[Key, str] = field(default_factory=dict)  # keys whose value another file holds

    def locate(self, key: Key) -> tuple[str, int | None, int | None]:
        """The file, line and column of `key`, or of its nearest located parent."""
        for end in range(len(key), -1, -1):
            if key[:end] in self.positions:
                return (self.files.get(key[:end], self.file), *self.positions[key[:end]])
        return self.file, None, None

    def where(self, key: Key) -> tuple[int | None, int | None]:
        """The line and column of `key`, or of its nearest located parent."""
        _, line, column = self.locate(key)
        return line, column

    def error(self, key: Key, message: str) -> RuleError:
        file, line, column = self.locate(key)
        return RuleError(message, file=file, line=line, column=column, rule=dotted(key))


def dotted(key: Key) -> str:
    """`("response", "items", 0, "kind")` -> `response.items[0].kind`."""
    out = ""
    for part in key:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    if type(word) is not str:  # a caller's None or number: nothing is close to it
        return ""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


class _Limit(Exception):
    """A loading bound was passed at `mark`."""

    def __init__(self, mark: yaml.Mark, message: str) -> None:
        super().__init__(message)
        self.mark = mark
        self.message = message


class _Bounds(Composer):
    """PyYAML's composer, counting as it goes: nodes, depth, and what aliases add.

    Composing keeps an alias as a second reference to its anchor's node, so it is cheap;
    building the data repeats the subtree, which is what an alias bomb exploits. Each
    node's expanded size is known when composed, so an alias is charged its full cost
    and refused at its own line before anything is expanded.
    """

    def __init__(self) -> None:
        Composer.__init__(self)
        self.written = 0
        self.depth = 0
        self.alias_values = 0
        self.expanded = 0  # values so far, aliases expanded
        self.sizes: dict[int, int] = {}  # id(node) -> its expanded size, for anchored nodes

    def compose_node(self, parent: yaml.Node | None, index: Any) -> Any:
        parser: Any = self  # the parser class beside this one gives the events
        event = parser.peek_event()
        if parser.check_event(AliasEvent):
            node = super().compose_node(parent, index)
            size = self.sizes.get(id(node), 1)
            self.alias_values += size
            self.expanded += size
            if self.alias_values > MAX_ALIAS_VALUES:
                raise _Limit(event.start_mark, f"aliases repeat more than {MAX_ALIAS_VALUES} values; write them out")
            return node
        self.written += 1
        if self.written > MAX_NODES:
            raise _Limit(event.start_mark, f"more than {MAX_NODES} keys and values")
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Limit(event.start_mark, f"nested more than {MAX_DEPTH} deep")
        before = self.expanded
        self.expanded += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self.depth -= 1
        if getattr(event, "anchor", None) is not None:
            self.sizes[id(node)] = self.expanded - before
        return node


class _PureLoader(_Bounds, yaml.SafeLoader):
    def __init__(self, text: str) -> None:
        yaml.SafeLoader.__init__(self, text)
        _Bounds.__init__(self)


def _loader_class() -> type[_Bounds]:
    """libyaml's parser under our composer when PyYAML has it (about 8x faster), else PyYAML's own."""
    try:
        from yaml._yaml import CParser
    except ImportError:
        return _PureLoader

    class _FastLoader(CParser, _Bounds, SafeConstructor, Resolver):
        def __init__(self, text: str) -> None:
            CParser.__init__(self, text)
            _Bounds.__init__(self)
            SafeConstructor.__init__(self)
            Resolver.__init__(self)

        def get_single_node(self) -> yaml.Node | None:
            return _Bounds.get_single_node(self)

    return _FastLoader


_Loader: Callable[[str], _Bounds] = _loader_class()


def parse_rule_text(text: str, file: str) -> RuleSource:
    """Compose YAML safely into data + positions, or raise RuleError with a location."""
    if len(text) > MAX_FILE_BYTES:
        raise RuleError(f"larger than {MAX_FILE_BYTES // 1024} KB; a rule file is far smaller", file=file)
    loader: Any = None
    try:
        loader = _Loader(text)  # the reader refuses control characters here
        node = loader.get_single_node()
    except _Limit as exc:
        raise RuleError(exc.message, file=file, line=exc.mark.line + 1, column=exc.mark.column + 1) from None
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(exc, file) from None
    except yaml.reader.ReaderError as exc:
        line = text[: exc.position].count("\n") + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        raise RuleError(f"YAML: character #x{code:04x} is not allowed", file=file, line=line) from None
    except yaml.YAMLError as exc:
        raise RuleError(f"YAML: {' '.join(str(exc).split())}", file=file) from None
    finally:
        if loader is not None:
            loader.dispose()
    if node is None:
        raise RuleError("the file is empty", file=file, line=1)
    source = RuleSource(file=file, data=None)
    source.data = _build(node, (), source, set())
    return source


def _syntax_error(exc: yaml.MarkedYAMLError, file: str) -> RuleError:
    """PyYAML's several lines (context, problem, their marks and a snippet) as one located line."""
    mark = exc.problem_mark or exc.context_mark
    line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)
    problem, context = (" ".join((text or "").split()) for text in (exc.problem, exc.context))
    begun = exc.context_mark
    moved = begun is not None and mark is not None and (begun.line, begun.column) != (mark.line, mark.column)
    since = f" from {begun.line + 1}:{begun.column + 1}" if begun is not None and moved else ""
    if problem and context.startswith("while "):  # the scanner's and parser's: what, (while doing what)
        what = f"{problem} ({context}{since})"
    elif problem and context:  # the composer's: what was expected, then what was found
        what = f"{context}{since}, {problem}"
    else:
        what = problem or context or "cannot be parsed"
    return RuleError(f"YAML syntax: {what}", file=file, line=line, column=column)


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _build(node: yaml.Node, key: Key, source: RuleSource, active: set[int]) -> Any:
    source.positions.setdefault(key, _mark(node))
    if node.tag not in _SAFE_TAGS:
        hint = " (an unquoted date: quote it)" if node.tag.endswith(":timestamp") else ""
        raise source.error(key, f"tag {node.tag!r} is not allowed: rule files are plain data{hint}")
    if id(node) in active:
        raise source.error(key, "an alias refers to its own parent (a cycle)")
    if len(key) > MAX_DEPTH:  # aliases inside aliases can nest deeper than what was written
        raise source.error(key, f"nested more than {MAX_DEPTH} deep (aliases expanded)")
    if isinstance(node, yaml.ScalarNode):
        try:
            return SafeConstructor().construct_object(node)
        except ConstructorError as exc:
            raise source.error(key, f"cannot read value: {exc.problem}") from None
    active.add(id(node))
    try:
        if isinstance(node, yaml.SequenceNode):
            return [_build(child, (*key, i), source, active) for i, child in enumerate(node.value)]
        assert isinstance(node, yaml.MappingNode)
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            name = _key_name(key_node, key, source)
            child = (*key, name)
            source.positions[child] = _mark(key_node)
            if name in out:
                raise source.error(child, f"duplicate key '{name}'")
            out[name] = _build(value_node, child, source, active)
        return out
    finally:
        active.discard(id(node))


def _key_name(node: yaml.Node, parent: Key, source: RuleSource) -> str:
    """A mapping key: a plain string, located at its own line when it is not."""
    line, column = _mark(node)
    if node.tag == "tag:yaml.org,2002:merge":
        raise RuleError("YAML merge keys (<<) are not supported; write the keys out",
                        file=source.file, line=line, column=column, rule=dotted(parent))  # fmt: skip
    if not isinstance(node, yaml.ScalarNode) or node.tag != "tag:yaml.org,2002:str":
        shown = node.value if isinstance(node, yaml.ScalarNode) else type(node).__name__
        raise RuleError(f"keys must be strings, got {shown!r} ({node.tag})",
                        file=source.file, line=line, column=column, rule=dotted(parent))  # fmt: skip
    return str(node.value)


@cache
def rule_schema() -> dict[str, Any]:
    """The rule-format JSON Schema shipped beside the rule files."""
    text = builtin_rules_dir().joinpath("rules.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator() -> jsonschema.protocols.Validator:
    cls = jsonschema.validators.validator_for(rule_schema())
    validator: jsonschema.protocols.Validator = cls(rule_schema())
    return validator


def validate_against_schema(source: RuleSource) -> None:
    """Raise the most precise schema violation as a located RuleError."""
    errors = sorted(_validator().iter_errors(source.data), key=lambda e: (-len(e.absolute_path), str(e.path)))
    if not errors:
        return
    err = errors[0]
    key: Key = tuple(err.absolute_path)
    if err.validator == "additionalProperties" and isinstance(err.instance, dict):
        allowed = err.schema.get("properties", {}) if isinstance(err.schema, dict) else {}
        extra = [k for k in err.instance if k not in allowed]
        if extra:
            raise source.error((*key, extra[0]), f"unknown key '{extra[0]}'{did_you_mean(extra[0], allowed)}")
    if err.validator == "required":
        raise source.error(key, err.message)
    raise source.error(key, f"{err.message}")


def builtin_rules_dir() -> Path:
    """Where the shipped rule files are: inside the installed package, or the repo's rules/."""
    packaged = Path(str(resources.files("toolnexus"))) / "rules"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[3] / "rules"


# ---------------------------------------------------------------- extends: a rule file over its parent

DELETE = "$delete"  # `key: {$delete: true}` in a file that extends another removes the inherited key


def extend(parent: RuleSource, child: RuleSource) -> RuleSource:
    """The child's rules over its parent's, every value keeping the file and line that hold it.

    Plain mappings merge key by key (inherited keys keep their order, new ones follow); a list,
    a scalar or a template operation (a mapping with a `$`-key) replaces the inherited value
    whole; `{$delete: true}` removes an inherited key. A `$delete` with nothing to delete is a
    located error, so a misspelt key cannot silently delete nothing.
    """
    out = RuleSource(file=child.file, data=None)
    out.data = _overlay(parent.data, child.data, (), parent, child, out)
    return out


def _plain(value: Any) -> bool:
    return isinstance(value, dict) and not any(k.startswith("$") for k in value)


def _is_delete(value: Any, key: Key, source: RuleSource) -> bool:
    if not (isinstance(value, dict) and DELETE in value):
        return False
    if value != {DELETE: True}:
        raise source.error(key, f"{DELETE} is written alone as {{{DELETE}: true}}")
    return True


def _overlay(base: Any, over: Any, key: Key, parent: RuleSource, child: RuleSource, out: RuleSource) -> Any:
    if not (_plain(base) and _plain(over)):
        _refuse_stray_delete(over, key, child)
        _take(child, over, key, out)
        return over
    _take_one(child, key, out)
    merged: dict[str, Any] = {}
    for name, value in base.items():
        sub = (*key, name)
        if name not in over:
            merged[name] = value
            _take(parent, value, sub, out)
        elif not _is_delete(over[name], sub, child):
            merged[name] = _overlay(value, over[name], sub, parent, child, out)
    for name, value in over.items():
        if name not in base:
            sub = (*key, name)
            if _is_delete(value, sub, child):
                raise child.error(sub, f"{DELETE}: '{name}' is not inherited here, so there is nothing to delete")
            _refuse_stray_delete(value, sub, child)
            merged[name] = value
            _take(child, value, sub, out)
    return merged


def _refuse_stray_delete(value: Any, key: Key, source: RuleSource) -> None:
    """A `$delete` where nothing is inherited (inside a list, or a value that replaces the parent's whole)."""
    if isinstance(value, dict):
        if DELETE in value:
            raise source.error(key, f"{DELETE} removes an inherited mapping key; nothing is inherited here")
        for name, sub in value.items():
            _refuse_stray_delete(sub, (*key, name), source)
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            _refuse_stray_delete(sub, (*key, i), source)


def _take_one(src: RuleSource, key: Key, out: RuleSource) -> None:
    if key in src.positions:
        out.positions[key] = src.positions[key]
        file = src.files.get(key, src.file)
        if file != out.file:
            out.files[key] = file
        else:
            out.files.pop(key, None)


def _take(src: RuleSource, value: Any, key: Key, out: RuleSource) -> None:
    """Copy the positions of `value` (at `key`) and everything inside it from `src`."""
    _take_one(src, key, out)
    if isinstance(value, dict):
        for name, sub in value.items():
            _take(src, sub, (*key, name), out)
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            _take(src, sub, (*key, i), out)
