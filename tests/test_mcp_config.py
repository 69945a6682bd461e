"""mcp_config reading, the declared-name rule and MCP results as tool-message content: no server needed."""

from __future__ import annotations

import asyncio
import copy
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from support.strategies import SETTINGS
from toolnexus import ToolkitError, create_toolkit
from toolnexus.toolkit.mcp_config import read_config
from toolnexus.toolkit.mcp_tools import MAX_NAME, NAME_RULE, declare, rewritten, tool_result

# Every provider's published tool-name rule; a declared name must pass all of them.
PROVIDER_NAME_RULES = {
    "anthropic": re.compile(r"[a-zA-Z0-9_-]{1,64}"),
    "openai": re.compile(r"[a-zA-Z0-9_-]{1,64}"),
    "gemini": re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}"),
}

# ---------------------------------------------------------------- reading the config


def test_the_claude_desktop_vs_code_and_opencode_shapes_read_alike() -> None:
    claude = {"mcpServers": {"f": {"command": "python", "args": ["-m", "srv"], "env": {"A": "1"}}}}
    vscode = {"servers": {"f": {"type": "stdio", "command": "python", "args": ["-m", "srv"], "env": {"A": "1"}}}}
    opencode = {"mcp": {"f": {"type": "local", "command": ["python", "-m", "srv"], "environment": {"A": "1"}}}}
    read = [read_config(c)[0] for c in (claude, vscode, opencode)]
    assert {(s.transport, s.command, tuple(s.env.items())) for s in read} == {
        ("stdio", ("python", "-m", "srv"), (("A", "1"),))
    }
    assert [s.path for s in read] == ["mcpServers.f", "servers.f", "mcp.f"]


def test_url_servers_and_disabled_ones() -> None:
    specs = read_config(
        {
            "mcpServers": {
                "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${T}"}},
                "typed": {"type": "streamable-http", "url": "http://127.0.0.1:9/mcp"},
                "off": {"command": "x", "enabled": False},
                "also off": {"url": "http://x/mcp", "disabled": True},
            }
        }
    )
    assert [(s.name, s.transport) for s in specs] == [("remote", "http"), ("typed", "http")]
    assert specs[0].headers == {"Authorization": "Bearer ${T}"}  # expanded only when the server starts


def test_a_config_file_and_its_relative_cwd(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"f": {"command": "srv", "cwd": "work"}}}))
    for given_as in (path, str(path)):
        (spec,) = read_config(given_as)
        assert spec.cwd == str(tmp_path / "work")
    assert read_config({"mcpServers": {"f": {"command": "srv", "cwd": "work"}}})[0].cwd == "work"


def test_reading_never_mutates_the_config() -> None:
    config = {"mcp": {"f": {"command": ["a", "b"], "args": ["c"], "environment": {"K": "${V}"}}}}
    before = copy.deepcopy(config)
    read_config(config)
    assert config == before


BAD_CONFIGS: list[tuple[Any, str, str]] = [
    ([], "", "must be a mapping"),
    ({}, "", "exactly one of"),
    ({"mcpServers": {}, "servers": {}}, "", "exactly one of"),
    ({"mcpServers": []}, "mcpServers", "must map"),
    ({"mcpServers": {"f": "python"}}, "mcpServers.f", "must be an object"),
    ({"mcpServers": {"f": {"comand": "x"}}}, "mcpServers.f.comand", "did you mean 'command'"),
    ({"mcpServers": {"f": {"command": "x", "url": "http://h/mcp"}}}, "mcpServers.f.url", "not both"),
    ({"mcpServers": {"f": {"env": {}}}}, "mcpServers.f", "needs a command"),
    ({"mcpServers": {"f": {"command": ""}}}, "mcpServers.f.command", "non-empty"),
    ({"mcpServers": {"f": {"command": ["x", 1]}}}, "mcpServers.f.command", "list of strings"),
    ({"mcpServers": {"f": {"command": "x", "args": "-v"}}}, "mcpServers.f.args", "list of strings"),
    ({"mcpServers": {"f": {"command": "x", "env": {"A": 1}}}}, "mcpServers.f.env", "map names to strings"),
    ({"mcpServers": {"f": {"command": "x", "env": {}, "environment": {}}}}, "mcpServers.f.environment", "not both"),
    ({"mcpServers": {"f": {"command": "x", "headers": {}}}}, "mcpServers.f.headers", "only a url server"),
    ({"mcpServers": {"f": {"command": "x", "type": "http"}}}, "mcpServers.f.type", "does not go with command"),
    ({"mcpServers": {"f": {"url": "http://h/sse", "type": "sse"}}}, "mcpServers.f.type", "SSE"),
    ({"mcpServers": {"f": {"url": "ftp://h"}}}, "mcpServers.f.url", "http:// or https://"),
    ({"mcpServers": {"f": {"url": "http://h/mcp", "cwd": "/"}}}, "mcpServers.f.cwd", "only a command"),
    ({"mcpServers": {"f": {"command": "x", "enabled": "no"}}}, "mcpServers.f.enabled", "true or false"),
]


