"""`toolnexus demo`: a full two-turn tool-calling exchange against an embedded stub per provider.

For every provider the rules define, a local stub on 127.0.0.1 answers with the
canned provider-native replies in `fixtures/demo/<provider>.json`: first a tool
call, then the final answer. The demo itself executes the tool (toolnexus never
does), sends the result back through `client.translate`, and prints the OpenAI
request, the provider-native body on the wire and the OpenAI-shaped result of
each turn. Then the first turn again, streamed: the stub sends the provider's
event stream (`fixtures/demo/<provider>.sse`, `.ndjson` or `.eventstream` by its rule file's
framing; the same answer) in small pieces and
`client.translate_stream` prints each OpenAI chunk's delta as it arrives. It fails
(exit 1) when a turn does not come out as expected, or the streamed result differs.

Then each exchange of `fixtures/demo/sources/*.json` in a source format (README "Source
formats"): the request in the format's shape in, the provider's body on the wire, the answer
out in the format's shape, two turns whose history is built from the format's answers (how, is
data in the file: the demo names no format), then turn 1 streamed as the format's events.

Then the same exchange with the tool from a local MCP server (`python -m
toolnexus.devtools.demo_mcp`, over stdio): translate declares it as `calc__add`, and the
demo runs it with `tk.call`. Without the `mcp` extra that part is skipped.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

from ..http.client import create_client
from ..http.client_stream import SourceEventStream
from ..http.framing import FRAMINGS
from ..language.paths import MISSING, compile_path
from ..toolkit.toolkit import Toolkit, create_toolkit, define_tool
from ..translate.formats import AnswerBody
from ..translate.result import TranslateResult
from ..translate.rulebook import RulesArg, load_rules
from .conformance import demo_file, fixtures_dir
from .stub import ProviderStub, StubReply, scripted, sse_pieces

DEMO_KEY = "demo-key-not-secret"
QUESTION = "What is 21 + 21? Use the add tool."
MCP_CONFIG = {"mcpServers": {"calc": {"command": [sys.executable, "-m", "toolnexus.devtools.demo_mcp"]}}}

Runner = Callable[[str, str], Awaitable[str]]  # (declared tool name, arguments JSON) -> tool message content


def add(a: float, b: float) -> str:
    """Add two numbers and return the sum."""
    total = a + b
    return str(int(total) if float(total).is_integer() else total)


def _show(out: TextIO, title: str, value: Any) -> None:
    out.write(f"  {title}:\n    {_pretty(value, '    ')}\n")


def _pretty(value: Any, indent: str, width: int = 100) -> str:
    """JSON that keeps short objects on one line, so a turn reads at a glance."""
    flat = json.dumps(value, ensure_ascii=False)
    if len(flat) + len(indent) <= width or not isinstance(value, (dict, list)) or not value:
        return flat
    inner = indent + "  "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k)}: {_pretty(v, inner, width)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    return "[\n" + ",\n".join(inner + _pretty(v, inner, width) for v in value) + f"\n{indent}]"


def _turn_two_problems(body: Any, result: TranslateResult) -> list[str]:
    """What is wrong with the second turn: its body must carry the tool result, its answer must be 42."""
    problems = []
    if "42" not in json.dumps(body):
        problems.append("turn 2's body on the wire does not carry the tool result")
    if result.finish_reason != "stop" or "42" not in result.text:
        problems.append(f"turn 2 should answer 42, got {result.text!r} ({result.finish_reason})")
    return problems


async def _run_native(name: str, arguments: str) -> str:
    return add(**json.loads(arguments))  # the demo runs the tool, not toolnexus


def _calling(value: Any, tool: str) -> Any:
    """The canned replies, calling the demo tool by the name it is declared with (they say `add`)."""
    if isinstance(value, dict):
        return {k: _calling(v, tool) for k, v in value.items()}
    if isinstance(value, list):
        return [_calling(v, tool) for v in value]
    return tool if value == add.__name__ else value


async def demo_provider(
    name: str,
    script: dict[str, Any],
    out: TextIO,
    rules: RulesArg = None,
    *,
    toolkit: Toolkit | None = None,
    run: Runner = _run_native,
) -> list[str]:
    """Run the exchange for one provider; return what went wrong (nothing when it worked).

    Without a toolkit, the demo declares `add` natively; with one, its first tool stands in for it.
    """
    problems: list[str] = []
    own = toolkit is None
    if toolkit is None:
        toolkit = await create_toolkit()
        toolkit.register(define_tool(add))
    replies = _calling(script["replies"], toolkit.tools[0].name)
    with ProviderStub(scripted(replies)) as stub:
        async with create_client(stub.base_url, name, script["model"], api_key=DEMO_KEY, rules=rules) as client:
            messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
            for turn in (1, 2):
                out.write(f"\n{name} · turn {turn}\n")
                _show(out, "OpenAI request (messages)", messages)
                result = await client.translate(messages, toolkit=toolkit)
                _show(out, f"{name} body on the wire ({stub.requests[-1].path})", stub.requests[-1].body)
                _show(out, "OpenAI-shaped result", result.to_dict())
                if turn == 1:
                    if result.finish_reason != "tool_calls" or not result.tool_calls:
                        problems.append(f"turn 1 should ask for a tool, got {result.finish_reason!r}")
                        break
                    messages.append({"role": "assistant", "content": result.text or None,
                                     "tool_calls": result.tool_calls_json()})  # fmt: skip
                    for call in result.tool_calls:
                        value = await run(call.name, call.arguments)
                        out.write(f"  the demo runs {call.name}({call.arguments}) -> {value}\n")
                        messages.append({"role": "tool", "tool_call_id": call.id, "content": value})
                else:
                    problems += _turn_two_problems(stub.requests[-1].body, result)
    if own:
        await toolkit.close()
    return problems


# a provider's demo stream, by its rule file's framing: the file beside its script, and what it holds
STREAM_FILES = {"sse": (".sse", "server-sent events"), "ndjson": (".ndjson", "NDJSON lines"),
                "aws-eventstream": (".eventstream", "AWS event-stream frames")}  # fmt: skip


def _streamed(events: bytes, framing: str) -> StubReply:
    """The stub's reply telling a captured stream in small pieces, as the rule file's framing sends it."""
    boundaries = {"sse": events.count(b"\n\n"), "ndjson": events.count(b"\n")}.get(framing, len(events) // 128)
    pieces = sse_pieces([events], cuts=boundaries * 2)
    media = FRAMINGS[framing].media_types[0]
    return StubReply(stream=pieces, pause=0.01, headers={"Content-Type": media})


async def demo_stream(
    name: str, script: dict[str, Any], events: bytes, out: TextIO, rules: RulesArg = None, framing: str = "sse"
) -> list[str]:
    """Turn 1 again, streamed: print every chunk's delta as it arrives; the result must be turn 1's."""
    toolkit: Toolkit = await create_toolkit()
    toolkit.register(define_tool(add))
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    reply = _streamed(events, framing)
    out.write(f"\n{name} · turn 1 streamed (the same answer as {STREAM_FILES[framing][1]}, in pieces)\n")
    with ProviderStub(scripted([script["replies"][0], reply])) as stub:
        async with create_client(stub.base_url, name, script["model"], api_key=DEMO_KEY, rules=rules) as client:
            whole = await client.translate(messages, toolkit=toolkit)
            stream = client.translate_stream(messages, toolkit=toolkit)
            async for chunk in stream:
                if chunk["choices"]:
                    choice = chunk["choices"][0]
                    finish = f"  finish_reason={choice['finish_reason']}" if choice["finish_reason"] else ""
                    out.write(f"  chunk delta: {json.dumps(choice['delta'], ensure_ascii=False)}{finish}\n")
                else:
                    out.write(f"  chunk usage: {json.dumps(chunk['usage'])}\n")
                out.flush()
            out.write(f"  {name} stream on the wire: {stub.requests[-1].path}\n")
    await toolkit.close()
    if stream.result.to_dict() != whole.to_dict():
        _show(out, "assembled result (stream.result)", stream.result.to_dict())
        return ["the streamed result differs from the whole answer's"]
    out.write("  stream.result is exactly turn 1's result (text, tool calls, finish reason, usage, model, notes)\n")
    return []


def _fill(template: Any, scope: dict[str, Any]) -> Any:
    """A turn written from an exchange file's template: each string "$PATH" is the value at PATH of `scope`."""
    if isinstance(template, dict):
        return {k: _fill(v, scope) for k, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, scope) for v in template]
    if isinstance(template, str) and template.startswith("$"):
        value = compile_path(template[1:])(scope)
        return None if value is MISSING else value
    return template


