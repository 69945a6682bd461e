"""A (source format, provider) pair's fused answer function (README "Performance": what it saves).

Today's route reads the provider's answer into a TranslateResult (the response function, `outbound`), then the
format's writer reads that result again and writes the answer (`format_code.generate_writer`), and a glue function
wraps it. The fused function is the two in one: the response function's own lines read the answer, each field of
the result left in a variable (`outbound.RESULT_VALUES`), then the writer's own lines write the answer from those
variables (`format_code.writer_lines`), with no TranslateResult made: the body keeps its fields, and the result is
made of them when first read (`AnswerBody.result`).

It declines (None) where today's route would explain, so that route runs from the start and says it exactly: every
explain step of the response function (an element or a source its fast test does not take, a finish reason not in
the table, a null the check must settle), and anything raised. The read's own notes (its Ctx's: a restored or made
call id, a rendered template's) are the result's, first in the body's notes as today. Any provider's lines compose
(its kinds, arguments as objects, restored ids: all in its lines); a writer composes unless it reads the view or the
provider's said answer whole, or notes through a Ctx (its made ids are cut in its own lines, from the answer id the
fused function read).

Where the read made no piece of its state (no `Found`: no extras, reasoning or annotations, OpenAI's answers), those
fields are values known at generation (`{}`, `""`, `[]`), so the writer's lines run in a copy folded over them
(`unmade_split`, `fold.folded`): their reads of the extras and reasoning and the tests of them gone, one test (`f is
None`) choosing the copy; an answer that made one runs the lines as written. The copy also knows the types the
read always leaves (`outbound.RESULT_TYPES`: the text a string, the refusal a string or None, so `is_empty` of them is
their truth) and runs the writer's rich paths on known values at generation (`paths.is_path_read`: the empty
annotations' path, its result written as a fresh display).

Where the writer walks the calls with their inputs (a `Message`'s `tool_use` blocks), each block is made where the
read holds its call, the input parsed there by orjson (`at_each_call`: a refusal declines; the call's id and name read
from the read's own names, not the held tuple: `held_block`), and the texts parsed are screened once after the read,
as they are (their UTF-8, a run of digits inside a string passing), for a number orjson may read otherwise
(`jsonsafe.texts_read_alike`: one declines).

Where the provider's usage took one of its straight paths (every count clean: `ResponseGen.usage_straight`; a
second one where a `$sum`'s later counts are absent, Anthropic's answers without cache counts), that path sets a
flag to its number and the writer's counts are read from the read's own variables, one branch per path
(`with_straight_usage`, `format_code.straight_usage_lines`: no type or sign test of a count known clean, only a
difference tested below 0); else they are derived from the usage object the read built, as the format's own
writer does.

Where the writer seals the message extras alone (a Response's reasoning item's `encrypted_content`), the read keeps a
flag (`TEXTS`, `ResponseGen.texts`): true until an object merged into the extras may hold anything but strings (a
kind whose template copies the element, `{thinking_blocks: [{$get: "@"}]}`, has the element's values tested where
the read meets it; any other kind's merge clears it). Where it holds, the seal is orjson's text with no search for
what orjson writes otherwise (`templates.sealed_texts`, `texts_sealed`): the same bytes, a third of the seal's work
saved.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any, NoReturn

from ..language.codegen import indent
from ..language.fold import Typed, folded, parsed_expression
from ..language.jsonsafe import ORJSON_LOADS, standard_loads_each, texts_read_alike
from ..language.paths import MISSING, is_path_read
from ..language.templates import EMPTY_IS_FALSITY, is_empty, sealed_texts
from .format_code import ResultAt, answer_reads, straight_usage_lines, writer_lines
from .formats import AnswerBody, FusedAnswer, SourceFormat
from .outbound import RESULT_FIELDS, RESULT_TYPES, RESULT_VALUES, Outbound, ResponseGen
from .stream_rules import NO_READS

# Where the fused function holds the result's fields, each in a variable, each call as `new_tool_call`'s arguments
# (the writer reads them there: `writer_lines`), their inputs read by `held_inputs`.
HELD = ResultAt("R_{}", "e[{place}]", "HELD_INPUTS({})", "u_straight")
# The read's flag saying the message extras hold only strings (`ResponseGen.texts`), and the writer's seal of them:
# a line taking the extras' view field into a variable, the next sealing that variable alone (`$seal` with no `onto`).
TEXTS = "m_texts"
_EXTRAS_SEALED = re.compile(r"^( *)(\w+) = V_message_extras\n(.*)\bsealed\(\2, ''\)", re.MULTILINE)
# The writer's walk of the held calls, each block one expression of the call (`e`) and its input (`i`).
_CALL_WALK = re.compile(r"^( *)for e, i in zip\(R_tool_calls, inputs\):\n\1    blocks\.append\((.*)\)$", re.MULTILINE)
# What only a result object, a call object, a whole view or a Ctx gives the writer's lines.
_NEEDS_RESULT = re.compile(r"(?<![\w.'])(r\.|e\.|VIEW\(|SAID\(|CALLS?\(|INPUTS\(|Ctx\()")


# The fused function's last lines: the body, its result's fields kept (`made_of`), the read's notes then the writer's.
TAIL = (
    "body = AnswerBody(out)",
    f"body.made, body.made_of, body.notes = None, ({', '.join(HELD.field.format(name) for name in RESULT_FIELDS)}),"
    f" (*{HELD.field.format('notes')}, *notes)",
    "return body",
)


class Declined(Exception):
    """Raised where the response function's lines would explain or settle: the fused function returns None."""


