"""`extends:`: a rule file written as its parent's rules plus what differs.

Tested on made-up providers in a temporary rules directory (`base`, a copy of the shipped
OpenAI file under another name, and children of it), so the construct is proved alone.
Plain mappings merge key by key, lists, scalars and template operations replace, and
`{$delete: true}` removes an inherited key; every value keeps the file and line that hold it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import toolnexus
from support.cli import run_cli
from toolnexus import RuleError

REPO = Path(__file__).resolve().parents[1]
REQUEST = {
    "model": "m-1",
    "messages": [{"role": "user", "content": "hi"}],
    "temperature": 1.5,
    "stop": "END",
}


def _base(into: Path) -> Path:
    """The shipped OpenAI rules as a made-up provider `base`."""
    text = (REPO / "rules" / "openai.yaml").read_text(encoding="utf-8")
    assert text.count("provider: openai\n") == 1
    into.mkdir(parents=True, exist_ok=True)
    target = into / "base.yaml"
    target.write_text(text.replace("provider: openai\n", "provider: base\n"), encoding="utf-8")
    return target


def _child(into: Path, text: str, name: str = "child") -> Path:
    target = into / f"{name}.yaml"
    target.write_text(f"provider: {name}\nextends: base\n{text}", encoding="utf-8")
    return target


def _line_of(path: Path, text: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def _load_error(directory: Path) -> RuleError:
    with pytest.raises(RuleError) as info:
        toolnexus.load_rules(directory, reload=True)
    return info.value


def test_mappings_merge_key_by_key_and_lists_scalars_and_operations_replace(tmp_path: Path) -> None:
    _base(tmp_path)
    _child(
        tmp_path,
        "endpoint:\n  base_url: https://example.invalid/v2\n"
        "request:\n"
        "  body:\n"
        "    stop: {$list: stop}\n"  # an operation replaces the inherited one whole
        "    extra: {$get: user}\n"  # a new key goes after the inherited ones
        "    temperature: {$delete: true}\n"
        "  unsupported:\n    temperature: {action: drop}\n"
        "messages:\n  system:\n    roles: [developer, system]\n",  # a list replaces
    )
    book = toolnexus.load_rules(tmp_path, reload=True)
    child, base = book.get("child"), book.get("base")

    assert child.endpoint.base_url == "https://example.invalid/v2"
    assert child.endpoint.path == base.endpoint.path  # inherited beside the replaced key
    body = toolnexus.translate_request("child", {**REQUEST, "user": "u"}, rules=book)
    assert "temperature" not in body and body["stop"] == ["END"] and list(body)[-1] == "extra"
    assert [n.kind for n in body.notes if n.path == "temperature"] == ["dropped"]
    system = child.source.data["messages"]["system"]
    assert system == {**base.source.data["messages"]["system"], "roles": ["developer", "system"]}
    assert toolnexus.translate_request("base", REQUEST, rules=book)["temperature"] == 1.5  # the parent is unchanged


def test_every_value_keeps_the_file_and_line_that_hold_it(tmp_path: Path) -> None:
    parent = _base(tmp_path)
    child = _child(tmp_path, "endpoint:\n  base_url: https://example.invalid/v2\n")
    source = toolnexus.load_rules(tmp_path, reload=True).get("child").source

    assert source.locate(("endpoint", "base_url"))[:2] == (str(child), 4)
    assert source.locate(("endpoint", "path"))[:2] == (str(parent), _line_of(parent, "  path: /chat/completions"))


def test_a_translation_error_names_the_range_where_its_file_holds_it(tmp_path: Path) -> None:
    parent = _base(tmp_path)
    _child(tmp_path, "doc: a child\n")
    with pytest.raises(toolnexus.TranslationError) as info:
        toolnexus.translate_request(
            "child", {**REQUEST, "temperature": 9}, rules=toolnexus.load_rules(tmp_path, reload=True)
        )
    assert f"{parent}:{_line_of(parent, '    temperature: {minimum: 0')}" in str(info.value)


def test_a_bad_value_in_the_child_points_into_the_child(tmp_path: Path) -> None:
    _base(tmp_path)
    child = _child(tmp_path, "request:\n  body:\n    model: {$gett: model}\n")
    err = _load_error(tmp_path)
    assert (err.file, err.line, err.rule) == (str(child), 5, "request.body.model.$gett")


def test_a_bad_inherited_value_points_into_the_parent(tmp_path: Path) -> None:
    parent = _base(tmp_path)
    text = parent.read_text(encoding="utf-8").replace("    top_p: {$get: top_p}\n", "    top_p: {$gett: top_p}\n")
    parent.write_text(text, encoding="utf-8")
    _child(tmp_path, "doc: a child\n")
    err = _load_error(tmp_path)
    assert (err.file, err.line) == (str(parent), _line_of(parent, "$gett"))


def test_a_merged_value_wrong_only_together_points_at_the_childs_line(tmp_path: Path) -> None:
    _base(tmp_path)
    child = _child(tmp_path, "endpoint:\n  auth_header: 3\n")
    err = _load_error(tmp_path)
    assert (err.file, err.line, err.rule) == (str(child), 4, "endpoint.auth_header")


@pytest.mark.parametrize(
    ("text", "line", "rule"),
    [
        ("request:\n  body:\n    no_such_key: {$delete: true}\n", 5, "request.body.no_such_key"),  # nothing to delete
        ("request:\n  body:\n    model: {$delete: true, also: 1}\n", 5, "request.body.model"),  # not alone
        ("messages:\n  system:\n    roles: [{$delete: true}]\n", 5, "messages.system.roles[0]"),  # inside a list
    ],
    ids=["nothing-inherited", "not-alone", "inside-a-list"],
)
def test_a_delete_that_deletes_nothing_is_a_located_error(tmp_path: Path, text: str, line: int, rule: str) -> None:
    _base(tmp_path)
    child = _child(tmp_path, text)
    err = _load_error(tmp_path)
    assert (err.file, err.line, err.rule) == (str(child), line, rule)


def test_deleting_a_required_key_is_a_located_schema_error(tmp_path: Path) -> None:
    _base(tmp_path)
    child = _child(tmp_path, "endpoint:\n  path: {$delete: true}\n")
    err = _load_error(tmp_path)
    assert err.file == str(child) and err.rule == "endpoint" and "path" in err.message


def test_extending_an_unknown_provider_is_located_with_a_suggestion(tmp_path: Path) -> None:
    _base(tmp_path)
    child = tmp_path / "child.yaml"
    child.write_text("provider: child\nextends: bsae\n", encoding="utf-8")
    err = _load_error(tmp_path)
    assert (err.file, err.line, err.rule) == (str(child), 2, "extends")
    assert "'base'" in err.message


def test_a_cycle_is_located(tmp_path: Path) -> None:
    (tmp_path / "one.yaml").write_text("provider: one\nextends: two\n", encoding="utf-8")
    (tmp_path / "two.yaml").write_text("provider: two\ndoc: x\nextends: one\n", encoding="utf-8")
    err = _load_error(tmp_path)
    assert err.rule == "extends" and err.line in (2, 3) and "cycle" in err.message


def test_a_child_names_its_own_provider(tmp_path: Path) -> None:
    _base(tmp_path)
    child = tmp_path / "child.yaml"
    child.write_text("extends: base\n", encoding="utf-8")
    err = _load_error(tmp_path)
    assert (err.file, err.line) == (str(child), 1)


def test_a_user_file_extends_a_built_in_provider(tmp_path: Path) -> None:
    _child(
        tmp_path,
        "request:\n  body:\n    seed: {$delete: true}\n  unsupported:\n    seed: {action: drop}\n",
        name="mine",
    )
    (tmp_path / "mine.yaml").write_text(
        (tmp_path / "mine.yaml").read_text(encoding="utf-8").replace("extends: base", "extends: openai"),
        encoding="utf-8",
    )
    book = toolnexus.load_rules(tmp_path, reload=True)
    body = toolnexus.translate_request("mine", {**REQUEST, "temperature": 1, "seed": 3}, rules=book)
    assert "seed" not in body and body["temperature"] == 1
    assert book.get("mine").source.locate(("endpoint", "path"))[0] == "rules/openai.yaml"


def test_a_user_file_may_extend_the_built_in_of_its_own_name(tmp_path: Path) -> None:
    (tmp_path / "openai.yaml").write_text(
        "provider: openai\nextends: openai\nendpoint:\n  base_url: https://example.invalid/v1\n", encoding="utf-8"
    )
    book = toolnexus.load_rules(tmp_path, reload=True)
    assert book.get("openai").endpoint.base_url == "https://example.invalid/v1"
    assert book.get("openai").endpoint.path == "/chat/completions"


def test_explain_says_which_values_are_inherited_and_from_where(tmp_path: Path) -> None:
    parent = _base(tmp_path)
    child = _child(tmp_path, "endpoint:\n  base_url: https://example.invalid/v2\n")
    text = toolnexus.load_rules(tmp_path, reload=True).get("child").explain()
    own = next(line for line in text.splitlines() if "endpoint.base_url" in line)
    inherited = next(line for line in text.splitlines() if "endpoint.path" in line)
    assert own.strip().startswith(f"{child}:4") and "inherited" not in own
    assert inherited.strip().startswith(f"{parent}:") and "inherited" in inherited


# ---------------------------------------------------------------- case tables: a variant runs its parent's column


def _check(rules: Path) -> dict[str, list[str]]:
    from toolnexus.devtools.conformance import run_check

    return {o.name: o.problems for o in run_check(rules)}


def test_a_variant_without_a_column_runs_its_parents_and_passes_when_it_translates_alike(tmp_path: Path) -> None:
    (tmp_path / "alike.yaml").write_text(
        "provider: alike\nextends: openai\nendpoint:\n  base_url: https://example.invalid/v1\n", encoding="utf-8"
    )
    outcomes = _check(tmp_path)
    inherited = {name: problems for name, problems in outcomes.items() if name.startswith("alike/")}
    assert inherited and all("(openai's column)" in name for name in inherited)
    assert not any(inherited.values())


def test_a_real_difference_fails_until_the_variant_has_its_own_column(tmp_path: Path) -> None:
    (tmp_path / "nostop.yaml").write_text(
        "provider: nostop\nextends: openai\nrequest:\n  body:\n    stop: {$delete: true}\n"
        "  unsupported:\n    stop: {action: drop}\n",
        encoding="utf-8",
    )
    failing = {name for name, problems in _check(tmp_path).items() if problems}
    assert "nostop/stop-list (openai's column)" in failing

    cases = tmp_path / "fixtures" / "cases"
    cases.mkdir(parents=True)
    shipped = (REPO / "fixtures" / "cases" / "stop-list.yaml").read_text(encoding="utf-8")
    column = (
        "  nostop:\n    with: {model: gpt-4o}\n    expect_request:\n      model: gpt-4o\n      messages:\n"
        '        - {role: user, content: "Write a dialogue."}\n'
        "    expect_notes: [{kind: dropped, path: stop}]\n"
    )
    (cases / "stop-list.yaml").write_text(shipped + column, encoding="utf-8")
    outcomes = _check(tmp_path)
    assert outcomes["nostop/stop-list"] == []


def test_a_built_in_variant_follows_a_parent_the_user_directory_overrides(tmp_path: Path) -> None:
    (tmp_path / "openai.yaml").write_text(
        "provider: openai\nextends: openai\nendpoint:\n  request_id_header: x-mine\n", encoding="utf-8"
    )
    book = toolnexus.load_rules(tmp_path, reload=True)
    assert book.get("groq").endpoint.request_id_header == "x-mine"  # groq extends openai: the user's now
    assert book.get("groq").endpoint.base_url == "https://api.groq.com/openai/v1"  # and keeps its own values
    assert toolnexus.load_rules().get("groq").endpoint.request_id_header == "x-request-id"  # built-ins unchanged


def test_the_readme_variant_example_loads_and_refuses_what_it_says(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = "# mydir/acme.yaml" + readme.split("```yaml\n# mydir/acme.yaml", 1)[1].split("```", 1)[0]
    (tmp_path / "acme.yaml").write_text(block, encoding="utf-8")
    book = toolnexus.load_rules(tmp_path, reload=True)
    assert book.get("acme").source.data["extends"] == "openai"
    body = toolnexus.translate_request("acme", REQUEST, rules=tmp_path)
    assert body["stop"] == "END" and body["temperature"] == 1.5  # the parent's rules, as inherited
    with pytest.raises(toolnexus.TranslationError) as refused:
        toolnexus.translate_request("acme", {**REQUEST, "web_search_options": {}}, rules=tmp_path)
    assert refused.value.path == "web_search_options"
    checked = run_cli("check", "--rules", str(tmp_path))
    assert checked.returncode == 0, checked.stdout[-2000:]  # every parent column it runs passes as written
