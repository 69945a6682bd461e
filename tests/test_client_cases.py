"""The case tables drive the HTTP client too: the body on the wire and the result match the pure translation.

Every case whose request only uses what `client.translate` takes (model, messages, tools,
tool_choice, max_tokens) goes through a real local stub. The stub answers with the case's
response when it has one (and the result is checked), else with the provider's demo reply.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from deepdiff import DeepDiff

from support.cases import CASES as ALL_CASES
from support.cases import case_ids
from toolnexus import create_client
from toolnexus.devtools.conformance import Case, demo_file
from toolnexus.devtools.stub import ProviderStub

CLIENT_FIELDS = {"model", "messages", "tools", "tool_choice", "max_tokens"}


def client_cases() -> list[Case]:
    return [
        column
        for column in ALL_CASES
        if "expect_request" in column.data
        and set(column.data["request"]) <= CLIENT_FIELDS
        and not column.data.get("options")
    ]


CASES = client_cases()


def test_some_cases_reach_the_client_for_every_provider() -> None:
    assert {case.provider for case in CASES} >= {"anthropic", "openai"}


@pytest.mark.parametrize("column", CASES, ids=case_ids(CASES))
def test_case_through_the_client(column: Case) -> None:
    provider, case = column.provider, column.data
    request: dict[str, Any] = case["request"]
    demo = json.loads(demo_file(provider).read_text())
    response = case.get("response", demo["replies"][-1])

    async def run() -> tuple[Any, Any]:
        with ProviderStub(lambda _: response) as stub:
            async with create_client(stub.base_url, provider, request["model"], api_key="case-key") as client:
                result = await client.translate(
                    request["messages"],
                    tools=request.get("tools"),
                    tool_choice=request.get("tool_choice"),
                    max_tokens=request.get("max_tokens") or 0,
                )
            return stub.requests[0].body, result

    wire, result = asyncio.run(run())
    assert not DeepDiff(case["expect_request"], wire), DeepDiff(case["expect_request"], wire).pretty()
    assert result.raw == response
    if "expect_result" not in case:
        return
    actual = result.to_dict()
    actual.pop("notes")
    expected = dict(case["expect_result"])
    assert not DeepDiff(expected, actual), DeepDiff(expected, actual).pretty()