class _Declines:
    """The fused function's `o`: each Outbound step the response function's lines reach (the explain steps, the
    settling of nulls, the refusal of an answer that is no object) declines; its provider is read as it is."""

    def __init__(self, provider: str) -> None:
        self.provider = provider  # (the one thing the lines read of it: the name a made call id is hashed with)

    def __getattr__(self, name: str) -> NoReturn:
        raise Declined(name)


def held_inputs(calls: list[tuple[Any, ...]]) -> list[Any]:
    """`formats.call_inputs` of calls held as new_tool_call's five arguments: the object a call was given as (its
    fifth), else its text read, all at once ({} for none; no read at all for no calls, a text answer's). A provider
    gives all its calls' arguments one way (text, or objects), so the first call's says which list to try first,
    each made by one comprehension of tuple indexes: a function per call cost more than the read it serves."""
    if not calls:
        return []
    if calls[0][4] is None:
        texts = [call[2] for call in calls if call[4] is None and call[2]]
        if len(texts) == len(calls):
            return standard_loads_each(texts)
    else:
        givens = [call[4] for call in calls]
        if None not in givens:
            return givens
        texts = [call[2] for call in calls if call[4] is None and call[2]]
    read = iter(standard_loads_each(texts) if texts else ())
    return [given if (given := call[4]) is not None else next(read) if call[2] else {} for call in calls]


def with_fused_answers(fmt: SourceFormat, providers: Mapping[str, Any]) -> SourceFormat:
    """The format with the fused answer function of each provider whose pieces compose with it, and their sources."""
    lines, writer_names, reads_time = writer_lines(fmt, HELD)
    kept = set(re.findall(r"\w+", "\n".join(TAIL)))
    writer = unmade_split(lines, kept, writer_names), writer_names, reads_time  # (once a format)
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
    lines, writer_names, reads_time = writer
    if any(_NEEDS_RESULT.search(line) for line in lines):
        return None
    gen = ResponseGen(outbound)
    gen.call = "({})"  # (a call held as new_tool_call's arguments: made a TranslatedToolCall if the result is read)
    gen.straight_mark = HELD.straight
    lines, gen.texts = texts_sealed(lines)
    walked = at_each_call(lines, writer_names)
    if walked is not None:
        lines, gen.at_call = walked
        gen.call = "(held_call := ({}))"
    read = gen.read()
    lines, told = with_straight_usage(lines, fmt, gen.straight_usage)
    untold = {f"{HELD.straight} = {number}" for number in range(1, len(gen.straight_usage) + 1)} - told
    read = [line for line in read if line.strip() not in untold]  # (there the derivation from the usage runs)
    names = {**writer_names}
    found, at = answer_reads(NO_READS if streaming is None else streaming.answer_reads, reads_time, names, "r")
    if any(gen.names[name] is not value for name, value in names.items() if name in gen.names):
        return None  # (a name bound to two values: the two pieces' namespaces do not compose)
    names.update(gen.names, DECLINES=_Declines(outbound.provider), AnswerBody=AnswerBody, HELD_INPUTS=held_inputs)
    names.update(SEALED_TEXTS=sealed_texts)
    if walked is not None:
        names.update(LOADS=ORJSON_LOADS, TEXTS_READ_ALIKE=texts_read_alike)
    fields = [f"{HELD.field.format(name)} = {value}" for name, value in zip(RESULT_FIELDS, RESULT_VALUES, strict=True)]
    body = [
        *ResponseGen.check(),
        f"{HELD.straight} = 0",
        *([f"{gen.texts} = True"] if gen.texts else []),
        *(["call_texts = []", "call_blocks = []"] if walked else []),
        *read,
        *(["if call_texts and not TEXTS_READ_ALIKE(call_texts): o.numbers_read_otherwise()"] if walked else []),
        *fields,
        "notes = []",
        *found,
        f"answer_id, created = {at['found']}, {at['created']}",
    ]
    text = "\n".join([
        "def fused_answer(r, requested_model, id_map=None, tokens=0, given=None):",
        "    o = DECLINES  # each explain step or settling the lines reach declines: today's route takes it",
        "    try:",
        *indent(body, 8),
        *indent(lines, 4),
        "    except Exception:",
        "        return None",
        *indent([*TAIL]),
    ]) + "\n"  # fmt: skip
    exec(compile(text, f"<fused answer {outbound.provider} -> {fmt.name}>", "exec"), names)
    return text, names["fused_answer"]