async def demo_source(
    exchange: dict[str, Any], script: dict[str, Any], out: TextIO, rules: RulesArg = None
) -> list[str]:
    """One exchange in a source format: its request in, the provider's body on the wire, its answer out;
    turn 2's history is turn 1's answer and the tool's result, written in the format (the file says how)."""
    problems: list[str] = []
    source, name = exchange["source"], exchange["provider"]
    calls_in = compile_path(exchange["calls"])
    tools, max_tokens = exchange["tools"], int(exchange.get("max_tokens", 0))
    messages: list[Any] = [exchange["ask"]]
    first: dict[str, Any] = {}
    with ProviderStub(scripted(script["replies"])) as stub:
        async with create_client(stub.base_url, name, script["model"], api_key=DEMO_KEY, rules=rules) as client:
            for turn in (1, 2):
                out.write(f"\n{source} in, {name} out · turn {turn}\n")
                _show(out, f"{source} request in (messages)", messages)
                answer = await client.translate(messages, tools=tools, max_tokens=max_tokens, source=source)
                _show(out, f"{name} body on the wire ({stub.requests[-1].path})", stub.requests[-1].body)
                _show(out, f"{source} answer out", answer)
                result = answer.result if isinstance(answer, AnswerBody) else answer
                if turn == 1:
                    first = dict(answer)
                    calls = calls_in(answer)
                    if result.finish_reason != "tool_calls" or not isinstance(calls, list) or not calls:
                        problems.append(f"turn 1 should ask for a tool, got {result.finish_reason!r}")
                        break
                    results = []
                    for call in calls:
                        name_of, arguments = call[exchange["call_name"]], call[exchange["call_input"]]
                        value = add(**arguments)  # the demo runs the tool, not toolnexus
                        out.write(f"  the demo runs {name_of}({json.dumps(arguments)}) -> {value}\n")
                        results.append(_fill(exchange["result"], {"call": call, "value": value}))
                    messages.append(_fill(exchange["answer_turn"], {"answer": dict(answer)}))
                    messages.append(_fill(exchange["result_turn"], {"results": results}))
                else:
                    problems += _turn_two_problems(stub.requests[-1].body, result)
    streaming = load_rules(rules).get(name).streaming
    if problems or streaming is None:
        return problems
    events = demo_file(name, STREAM_FILES[streaming.framing][0], rules)
    out.write(f"\n{source} in, {name} out · turn 1 streamed ({source} events from {events.name}, in pieces)\n")
    with ProviderStub(scripted([_streamed(events.read_bytes(), streaming.framing)])) as stub:
        async with create_client(stub.base_url, name, script["model"], api_key=DEMO_KEY, rules=rules) as client:
            stream = client.translate_stream([exchange["ask"]], tools=tools, max_tokens=max_tokens, source=source)
            async for event in stream:
                out.write(f"  event: {json.dumps(event, ensure_ascii=False)}\n")
    message = stream.message if isinstance(stream, SourceEventStream) else None
    if message is None or dict(message) != first:
        _show(out, f"assembled {source} answer (stream.message)", message)
        return ["the streamed answer differs from turn 1's"]
    out.write(f"  stream.message is exactly turn 1's {source} answer\n")
    return problems


