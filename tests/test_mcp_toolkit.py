"""Toolkits from real MCP servers: declared to every provider, never called by translate.

The servers are tests/mcp_servers/shop.py, written with the SDK's own server API (MCPServer),
run as subprocesses over stdio and one over streamable HTTP on 127.0.0.1. Each logs every
inbound MCP method to a file, so the tests see from the server's side what was sent. One
toolkit of three servers is shared by the module (servers take a second to start); tests
that break or close servers make their own.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.judges import JUDGES
from support.variants import with_variants
from toolnexus import ToolkitError, create_client, create_toolkit, define_tool, providers
from toolnexus.devtools.conformance import demo_file
from toolnexus.devtools.stub import ProviderStub, scripted
from toolnexus.toolkit.toolkit import Toolkit

SHOP = Path(__file__).parent / "mcp_servers" / "shop.py"
TOKEN = "shop-token-5f2a9c7e1d"  # what the HTTP server requires; reaches it only through ${SHOP_TEST_TOKEN}
SHOP_TOOLS = ["place_order", "search_products", "add", "whoami", "out_of_stock", "inventory.count", "wait", "crash"]

# Where each provider's body lists the declared tool names (tests may know providers; the engine may not).
DECLARED_NAMES: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "anthropic": lambda body: [t["name"] for t in body["tools"]],
    "openai": lambda body: [t["function"]["name"] for t in body["tools"]],
    "gemini": lambda body: [d["name"] for t in body["tools"] for d in t["functionDeclarations"]],
    "bedrock": lambda body: [t["toolSpec"]["name"] for t in body["toolConfig"]["tools"]],
    "mistral": lambda body: [t["function"]["name"] for t in body["tools"]],
    "cohere": lambda body: [t["function"]["name"] for t in body["tools"]],
    "openai-responses": lambda body: [t["name"] for t in body["tools"]],
    "ollama": lambda body: [t["function"]["name"] for t in body["tools"]],
}
DECLARED_NAMES = with_variants(DECLARED_NAMES)  # a variant without an entry takes its parent's


def stdio(log: Path, **env: str) -> dict[str, Any]:
    return {"command": [sys.executable, str(SHOP)], "env": {"SHOP_LOG": str(log), **env}}


def methods(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if not line.startswith("pid ")] if log.exists() else []


def pid_of(log: Path) -> int:
    return next(int(line.split()[1]) for line in log.read_text().splitlines() if line.startswith("pid "))


def gone(pid: int) -> bool:
    """No such process, not even a zombie waiting to be reaped."""
    return not Path(f"/proc/{pid}").exists()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def runner() -> Iterator[asyncio.Runner]:
    """One event loop for the module: the shared toolkit's sessions live across tests."""
    with asyncio.Runner() as r:
        yield r