def texts_sealed(lines: list[str]) -> tuple[list[str], str | None]:
    """The writer's lines with its seal of the message extras taken by `sealed_texts` where the read's flag
    (`TEXTS`) says they hold only strings (the seal's text then searched for nothing), and the flag; the lines as
    they are and None where no line seals them alone."""
    text = "\n".join(lines)
    told = _EXTRAS_SEALED.sub(rf"\1\2 = V_message_extras\n\3(SEALED_TEXTS if {TEXTS} else sealed)(\2, '')", text)
    return (told.split("\n"), TEXTS) if told != text else (lines, None)


def at_each_call(
    lines: list[str], names: Mapping[str, Any]
) -> tuple[list[str], Callable[[tuple[str, ...]], list[str]]] | None:
    """Each call's block made where the read holds the call, its input parsed there (orjson; anything it refuses
    declines, so today's route reads it), not walked after the read with the inputs read apart (`held_inputs`): the
    writer's lines with each walk of the calls (one block expression of the call and its input, in each copy
    `unmade_split` made) as the blocks made so (`call_blocks`), and the read's lines at each call
    (`ResponseGen.at_call`); the texts parsed are screened once after the read (`jsonsafe.texts_read_alike`: a
    number orjson may read otherwise declines). None where the walk reads anything but the call, its input and the
    writer's constants, the lines read the inputs elsewhere, or orjson is missing."""
    text = "\n".join(lines)
    walks = list(_CALL_WALK.finditer(text))
    if ORJSON_LOADS is None or not walks:
        return None
    blocks = {ast.dump(parsed_expression(walk.group(2))) for walk in walks}
    expression = walks[0].group(2)
    read = {node.id for node in ast.walk(parsed_expression(expression)) if isinstance(node, ast.Name)}
    if len(blocks) != 1 or not read <= {"e", "i", *names}:
        return None
    text = _CALL_WALK.sub(r"\1blocks += call_blocks", text)
    kept = [line for line in text.split("\n") if line.strip() != f"inputs = {HELD.inputs.format('R_tool_calls')}"]
    if any(re.search(r"(?<![\w.'])inputs(?![\w'])", line) for line in kept):
        return None
    block = re.sub(r"(?<![\w.'])i(?![\w'])", "call_input", expression)

    def at_call(held: tuple[str, ...]) -> list[str]:
        """The call's input (the object it came as, else its text parsed, else {}: `formats.call_inputs`) and block
        (`held_block`)."""
        arguments, given = held[2], held[-1]
        parsed = f"call_input = LOADS({arguments}); call_texts.append({arguments})"
        if given == "None":
            lines = [f"if {arguments}: {parsed}", "else: call_input = {}"]
        else:
            lines = [
                f"if {given} is not None: call_input = {given}",
                f"elif {arguments}: {parsed}",
                "else: call_input = {}",
            ]
        return [*lines, f"call_blocks.append({held_block(block, held)})"]

    return kept, at_call


def held_block(block: str, held: tuple[str, ...]) -> str:
    """The writer's block expression of a call (`e`) as the read holds it (`held_call`, `new_tool_call`'s arguments
    made of the expressions `held`): a member held as a plain name or constant read from that name (a variable's
    read, not a tuple's subscript; the line right after the call is held, so the name still holds it), any other
    from the held call."""

    def member(found: re.Match[str]) -> str:
        expression = held[int(found.group(1))]
        return expression if expression.isidentifier() else found.group(0)

    block = re.sub(r"(?<![\w.'])e\[(\d)\]", member, block)
    return re.sub(r"(?<![\w.'])e(?![\w'])", "held_call", block)