@pytest.mark.parametrize(("config", "path", "words"), BAD_CONFIGS, ids=[c[2] + "-" + c[1] for c in BAD_CONFIGS])
def test_a_bad_config_names_where(config: Any, path: str, words: str) -> None:
    with pytest.raises(ToolkitError) as info:
        read_config(config)
    assert (info.value.path, info.value.stage) == (path, "config")
    assert words in info.value.message


def test_a_missing_or_broken_file(tmp_path: Path) -> None:
    with pytest.raises(ToolkitError, match="cannot read") as info:
        read_config(tmp_path / "none.json")
    assert info.value.path == str(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text("{mcpServers:")
    with pytest.raises(ToolkitError, match="not valid JSON"):
        read_config(tmp_path / "bad.json")


def test_variables_expand_in_headers_and_env_only_and_stay_out_of_reprs() -> None:
    (http,) = read_config({"servers": {"s": {"url": "http://h/${HOST}", "headers": {"A": "Bearer ${TOKEN}"}}}})
    (local,) = read_config({"servers": {"l": {"command": "${CMD}", "env": {"K": "${MISSING:-fallback}", "L": "$X"}}}})
    environ = {"TOKEN": "sk-live-abcdef", "HOST": "h2", "CMD": "c"}
    resolved = http.resolve(environ)
    assert resolved.headers == {"A": "Bearer sk-live-abcdef"} and http.url == "http://h/${HOST}"
    assert "sk-live-abcdef" not in repr(resolved) + repr(http)
    assert resolved.redact("auth failed for sk-live-abcdef") == "auth failed for ***"
    assert local.resolve(environ).env == {"K": "fallback", "L": "$X"}
    assert local.command == ("${CMD}",)
    with pytest.raises(ToolkitError) as info:
        http.resolve({})
    assert (info.value.server, info.value.path) == ("s", "servers.s.headers.A")
    assert "TOKEN" in info.value.message


def test_without_the_mcp_package_the_error_says_what_to_install() -> None:
    code = (
        "import sys, asyncio; sys.modules['mcp'] = None\n"
        "import toolnexus\n"
        "try:\n"
        "    asyncio.run(toolnexus.create_toolkit(mcp_config={'mcpServers': {'f': {'command': 'x'}}}))\n"
        "except toolnexus.ToolkitError as e:\n"
        "    print(e)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert "pip install 'toolnexus[mcp]'" in run.stdout


def test_no_config_no_servers() -> None:
    tk = asyncio.run(create_toolkit())
    assert tk.tools == [] and tk.failures == {} and tk.notes == []


# ---------------------------------------------------------------- the declared-name rule


def listing(*names: str) -> list[dict[str, Any]]:
    return [{"name": n, "inputSchema": {"type": "object", "properties": {}}} for n in names]


def test_valid_names_are_prefixed_and_nothing_is_noted() -> None:
    declared, notes = declare({"files": listing("read", "write-all"), "web": listing("read")})
    assert [d.name for d in declared] == ["files__read", "files__write-all", "web__read"]
    assert [(d.server, d.original_name) for d in declared] == [("files", "read"), ("files", "write-all"),
                                                               ("web", "read")]  # fmt: skip
    assert notes == []


def test_invalid_and_colliding_names_are_rewritten_and_noted() -> None:
    listings = {"a": listing("b__c", "x.y", "é"), "a__b": listing("c"), "9lives": listing("go"), "s": listing("t" * 70)}
    declared, notes = declare(listings)
    names = {(d.server, d.original_name): d.name for d in declared}
    assert names[("a", "b__c")] != names[("a__b", "c")]  # both would be a__b__c
    assert names[("a", "b__c")].startswith("a__b__c_") and names[("a__b", "c")].startswith("a__b__c_")
    assert names[("a", "x.y")].startswith("a__x_y_")
    assert names[("9lives", "go")].startswith("_9lives__go_")
    assert len(names[("s", "t" * 70)]) == MAX_NAME
    assert sorted(n.path for n in notes) == sorted(
        [
            f"{server}.tools[{i}].name"
            for server, i in [("a", 0), ("a", 1), ("a", 2), ("a__b", 0), ("9lives", 0), ("s", 0)]
        ]
    )
    assert all(n.kind == "rewritten" for n in notes)


def test_a_collision_the_rule_cannot_untie_is_an_error() -> None:
    taken = rewritten("a", "x.y").removeprefix("a__")  # a tool literally named like another's rewrite
    with pytest.raises(ToolkitError, match="both declared as") as info:
        declare({"a": listing("x.y", taken)})
    assert info.value.stage == "tools/list"


names = st.text(min_size=1, max_size=80)


@SETTINGS
@given(listings=st.dictionaries(names, st.lists(names, max_size=5, unique=True), max_size=4))
def test_declared_names_are_valid_everywhere_unique_and_reversible(listings: dict[str, list[str]]) -> None:
    try:
        declared, notes = declare({server: listing(*tools) for server, tools in listings.items()})
    except ToolkitError:
        return  # only when a literal name equals another's rewrite, as above
    assert len({d.name for d in declared}) == len(declared) == sum(map(len, listings.values()))
    plain = Counter(f"{server}__{tool}" for server, tools in listings.items() for tool in tools)
    for d in declared:
        assert all(rule.fullmatch(d.name) for rule in PROVIDER_NAME_RULES.values()), d.name
        assert d.original_name in listings[d.server]  # the map back reaches the tool as its server named it
        mine = f"{d.server}__{d.original_name}"
        kept = NAME_RULE.fullmatch(mine) is not None and plain[mine] == 1
        assert (d.name == mine) == kept
    assert len(notes) == sum(d.name != f"{d.server}__{d.original_name}" for d in declared)


# ---------------------------------------------------------------- results as tool-message content


RESULTS: list[tuple[dict[str, Any], str, bool, list[str]]] = [
    ({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, "a\nb", False, []),
    ({"content": [{"type": "text", "text": "3.0"}], "structuredContent": {"result": 3.0}}, "3.0", False, []),
    ({"content": [], "structuredContent": {"ok": True, "é": [1]}}, '{"ok": true, "é": [1]}', False, []),
    ({"content": [{"type": "text", "text": "no stock"}], "isError": True}, "Error: no stock", True, []),
    ({"content": []}, "", False, []),
    (
        {
            "content": [
                {"type": "resource", "resource": {"uri": "file:///r.txt", "text": "inside"}},
                {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                {"type": "resource_link", "uri": "file:///x", "name": "x"},
                {"type": "resource", "resource": {"uri": "file:///b", "blob": "aGk=", "mimeType": "app/x"}},
            ]
        },
        "inside",
        False,
        ["content[1]", "content[2]", "content[3]"],
    ),
]


@pytest.mark.parametrize(("raw", "content", "is_error", "dropped"), RESULTS)
def test_results_become_tool_message_content(raw: dict[str, Any], content: str, is_error: bool,
                                             dropped: list[str]) -> None:  # fmt: skip
    before = copy.deepcopy(raw)
    result = tool_result(raw)
    assert (result.content, result.is_error) == (content, is_error)
    assert [n.path for n in result.notes] == dropped and all(n.kind == "dropped" for n in result.notes)
    assert result.raw == before == raw


def test_values_from_the_environment_are_secrets_whatever_their_length_defaults_from_six_characters() -> None:
    (spec,) = read_config({"servers": {"s": {"url": "http://h/mcp", "headers": {
        "A": "${SHORT}", "B": "${UNSET_A:-on}", "C": "${UNSET_B:-sk-default-42}", "D": "${EMPTY}"}}}})  # fmt: skip
    resolved = spec.resolve({"SHORT": "k3", "EMPTY": ""})
    assert resolved.secrets == frozenset({"k3", "sk-default-42"})  # "on" is written in the config; "" shows nothing
    assert resolved.redact("key k3, default sk-default-42, flag on") == "key ***, default ***, flag on"


def test_a_secret_quoted_escaped_is_redacted_too() -> None:
    (spec,) = read_config({"servers": {"s": {"command": "c", "env": {"K": "${TOKEN}"}}}})
    token = "tok-\t-value\n"
    resolved = spec.resolve({"TOKEN": token})
    quoted = f"Illegal header value {('Bearer ' + token).encode()!r} / {token!r}"
    assert resolved.redact(quoted) == "Illegal header value b'Bearer ***' / '***'"


@pytest.mark.parametrize("value", ["tok\n", "tok\r\nX-Injected: 1", "t\x00k", "tök"])
def test_an_expanded_header_value_http_cannot_carry_is_refused_without_the_value(value: str) -> None:
    (spec,) = read_config({"mcpServers": {"s": {"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${T}"}}}})
    with pytest.raises(ToolkitError) as info:
        spec.resolve({"T": value})
    error = info.value
    assert (error.server, error.stage, error.path) == ("s", "config", "mcpServers.s.headers.Authorization")
    assert value.strip() not in str(error) and repr(value)[1:-1] not in str(error)