@pytest.fixture(scope="module")
def http_shop(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """shop.py over streamable HTTP on a free port; (url, its method log)."""
    folder = tmp_path_factory.mktemp("http_shop")
    log, port = folder / "methods.log", free_port()
    env = {**os.environ, "SHOP_LOG": str(log), "SHOP_TOKEN": TOKEN, "SHOP_ID": "remote-shop"}
    with (folder / "server.err").open("w") as err:
        proc = subprocess.Popen([sys.executable, str(SHOP), "http", str(port)], env=env, stdout=err, stderr=err)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, (folder / "server.err").read_text()
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp", log
    finally:
        proc.terminate()
        proc.wait(10)


@dataclass
class Shared:
    toolkit: Toolkit
    logs: dict[str, Path]


@pytest.fixture(scope="module")
def shared(
    runner: asyncio.Runner, http_shop: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Shared]:
    folder = tmp_path_factory.mktemp("shared")
    url, http_log = http_shop
    logs = {"shop": folder / "shop.log", "depot": folder / "depot.log", "remote": http_log}
    config = {
        "mcpServers": {
            "shop": stdio(logs["shop"], SHOP_PAGE_SIZE="2"),  # tools/list in four pages
            "depot": stdio(logs["depot"], SHOP_ID="${SHOP_TEST_DEPOT:-depot}"),
            "remote": {"url": url, "headers": {"Authorization": "Bearer ${SHOP_TEST_TOKEN}"}},
            "off": {"command": "no-such-server", "enabled": False},
        }
    }
    os.environ["SHOP_TEST_TOKEN"] = TOKEN
    try:
        toolkit = runner.run(create_toolkit(mcp_config=config))
    finally:
        del os.environ["SHOP_TEST_TOKEN"]
    yield Shared(toolkit, logs)
    pids = [pid_of(logs["shop"]), pid_of(logs["depot"])]
    runner.run(toolkit.close())
    assert all(gone(pid) for pid in pids)


# ---------------------------------------------------------------- listing and naming


def test_every_server_is_listed_through_every_page_and_prefixed(shared: Shared) -> None:
    names = [tool.name for tool in shared.toolkit.tools]
    for server in ("shop", "depot", "remote"):
        mine = [t for t in shared.toolkit.tools if t.server == server]
        assert [t.original_name for t in mine] == SHOP_TOOLS
        assert all(t.name.startswith(f"{server}__") for t in mine)
    assert len(set(names)) == len(names) == 3 * len(SHOP_TOOLS)
    assert methods(shared.logs["shop"]).count("tools/list") == 4  # 8 tools, 2 a page
    assert methods(shared.logs["depot"]).count("tools/list") == 1


def test_a_name_no_provider_would_take_is_rewritten_and_noted(shared: Shared) -> None:
    counts = [t for t in shared.toolkit.tools if t.original_name == "inventory.count"]
    assert len(counts) == 3
    for tool in counts:
        assert tool.name.startswith(f"{tool.server}__inventory_count_") and "." not in tool.name
    assert sorted(n.path for n in shared.toolkit.notes) == sorted(f"{t.server}.tools[5].name" for t in counts)
    assert all(n.kind == "rewritten" for n in shared.toolkit.notes)


def test_declarations_carry_the_server_schema_as_listed(shared: Shared) -> None:
    order = next(t for t in shared.toolkit.tools if t.name == "shop__place_order")
    schema = order.input_schema
    assert schema["required"] == ["items", "ship_to"]
    assert schema["properties"]["ship_to"] == {"$ref": "#/$defs/Address"}
    assert schema["$defs"]["Speed"]["enum"] == ["standard", "express"]
    assert "gift_note" not in schema["required"]
    assert order.description == "Place an order for the given items, shipped to an address."
    whoami = next(t for t in shared.toolkit.tools if t.name == "depot__whoami")
    assert whoami.input_schema["properties"] == {}


# ---------------------------------------------------------------- translate declares, never calls


def _demo_reply(provider: str) -> dict[str, Any]:
    script = json.loads(demo_file(provider).read_text())
    return {"model": script["model"], "reply": script["replies"][-1]}


def test_every_provider_has_a_declared_names_reader() -> None:
    assert set(DECLARED_NAMES) == set(providers())


@pytest.mark.parametrize("provider", providers())
def test_translate_declares_exactly_the_toolkit_and_calls_nothing(
    shared: Shared, runner: asyncio.Runner, provider: str
) -> None:
    before = {name: methods(log) for name, log in shared.logs.items()}
    demo = _demo_reply(provider)

    async def translate() -> dict[str, Any]:
        with ProviderStub(scripted([demo["reply"]])) as stub:
            async with create_client(stub.base_url, provider, demo["model"], api_key="k-test") as client:
                await client.translate([{"role": "user", "content": "Order two mugs."}], toolkit=shared.toolkit)
            body: dict[str, Any] = stub.requests[-1].body
            return body

    body = runner.run(translate())
    assert DECLARED_NAMES[provider](body) == [t.name for t in shared.toolkit.tools]
    JUDGES[provider](body)  # the official SDK's types accept every declaration
    after = {name: methods(log) for name, log in shared.logs.items()}
    assert after == before, "translate sent something to an MCP server"
    assert all("tools/list" in lines for lines in after.values())


# ---------------------------------------------------------------- tk.call: the caller's, explicitly


def test_call_reaches_the_right_server_and_tool(shared: Shared, runner: asyncio.Runner) -> None:
    tk = shared.toolkit
    assert runner.run(tk.call("shop__whoami")).content == "shop"
    assert runner.run(tk.call("depot__whoami")).content == "depot"  # ${SHOP_TEST_DEPOT:-depot} in env
    assert runner.run(tk.call("remote__whoami")).content == "remote-shop"  # over HTTP, with the expanded token
    count = next(t.name for t in tk.tools if t.server == "depot" and t.original_name == "inventory.count")
    assert runner.run(tk.call(count, '{"sku": "mug"}')).content == "7"
    assert methods(shared.logs["depot"])[-1] == "tools/call inventory.count"


def test_call_results_become_tool_message_content(shared: Shared, runner: asyncio.Runner) -> None:
    tk = shared.toolkit
    total = runner.run(tk.call("shop__add", {"a": 20.5, "b": 21.5}))
    assert (total.content, total.is_error) == ("42.0", False)
    assert total.raw["structuredContent"] == {"result": 42.0}
    order = runner.run(tk.call("remote__place_order", {"items": [{"sku": "mug", "quantity": 2}],
                                                       "ship_to": {"street": "1 rue", "city": "Lyon"}}))  # fmt: skip
    assert json.loads(order.content) == {"order": "o-1", "items": 1, "city": "Lyon", "speed": "standard"}
    failed = runner.run(tk.call("shop__out_of_stock", '{"sku": "mug"}'))
    assert failed.is_error and failed.content.startswith("Error: ")
    assert failed.to_message("call_1") == {"role": "tool", "tool_call_id": "call_1", "content": failed.content}


def test_a_call_that_outlasts_its_timeout_is_a_toolkit_error(shared: Shared, runner: asyncio.Runner) -> None:
    with pytest.raises(ToolkitError) as info:
        runner.run(shared.toolkit.call("depot__wait", {"seconds": 30}, timeout=0.2))
    assert (info.value.server, info.value.stage) == ("depot", "tools/call")
    assert runner.run(shared.toolkit.call("depot__whoami")).content == "depot"  # the session goes on


def test_call_works_from_another_task(shared: Shared, runner: asyncio.Runner) -> None:
    async def elsewhere() -> str:
        results = await asyncio.gather(
            asyncio.create_task(shared.toolkit.call("shop__add", {"a": 1, "b": 2})),
            asyncio.create_task(shared.toolkit.call("depot__add", {"a": 3, "b": 4})),
        )
        return " ".join(r.content for r in results)

    assert runner.run(elsewhere()) == "3.0 7.0"


@pytest.mark.parametrize(
    ("name", "arguments", "path"),
    [
        ("nope__tool", {}, ""),
        ("shop__add", "not json", "arguments"),
        ("shop__add", "[1, 2]", "arguments"),
    ],
)
def test_bad_calls_raise_toolkit_errors(
    shared: Shared, runner: asyncio.Runner, name: str, arguments: Any, path: str
) -> None:
    with pytest.raises(ToolkitError) as info:
        runner.run(shared.toolkit.call(name, arguments))
    assert (info.value.stage, info.value.path) == ("tools/call", path)


def test_a_native_tool_is_not_called_for_the_caller() -> None:
    def now() -> str:
        """The time."""
        raise AssertionError("never called")

    async def scenario() -> None:
        tk = await create_toolkit()
        tk.register(define_tool(now))
        with pytest.raises(ToolkitError, match="native tool"):
            await tk.call("now", {})

    asyncio.run(scenario())


# ---------------------------------------------------------------- secrets


def test_expanded_header_values_are_never_logged_or_shown(
    http_shop: tuple[str, Path], caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = http_shop
    monkeypatch.setenv("SHOP_TEST_TOKEN", TOKEN)
    monkeypatch.setenv("SHOP_TEST_WRONG", "wrong-token-9d8c7b6a")
    config = {
        "mcpServers": {
            "remote": {"url": url, "headers": {"Authorization": "Bearer ${SHOP_TEST_TOKEN}"}},
            "refused": {"url": url, "headers": {"Authorization": "Bearer ${SHOP_TEST_WRONG}"}},
        }
    }
    caplog.set_level(logging.DEBUG)  # every logger: toolnexus, mcp, httpx2

    async def scenario() -> list[str]:
        tk = await create_toolkit(mcp_config=config, strict=False)
        shown = [repr(tk), repr(tk.tools), repr(tk._sessions), str(tk.failures["refused"])]
        shown.append((await tk.call("remote__whoami")).content)
        await tk.close()
        with pytest.raises(ToolkitError) as info:
            await create_toolkit(mcp_config=config)
        return [*shown, str(info.value), repr(info.value)]

    shown = asyncio.run(scenario())
    assert "bearer token" in shown[3]  # the refusal itself is reported
    for text in [*shown, caplog.text]:
        assert TOKEN not in text and "wrong-token-9d8c7b6a" not in text


def test_a_stdio_server_echoing_an_expanded_value_is_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_TEST_SECRET", "s3cret-value-0042")
    echo = "import os, sys; sys.stderr.write('using key ' + os.environ['KEY'] + '\\n'); sys.exit(1)"
    config = {"mcpServers": {"echo": {"command": [sys.executable, "-c", echo], "env": {"KEY": "${SHOP_TEST_SECRET}"}}}}
    with pytest.raises(ToolkitError) as info:
        asyncio.run(create_toolkit(mcp_config=config))
    assert info.value.stderr_tail == "using key ***"
    assert "s3cret-value-0042" not in str(info.value)


# ---------------------------------------------------------------- failures, partial loading


def test_a_failing_server_fails_the_load_naming_it_with_its_stderr(tmp_path: Path) -> None:
    log = tmp_path / "good.log"
    broken = [sys.executable, "-c", "import sys; sys.stderr.write('boom: no database configured\\n'); sys.exit(2)"]
    config = {"mcpServers": {"good": stdio(log), "broken": {"command": broken}}}

    with pytest.raises(ToolkitError) as info:
        asyncio.run(create_toolkit(mcp_config=config))
    error = info.value
    assert (error.server, error.stage) == ("broken", "initialize")
    assert "boom: no database configured" in error.stderr_tail
    assert "boom: no database configured" in str(error) and "'broken'" in str(error)
    assert gone(pid_of(log)), "the server that did load was left running"


def test_partial_loading_skips_failed_servers_and_keeps_the_rest(
    tmp_path: Path, http_shop: tuple[str, Path], caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = http_shop
    monkeypatch.setenv("SHOP_TEST_TOKEN", TOKEN)
    auth = {"Authorization": "Bearer ${SHOP_TEST_TOKEN}"}
    pid_file = tmp_path / "pid"
    hang = f"import os, sys\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\nfor line in sys.stdin: pass"
    config = {
        "mcpServers": {
            "good": {"url": url, "headers": auth},
            "missing": {"command": str(tmp_path / "no-such-binary")},
            "crashes": {"command": [sys.executable, "-c", "import sys; print('bad flag', file=sys.stderr); exit(1)"]},
            "hangs": {"command": [sys.executable, "-c", hang]},
            "unset": {"command": [sys.executable, str(SHOP)], "env": {"KEY": "${SHOP_TEST_NEVER_SET}"}},
            "never lists": {"url": url, "headers": {**auth, "X-Hang-On-List": "1"}},
            "refused": {"url": url},  # no token
        }
    }

    async def scenario() -> tuple[list[str], dict[str, tuple[str, str]], str]:
        # the "hangs" server waits out the whole timeout; it is long enough that, on a loaded machine, the good
        # server still loads and the hanging child still writes its pid file within it
        tk = await create_toolkit(mcp_config=config, strict=False, timeout=8)
        stages = {name: (e.stage, e.path) for name, e in tk.failures.items()}
        names = [t.server for t in tk.tools]
        content = (await tk.call("good__add", {"a": 1, "b": 1})).content
        await tk.close()
        return names, stages, content

    with caplog.at_level(logging.WARNING, logger="toolnexus"):
        names, stages, content = asyncio.run(scenario())
    assert set(names) == {"good"} and content == "2.0"
    assert stages == {
        "missing": ("start", ""),
        "crashes": ("initialize", ""),
        "hangs": ("initialize", ""),
        "unset": ("config", "mcpServers.unset.env.KEY"),
        "never lists": ("tools/list", ""),
        "refused": ("initialize", ""),
    }
    assert {r.args[0] for r in caplog.records if isinstance(r.args, tuple)} == set(stages)
    assert gone(int(pid_file.read_text()))


def test_a_server_that_dies_mid_session_is_a_toolkit_error(tmp_path: Path) -> None:
    log = tmp_path / "shop.log"

    async def scenario() -> tuple[ToolkitError, ToolkitError]:
        async with await create_toolkit(mcp_config={"mcpServers": {"shop": stdio(log)}}) as tk:
            with pytest.raises(ToolkitError) as first:
                await tk.call("shop__crash")
            with pytest.raises(ToolkitError) as second:
                await tk.call("shop__whoami")
        return first.value, second.value

    first, second = asyncio.run(scenario())
    for error in (first, second):
        assert (error.server, error.stage) == ("shop", "tools/call")
        assert "crashing on purpose" in error.stderr_tail
    assert gone(pid_of(log))


# ---------------------------------------------------------------- closing


def test_close_from_another_task_ends_every_process_and_task(tmp_path: Path) -> None:
    logs = [tmp_path / "a.log", tmp_path / "b.log"]

    async def scenario() -> set[asyncio.Task[Any]]:
        tk = await create_toolkit(mcp_config={"mcpServers": {"a": stdio(logs[0]), "b": stdio(logs[1])}})
        assert all(not gone(pid_of(log)) for log in logs)

        async def shutdown_handler() -> None:  # not the task that created the toolkit
            await asyncio.wait_for(tk.close(), 10)

        await asyncio.create_task(shutdown_handler())
        await asyncio.sleep(0)
        await tk.close()  # twice is fine
        assert tk.tools == []
        with pytest.raises(ToolkitError, match="closed"):
            await tk.call("a__whoami")
        return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]

    leftover = asyncio.run(scenario())
    assert leftover == set()
    assert all(gone(pid_of(log)) for log in logs)


def test_cancelling_a_load_leaves_no_process(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    hang = f"import os, sys\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\nfor line in sys.stdin: pass"
    config = {"mcpServers": {"hangs": {"command": [sys.executable, "-c", hang]}}}

    async def scenario() -> set[asyncio.Task[Any]]:
        load = asyncio.create_task(create_toolkit(mcp_config=config, timeout=60))
        while not pid_file.exists() or not pid_file.read_text():
            await asyncio.sleep(0.02)
        load.cancel()
        with pytest.raises(asyncio.CancelledError):
            await load
        return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]

    assert asyncio.run(scenario()) == set()
    assert gone(int(pid_file.read_text()))
