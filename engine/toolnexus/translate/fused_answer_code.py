"""A (source format, provider) pair's fused answer function (README "Performance": what it saves).

Today's route reads the provider's answer into a TranslateResult (the response function, `outbound`), then the
format's writer reads that result again and writes the answer (`format_code.generate_writer`), and a glue function
wraps it. The fused function is the two in one: the response function's own lines read the answer, each field of
the result left in a variable (`outbound.RESULT_VALUES`), then the writer's own lines write the answer from those
variables (`format_code.writer_lines`), with no TranslateResult made: the body keeps its fields, and the result is
made of them when first read (`AnswerBody.result`).

It declines (None) whatever today's route would note or explain, so that route runs from the start and says it
exactly: every explain step of the response function (an element or a source its fast test does not take, a finish
reason not in the table, a null the check must settle) and every Ctx it would make (a note, a rendered template),
and anything raised. A pair gets none where the pieces are not yet taken (README: the step plan): a provider that
dispatches elements by kind, takes arguments as anything but text or restores ids; a writer that reads the view or
the provider's said answer whole, or notes through a Ctx (a writer's made ids are cut in its own lines, from the
answer id the fused function read).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any, NoReturn

from ..language.codegen import indent
from ..language.jsonsafe import standard_loads_each
from .format_code import ResultAt, answer_reads, writer_lines
from .formats import AnswerBody, FusedAnswer, SourceFormat
from .outbound import RESULT_FIELDS, RESULT_VALUES, Outbound, ResponseGen
from .stream_rules import NO_READS

# Where the fused function holds the result's fields, each in a variable, each call as `new_tool_call`'s arguments
# (the writer reads them there: `writer_lines`), their inputs read by `held_inputs`.
HELD = ResultAt("R_{}", "e[{place}]", "HELD_INPUTS({})")
# What only a result object, a call object, a whole view or a Ctx gives the writer's lines.
_NEEDS_RESULT = re.compile(r"(?<![\w.'])(r\.|e\.|VIEW\(|SAID\(|CALLS?\(|INPUTS\(|Ctx\()")


class Declined(Exception):
    """Raised where the response function's lines would explain, note or settle: the fused function returns None."""


class _Declines:
    """The fused function's `o`: each Outbound step the response function's lines reach (the explain steps, the
    settling of nulls, the refusal of an answer that is no object) declines."""

    def __getattr__(self, name: str) -> NoReturn:
        raise Declined(name)


def _declined(*_: Any) -> NoReturn:
    """The fused function's `Ctx`: a note or a rendered template is today's route's to make."""
    raise Declined("Ctx")


def held_inputs(calls: list[tuple[Any, ...]]) -> list[Any]:
    """`formats.call_inputs` of calls held as new_tool_call's arguments, each given as text: each read, all at once
    ({} for none; no read at all for no calls, a text answer's)."""
    if not calls:
        return []
    texts = [call[2] for call in calls if call[2]]
    if len(texts) == len(calls):
        return standard_loads_each(texts)
    read = iter(standard_loads_each(texts))
    return [next(read) if call[2] else {} for call in calls]


def with_fused_answers(fmt: SourceFormat, providers: Mapping[str, Any]) -> SourceFormat:
    """The format with the fused answer function of each provider whose pieces compose with it, and their sources."""
    writer = writer_lines(fmt, HELD)
    made = {
        name: found
        for name, p in providers.items()
        if (found := generate_fused_answer(fmt, writer, p.outbound, p.streaming)) is not None
    }
    return replace(
        fmt,
        fused_answers=MappingProxyType({name: run for name, (_, run) in made.items()}),
        fused_answers_code=MappingProxyType({name: text for name, (text, _) in made.items()}),
    )


def generate_fused_answer(
    fmt: SourceFormat, writer: tuple[list[str], dict[str, Any], bool], outbound: Outbound, streaming: Any
) -> tuple[str, FusedAnswer] | None:
    """The pair's fused answer function and its source, or None when its pieces do not compose."""
    if outbound.tool_call_ids is not None:
        return None
    for src in outbound.sources:
        calls = any(parts.tool_call is not None for parts in src.parts.values())
        if src.kind is not None or src.kind_by_key or (calls and src.arguments != "text"):
            return None
    lines, writer_names, reads_time = writer
    if any(_NEEDS_RESULT.search(line) for line in lines):
        return None
    gen = ResponseGen(outbound)
    gen.call = "({})"  # (a call held as new_tool_call's arguments: made a TranslatedToolCall if the result is read)
    read = gen.read()
    names = {**writer_names}
    found, at = answer_reads(NO_READS if streaming is None else streaming.answer_reads, reads_time, names, "r")
    if any(gen.names[name] is not value for name, value in names.items() if name in gen.names):
        return None  # (a name bound to two values: the two pieces' namespaces do not compose)
    names.update(gen.names, DECLINES=_Declines(), Ctx=_declined, AnswerBody=AnswerBody, HELD_INPUTS=held_inputs)
    fields = [f"{HELD.field.format(name)} = {value}" for name, value in zip(RESULT_FIELDS, RESULT_VALUES, strict=True)]
    made_of = ", ".join(HELD.field.format(name) for name in RESULT_FIELDS)
    body = [
        *ResponseGen.check(),
        *read,
        *fields,
        "notes = []",
        *found,
        f"answer_id, created = {at['found']}, {at['created']}",
    ]
    text = "\n".join([
        "def fused_answer(r, requested_model, id_map=None, tokens=0, given=None):",
        "    o = DECLINES  # each explain step, note or settling the lines reach declines: today's route takes it",
        "    try:",
        *indent(body, 8),
        *indent(lines, 4),
        "    except Exception:",
        "        return None",
        "    body = AnswerBody(out)",
        f"    body.made, body.made_of, body.notes = None, ({made_of}), tuple(notes)",
        "    return body",
    ]) + "\n"  # fmt: skip
    exec(compile(text, f"<fused answer {outbound.provider} -> {fmt.name}>", "exec"), names)
    return text, names["fused_answer"]