async def run_demo(out: TextIO, rules: RulesArg = None) -> int:
    """Every provider's exchange, then the MCP one; ends with one summary line (counts and time)."""
    started = time.perf_counter()
    scripts: dict[str, dict[str, Any]] = {}
    failures = runs = 0
    for name in load_rules(rules).names():
        path = demo_file(name, rules=rules)
        if not path.exists():
            out.write(f"\n{name}: no demo script at fixtures/demo/{name}.json\n")
            failures += 1
            continue
        scripts[name] = script = json.loads(path.read_text(encoding="utf-8"))
        problems = await demo_provider(name, script, out, rules)
        streaming = load_rules(rules).get(name).streaming
        if streaming is not None and not problems:
            stream_path = demo_file(name, STREAM_FILES[streaming.framing][0], rules)
            if stream_path.exists():
                problems += await demo_stream(name, script, stream_path.read_bytes(), out, rules, streaming.framing)
            else:
                problems.append(f"no demo stream at fixtures/demo/{stream_path.name}")
        failures += _report(out, name, problems)
        runs += 1
    for path in sorted((fixtures_dir() / "demo" / "sources").glob("*.json")):
        exchange = json.loads(path.read_text(encoding="utf-8"))
        script = json.loads(demo_file(exchange["provider"], rules=rules).read_text(encoding="utf-8"))
        problems = await demo_source(exchange, script, out, rules)
        failures += _report(out, f"{exchange['source']} in, {exchange['provider']} out", problems)
        runs += 1
    if importlib.util.find_spec("mcp") is None:
        out.write("\nMCP: skipped (pip install 'toolnexus[mcp]' to see a toolkit from an MCP server)\n")
        return _summary(out, runs, failures, "", started)
    async with await create_toolkit(mcp_config=MCP_CONFIG) as toolkit:
        listed = ", ".join(f"{t.original_name} as {t.name}" for t in toolkit.tools)
        out.write(
            f"\nMCP · a toolkit from a local MCP server over stdio (python -m toolnexus.devtools.demo_mcp): {listed}\n"
        )

        async def run(tool: str, arguments: str) -> str:
            return (await toolkit.call(tool, arguments)).content  # the demo calls it; translate never does

        for name, script in scripts.items():
            problems = await demo_provider(name, script, out, rules, toolkit=toolkit, run=run)
            failures += _report(out, f"{name} (MCP)", problems)
            runs += 1
    return _summary(out, runs, failures, " and with a tool from an MCP server", started)


def _summary(out: TextIO, runs: int, failures: int, mcp: str, started: float) -> int:
    """The last line: how many exchanges ran and failed, and how long it took."""
    seconds = time.perf_counter() - started
    out.write(f"\ndemo: {runs} exchanges (whole, streamed{mcp}), {failures} failed in {seconds:.1f}s\n")
    return 1 if failures else 0


def _report(out: TextIO, label: str, problems: list[str]) -> int:
    for problem in problems:
        out.write(f"  FAIL: {problem}\n")
    out.write(f"{label}: {'FAILED' if problems else 'ok'}\n")
    return 1 if problems else 0


def main(out: TextIO, rules: RulesArg = None) -> int:
    return asyncio.run(run_demo(out, rules))
