"""Per-provider test tables for variants: a rule file that `extends:` another is tested with its
parent's entry (encoder, judge, generator, ...) unless the table has one of its own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

import toolnexus
from toolnexus.devtools.conformance import lineage, parents_of

T = TypeVar("T")


def with_variants(table: Mapping[str, T]) -> dict[str, T]:
    """`table` plus, for every built-in variant without an entry, its nearest ancestor's entry."""
    parents = parents_of(toolnexus.load_rules())
    out = dict(table)
    for name in parents:
        ancestor = next((a for a in lineage(name, parents) if a in table), None)
        if ancestor is not None:
            out.setdefault(name, table[ancestor])
    return out
