"""What every code generator shares: the namespace of fresh names a generated module runs in, and indentation."""

from __future__ import annotations

from typing import Any


class Namespace:
    """A generated module's globals (`names`, what `exec` runs it in) and its counter of fresh names.

    One counter serves the bound values and the local variables the code generator makes, so no two
    names collide; `tag` ends every fresh name (templates pasted into one function stay apart)."""

    def __init__(self, names: dict[str, Any] | None = None, tag: str = "") -> None:
        self.names: dict[str, Any] = {} if names is None else names  # a dict given is filled, not copied
        self.count = 0
        self.tag = tag

    def fresh(self, prefix: str) -> str:
        """A new name: `prefix`, the count, the tag."""
        self.count += 1
        return f"{prefix}{self.count}{self.tag}"

    def name(self, value: Any, prefix: str) -> str:
        """A fresh name bound to `value` in `names`."""
        name = self.fresh(prefix)
        self.names[name] = value
        return name


def indent(lines: list[str], width: int = 4) -> list[str]:
    """`lines` moved right by `width` spaces (into a block of the generated code)."""
    return [" " * width + line for line in lines]
