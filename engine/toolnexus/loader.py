"""Read a rule file into plain data while keeping where every value came from.

Why not `yaml.safe_load`: it silently keeps the last of two duplicate keys and
forgets line numbers. We compose nodes (which keep positions), refuse duplicate
keys and non-standard tags, build the value ourselves, and validate it against
the rule-format JSON Schema, so every RuleError names `file:line:column`.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from yaml.constructor import ConstructorError, SafeConstructor

from .errors import RuleError

Key = tuple[str | int, ...]

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
    """A loaded rule document: the data, plus the position of every value and key."""

    file: str
    data: Any
    positions: dict[Key, tuple[int, int]] = field(default_factory=dict)
    generated: dict[Key, str] = field(default_factory=dict)  # rule key -> the Python compiled from it

    def where(self, key: Key) -> tuple[int | None, int | None]:
        """The line and column of `key`, or of its nearest located parent."""
        for end in range(len(key), -1, -1):
            if key[:end] in self.positions:
                return self.positions[key[:end]]
        return None, None

    def error(self, key: Key, message: str) -> RuleError:
        line, column = self.where(key)
        return RuleError(message, file=self.file, line=line, column=column, rule=dotted(key))


def dotted(key: Key) -> str:
    """`("response", "items", 0, "kind")` -> `response.items[0].kind`."""
    out = ""
    for part in key:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def parse_rule_text(text: str, file: str) -> RuleSource:
    """Compose YAML safely into data + positions, or raise RuleError with a location."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (None, None)
        what = "; ".join(part for part in (exc.context, exc.problem) if part) or str(exc)
        raise RuleError(f"YAML syntax: {what}", file=file, line=line, column=column) from None
    except yaml.reader.ReaderError as exc:
        line = text[: exc.position].count("\n") + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        raise RuleError(f"YAML: character #x{code:04x} is not allowed", file=file, line=line) from None
    except yaml.YAMLError as exc:
        raise RuleError(f"YAML: {exc}", file=file) from None
    except RecursionError:
        raise RuleError("YAML: nested too deeply", file=file) from None
    if node is None:
        raise RuleError("the file is empty", file=file, line=1)
    source = RuleSource(file=file, data=None)
    try:
        source.data = _build(node, (), source, set())
    except RecursionError:
        raise RuleError("nested too deeply", file=file) from None
    return source


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _build(node: yaml.Node, key: Key, source: RuleSource, active: set[int]) -> Any:
    source.positions.setdefault(key, _mark(node))
    if node.tag not in _SAFE_TAGS:
        hint = " (an unquoted date: quote it)" if node.tag.endswith(":timestamp") else ""
        raise source.error(key, f"tag {node.tag!r} is not allowed: rule files are plain data{hint}")
    if id(node) in active:
        raise source.error(key, "an alias refers to its own parent (a cycle)")
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
    return Path(__file__).resolve().parents[2] / "rules"