def with_straight_usage(
    lines: list[str], fmt: SourceFormat, paths: tuple[Mapping[tuple[str, ...], tuple[str, str]], ...]
) -> tuple[list[str], set[str]]:
    """The writer's lines with the usage's counts read from the provider's read where one of its straight usage
    paths ran (`paths`, the flag set to each one's number from 1; `format_code.straight_usage_lines`): each `if not
    FLAG:` block deriving them from the usage (one in each copy `unmade_split` made) followed by a branch per path
    the writer's counts can be told from; and the flag's settings (`FLAG = N`) those paths keep. A path whose
    counts the writer reads but it cannot tell keeps none (its read must then never set the flag: the derivation
    runs)."""
    flag = f"if not {HELD.straight}:"
    wanted = frozenset(re.findall(r"(?<![\w.'])U_\d+(?![\w'])", "\n".join(_outside(lines, flag))))
    told = {
        number: straight
        for number, known in enumerate(paths, 1)
        if (straight := straight_usage_lines(fmt, known, wanted)) is not None
    }
    kept = {f"{HELD.straight} = {number}" for number in told}
    # (none: nothing to set; the common path, the first, last: the `else:` no test reaches)
    branches = [(number, straight) for number, straight in reversed(told.items()) if straight]
    if not branches:
        return lines, kept

    def closing(opened: str) -> list[str]:
        """The branches after an `if not FLAG:` block at the indent `opened`: one per path told, the last `else:`
        (any other flag value is a path whose counts are all absent there: nothing to set, no line reached)."""
        out: list[str] = []
        for k, (number, straight) in enumerate(branches):
            test = (
                "else:"
                if k == len(branches) - 1 and len(told) == len(branches)
                else f"elif {HELD.straight} == {number}:"
            )
            out += [f"{opened}{test}", *indent(straight, len(opened) + 4)]
        return out

    out: list[str] = []
    opened: str | None = None  # the indent of the `if not FLAG:` whose block is being copied
    for line in lines:
        if opened is not None and not line.startswith(opened + " "):
            out += closing(opened)
            opened = None
        if line.strip() == flag:
            opened = line[: len(line) - len(line.lstrip())]
        out.append(line)
    if opened is not None:
        out += closing(opened)
    return out, kept


def _outside(lines: list[str], flag: str) -> list[str]:
    """The lines but the blocks opened by `flag` and the line setting every count MISSING first (`said_lines`):
    where the writer reads the counts it writes."""
    kept: list[str] = []
    opened: str | None = None
    for line in lines:
        if opened is not None and line.startswith(opened + " "):
            continue
        opened = None
        if line.strip() == flag:
            opened = line[: len(line) - len(line.lstrip())]
        elif not re.fullmatch(r"\s*(U_\d+ = )+MISSING", line):
            kept.append(line)
    return kept


def unmade_fields() -> dict[str, dict[str, Any]]:
    """Each result field the read leaves at a value known at generation unless it made a piece of its state (the
    `VALUE if PIECE is None else ...` of `RESULT_VALUES`: no Found, no extras, reasoning or annotations), by piece."""
    unmade: dict[str, dict[str, Any]] = {}
    for name, value in zip(RESULT_FIELDS, RESULT_VALUES, strict=True):
        node = parsed_expression(value)
        if not isinstance(node, ast.IfExp) or not isinstance(test := node.test, ast.Compare):
            continue
        if isinstance(test.left, ast.Name) and isinstance(test.ops[0], ast.Is) and _is_none(test.comparators[0]):
            unmade.setdefault(test.left.id, {})[HELD.field.format(name)] = ast.literal_eval(node.body)
    return unmade


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def unmade_split(lines: list[str], keep: set[str], names: Mapping[str, Any] = MappingProxyType({})) -> list[str]:
    """The writer's lines (a function body's) run as two branches: where the read made none of the pieces whose
    fields the lines read (one test), the lines folded over those fields' known values (`fold.folded`: the extras'
    and reasoning's reads and tests gone), the types the read always leaves (`RESULT_TYPES`: a string's or a
    refusal's `is_empty` its truth) and the writer's rich paths (`names`' `paths.is_path_read`: run on a known
    value at generation, an empty annotations list's); else as written. The lines alone where the fold changes
    nothing."""
    text = "\n".join(lines)
    pieces = {piece: fields for piece, fields in unmade_fields().items()
              if any(re.search(rf"(?<![\w.']){name}(?![\w'])", text) for name in fields)}  # fmt: skip
    if not pieces:
        return lines
    known: dict[str, Any] = {HELD.field.format(name): Typed(types) for name, types in RESULT_TYPES.items()}
    known.update((name, value) for fields in pieces.values() for name, value in fields.items())
    plain = [line[4:] for line in lines]
    pure = {name: value for name, value in names.items() if is_path_read(value)}
    falsity = {name: EMPTY_IS_FALSITY for name, value in names.items() if value is is_empty}
    fast = folded(plain, known, {"MISSING": MISSING}, keep, pure, falsity)
    if fast == folded(plain, {}, {"MISSING": MISSING}, keep):
        return lines
    test = " and ".join(f"{piece} is None" for piece in pieces)
    return [f"    if {test}:", *indent(fast, 8), "    else:", *indent(plain, 8)]
