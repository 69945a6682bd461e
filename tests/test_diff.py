"""`toolnexus diff`: the provider-differences report, read from the rule files alone."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from itertools import takewhile
from pathlib import Path
from typing import Any

import pytest

from support.cli import run_cli
from support.made_up import ACME_FORMAT
from toolnexus import load_rules
from toolnexus.devtools.diff import (
    FORMATS,
    NOTHING,
    Report,
    build_report,
    render,
    render_html,
    render_markdown,
    render_table,
)
from toolnexus.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- toolnexus diff: begin -->", "<!-- toolnexus diff: end -->"


def cell(report: Report, concept: str, provider: str) -> tuple[str, ...]:
    column = report.providers.index(provider)
    for section in report.sections:
        for row in section.rows:
            if row.concept == concept:
                return row.cells[column].lines
    raise AssertionError(f"no row {concept!r}")


def user_rules(tmp_path: Path, provider: str, edit: tuple[str, str] | None = None, name: str | None = None) -> Path:
    text = (REPO / "rules" / f"{provider}.yaml").read_text()
    if edit:
        assert edit[0] in text
        text = text.replace(*edit)
    if name:
        text = text.replace(f"provider: {provider}", f"provider: {name}")
    (tmp_path / f"{name or provider}.yaml").write_text(text)
    return tmp_path


# The README shows the generated markdown.


def test_readme_table_is_the_generated_one() -> None:
    readme = (REPO / "README.md").read_text()
    assert readme.count(BEGIN) == 1 and readme.count(END) == 1, f"README.md needs one {BEGIN} ... {END} block"
    shown = readme.split(BEGIN)[1].split(END)[0].strip("\n")
    fresh = render_markdown(build_report(load_rules())).strip("\n")
    assert shown == fresh, (
        "README.md's provider-differences table is stale: run `toolnexus diff --format markdown` and paste "
        f"its output between {BEGIN} and {END}"
    )


def test_the_cli_prints_what_the_readme_is_compared_with() -> None:
    run = run_cli("diff", "--format", "markdown")
    assert run.returncode == 0, run.stderr
    assert run.stdout == render_markdown(build_report(load_rules()))


# Concepts, read from the rule files.


def test_render_names_its_formats_and_refuses_any_other_with_a_config_error() -> None:
    report = build_report(load_rules(), ["anthropic", "openai"])
    assert render(report, "markdown") == render_markdown(report)
    with pytest.raises(ConfigError, match="unknown format 'pdf'; one of " + ", ".join(FORMATS)):
        render(report, "pdf")


def test_concepts_come_from_the_rule_files() -> None:
    report = build_report(load_rules(), ["anthropic", "openai"])
    assert cell(report, "tool_call part", "anthropic") == ('{type: "tool_use", id, name, input: arguments}',)
    assert cell(report, "tool role becomes", "anthropic") == ("user",)
    assert cell(report, "tool role becomes", "openai") == ("as given",)
    assert cell(report, "system prompt goes to", "anthropic") == ("body field system",)
    assert cell(report, "system prompt goes to", "openai") == ('a leading message {role: "system", content: text}',)
    assert cell(report, "merged when consecutive", "anthropic") == ("tool",)
    assert cell(report, "finish_reason length from", "anthropic") == ("max_tokens, model_context_window_exceeded",)
    assert cell(report, "tool_choice required", "anthropic") == (
        '{type: "any", disable_parallel_tool_use: true if parallel_tool_calls == false}',
    )
    assert cell(report, "defaults", "anthropic")[0].startswith(
        "max_tokens: lookup(reasoning_effort, table: {none: 4096"
    )
    assert re.search("default: 4096\\)\x1f\\d+\x1f$", cell(report, "defaults", "anthropic")[0])  # with its doc's note
    assert "n unless 1" in cell(report, "fields refused", "anthropic")[0]
    assert cell(report, "tool_choice allowed_tools", "anthropic") == ()  # the file says nothing: shown as —


def test_the_streaming_rows_come_from_the_streaming_section(tmp_path: Path) -> None:
    report = build_report(load_rules(), ["anthropic", "gemini", "openai"])
    assert cell(report, "asks for a stream with", "anthropic") == ("{stream: true}",)
    assert cell(report, "asks for a stream with", "gemini") == ()
    assert cell(report, "the stream is complete at", "openai") == ("data [DONE]",)
    assert "message_stop: end" in cell(report, "events rebuild the response", "anthropic")
    assert cell(report, "reasoning deltas from", "gemini") == ("thought.text",)
    rules = user_rules(tmp_path, "anthropic", ("message_stop: [end]", "message_stop: []"))
    edited = build_report(load_rules(rules), ["anthropic"])
    assert cell(edited, "the stream is complete at", "anthropic") == ()
    assert "message_stop: nothing" in cell(edited, "events rebuild the response", "anthropic")


def test_the_annotation_and_refusal_rows_read_the_response_section() -> None:
    report = build_report(load_rules(), ["anthropic", "gemini", "cohere", "openai", "mistral"])
    [grounding] = cell(report, "annotations from", "gemini")
    assert grounding.startswith("one candidates[0].groundingMetadata: each groundingSupports, citing")
    assert "groundingChunkIndices of groundingChunks" in grounding and "in UTF-8 bytes" in grounding
    assert "citing sources, indexes into the answer" in cell(report, "annotations from", "cohere")[0]
    [openai] = cell(report, "annotations from", "openai")
    assert openai.startswith("one choices[0].message: each annotations → {...@, url_citation: ")
    assert "url: url_citation.url (string) (required)" in openai  # a typed read shows its type
    assert cell(report, "annotations from", "mistral") == ()
    assert cell(report, "refusal text from", "openai") == ("choices[0].message.refusal",)
    assert cell(report, "refusal text from", "anthropic")[0].startswith("stop_details.explanation ?? ")
    assert cell(report, "refusal text from", "cohere") == ()
    vertex = build_report(load_rules(), ["vertex-gemini"])
    assert cell(vertex, "asks for a stream with", "vertex-gemini")[0].startswith("merged in: {toolConfig: ")


def test_a_user_rules_dir_with_an_edited_finish_reason_table_shows_the_edit(tmp_path: Path) -> None:
    rules = user_rules(tmp_path, "anthropic", ("refusal: content_filter", "refusal: stop"))
    report = build_report(load_rules(rules), ["anthropic"])
    assert cell(report, "finish_reason stop from", "anthropic") == ("end_turn, stop_sequence, pause_turn, refusal",)
    assert cell(report, "finish_reason content_filter from", "anthropic") == ()
    run = run_cli("diff", "anthropic", "--rules", str(rules), "--format", "markdown")
    assert run.returncode == 0, run.stderr
    assert "| finish_reason stop from | end_turn, stop_sequence, pause_turn, refusal |" in run.stdout
    assert f"| finish_reason content_filter from | {NOTHING} |" in run.stdout


def test_a_new_provider_gets_its_column_by_its_rule_file_alone(tmp_path: Path) -> None:
    rules = user_rules(tmp_path, "anthropic", name="acme")
    report = build_report(load_rules(rules), ["anthropic", "acme"])
    for section in report.sections:
        for row in section.rows:
            if row.concept != "rule file":  # the same text, up to footnote numbers
                anthropic, acme = ([re.sub("\x1f\\d+\x1f", "", line) for line in c.lines] for c in row.cells)
                assert anthropic == acme, row.concept


# Selecting providers.


def test_providers_are_selected_in_the_order_given() -> None:
    book = load_rules()
    assert sorted(build_report(book).providers) == book.names()  # all of them, each family together
    assert build_report(book, ["openai"]).providers == ("openai",)
    assert build_report(book, ["openai", "anthropic", "openai"]).providers == ("openai", "anthropic")
    run = run_cli("diff", "openai", "--format", "markdown")
    assert run.stdout.splitlines()[0] == "| concept | openai |"


def test_an_unknown_provider_is_a_one_line_error() -> None:
    run = run_cli("diff", "anthropc")
    assert run.returncode == 2
    assert "did you mean 'anthropic'" in run.stderr and run.stdout == ""


# Renderers.


def unescaped_pipes(line: str) -> int:
    count, i = 0, 0
    while i < len(line):
        if line[i] == "\\":
            i += 2
            continue
        count += line[i] == "|"
        i += 1
    return count


def table_lines(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("|")]


def test_markdown_rows_have_one_cell_per_provider_plus_the_concept() -> None:
    for names in (["anthropic", "openai"], ["openai"]):
        lines = table_lines(render_markdown(build_report(load_rules(), names)))
        assert len(lines) > 40
        assert {unescaped_pipes(line) for line in lines} == {len(names) + 2}
        assert lines[1] == "| " + " | ".join(["---"] * (len(names) + 1)) + " |"


def odd_rules(tmp_path: Path) -> Path:
    """A rule file whose data carries `|`, `<`, `&` and `$`: every renderer must keep them as text."""
    edit = ("auth: bearer ", 'auth: {scheme: header, header: Authorization, prefix: "Be|ar<er>&$x"} ')
    return user_rules(tmp_path, "openai", edit)


def test_markdown_escapes_pipes_and_markup(tmp_path: Path) -> None:
    markdown = render_markdown(build_report(load_rules(odd_rules(tmp_path)), ["openai"]))
    row = next(line for line in table_lines(markdown) if line.startswith("| auth header |"))
    assert row == "| auth header | Authorization: Be\\|ar&lt;er&gt;&amp;\\$x &lt;key&gt; |"
    assert unescaped_pipes(row) == 3
    assert "<er>" not in markdown and "<key>" not in markdown


def test_markdown_footnotes_are_defined_once_and_used() -> None:
    markdown = render_markdown(build_report(load_rules()))
    used = set(re.findall(r"\[\^(diff-\d+)\](?!:)", markdown))
    defined = re.findall(r"^\[\^(diff-\d+)\]:", markdown, flags=re.M)
    assert used and used == set(defined) and len(defined) == len(set(defined))
    assert "\x1f" not in markdown


class _Page(HTMLParser):
    """Checks nesting as it goes and keeps the table's header and rows."""

    VOID = frozenset({"meta", "br", "link", "col", "input", "wbr"})

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.head: list[str] = []
        self.rows: list[list[tuple[str, int]]] = []  # (tag, colspan) per row of tbody
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.VOID:
            self.stack.append(tag)
        if tag == "tr" and "tbody" in self.stack:
            self.rows.append([])
        if tag in ("th", "td") and "tbody" in self.stack:
            self.rows[-1].append((tag, int(dict(attrs).get("colspan") or 1)))

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes <{self.stack[-1] if self.stack else None}>"
        self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self.stack[-2:] == ["tr", "th"] and "thead" in self.stack:
            self.head.append(data)
        self.text.append(data)


def test_html_is_a_standalone_well_formed_page_with_one_column_per_provider(tmp_path: Path) -> None:
    book = load_rules(odd_rules(tmp_path))
    for names in (["anthropic", "openai"], ["openai"]):
        page = render_html(build_report(book, names))
        assert page.startswith("<!DOCTYPE html>") and "<style>" in page and page.count("<table") == 1
        parser = _Page()
        parser.feed(page)
        parser.close()
        assert parser.stack == []
        assert parser.head == ["concept", *names]
        assert len(parser.rows) > 40
        assert {sum(span for _, span in row) for row in parser.rows} == {len(names) + 1}
    text = "".join(parser.text)
    assert "Authorization: Be|ar<er>&$x <key>" in text  # escaped in the page, the same text once parsed
    assert "<er>" not in page


def test_the_terminal_table_aligns_and_wraps_to_the_width() -> None:
    # Three providers fit 120 columns; with more, the table grows past the width by design (a word is never split).
    report = build_report(load_rules(), ["anthropic", "gemini", "openai"])
    for width in (120, 200):
        text = render_table(report, width)
        lines = text.splitlines()
        assert max(map(len, lines)) <= width
        header = lines[0]
        bars = [m.start() for m in re.finditer(r" \|( |$)", header)]
        assert len(bars) == len(report.providers)
        for line in lines:  # every table line puts its column bars in the same places
            if " | " in line:
                assert [m.start() for m in re.finditer(r" \|( |$)", line)] == bars, line
    assert f"| {NOTHING}" in render_table(report, 120)
    assert "Notes:" in text and "[1] anthropic, source: https://" in text


def test_the_terminal_table_never_splits_a_word_or_a_note_marker() -> None:
    report = build_report(load_rules())
    cells = [line for s in report.sections for row in s.rows for c in row.cells for line in c.shown]
    concepts = [row.concept for s in report.sections for row in s.rows]
    titles = [s.title.upper() for s in report.sections]
    words = {w for line in [*cells, *concepts, *report.providers, *titles] for w in re.findall("[A-Za-z0-9]+", line)}
    marks = sum(len(re.findall("\x1f\\d+\x1f", line)) for line in cells)
    for width in (40, 80, 100, 120):
        text = render_table(report, width)
        table = text.split("\n\n")[0]  # the legend and the notes follow a blank line
        assert set(re.findall("[A-Za-z0-9]+", table)) <= words | {"concept"}, width
        assert len(re.findall(r"\u00a0\[\d+\]", table)) == marks  # every marker whole, after its word


def test_output_writes_the_file_instead_of_printing(tmp_path: Path) -> None:
    target = tmp_path / "diff.html"
    run = run_cli("diff", "--format", "html", "--output", str(target))
    assert run.returncode == 0, run.stderr
    assert run.stdout == ""
    assert target.read_text() == render_html(build_report(load_rules()))
    plain = run_cli("diff", "anthropic")
    assert plain.returncode == 0 and plain.stdout.startswith("concept")


def test_diff_reads_no_provider_names() -> None:
    source = (REPO / "engine" / "toolnexus" / "devtools" / "diff.py").read_text()
    for name in load_rules().names():
        assert f'"{name}"' not in source and f"'{name}'" not in source


# The HTML page.


def page_parts(page: str) -> dict[str, int]:
    """Where the legend, the contents, the table and the notes start."""
    markers = {"contents": 'id="contents"', "legend": 'id="legend"', "table": "<table", "notes": 'id="notes"'}
    return {name: page.index(marker) for name, marker in markers.items()}


def test_html_opens_with_contents_and_legend_and_every_link_resolves() -> None:
    page = render_html(build_report(load_rules()))
    parts = page_parts(page)
    assert parts["contents"] < parts["table"] and parts["legend"] < parts["table"] < parts["notes"]
    ids = set(re.findall(r' id="([^"]+)"', page))
    links = re.findall(r'href="#([^"]+)"', page)
    assert len(ids) == len(re.findall(r' id="', page))  # ids are unique
    assert links and set(links) <= ids
    contents = page[parts["contents"] : parts["legend"]]
    for section in build_report(load_rules()).sections:
        assert f">{section.title}</a>" in contents


def test_html_notes_link_back_to_every_reference_and_adjacent_markers_are_separated() -> None:
    page = render_html(build_report(load_rules()))
    refs = re.findall(r'<a id="(ref-(\d+)-\d+)" href="#note-(\d+)">(\d+)</a>', page)
    assert refs and all(number == note == shown for _, number, note, shown in refs)
    for anchor, number, _, _ in refs:  # each reference has a back-link in its note
        note = re.search(f'<li id="note-{number}">.*?</li>', page)
        assert note and f'href="#{anchor}"' in note.group(0)
    grouped = re.findall(r'<sup class="refs">(.*?)</sup>', page)
    pairs = [g for g in grouped if g.count("<a ") == 2]
    assert pairs, "some cell has two adjacent notes"
    assert all('</a><span class="sep">, </span><a ' in g for g in pairs)  # 8, 9 rather than 89
    assert "</sup><sup" not in page


def test_html_marks_the_rows_where_providers_differ() -> None:
    book = load_rules()
    report = build_report(book, ["anthropic", "gemini"])
    assert any(row.differs for s in report.sections for row in s.rows)
    assert not all(row.differs for s in report.sections for row in s.rows)
    page = render_html(report)
    for section in report.sections:
        for row in section.rows:
            kind = "differs" if row.differs else "same"
            assert re.search(f'<tr class="{kind}"><th scope="row" id="[^"]+">{re.escape(row.concept)}', page)
    alone = build_report(book, ["gemini"])
    assert not any(row.differs for s in alone.sections for row in s.rows)  # one provider differs from no one


def test_the_providers_option_chooses_and_orders_the_columns(tmp_path: Path) -> None:
    run = run_cli("diff", "--providers", "openai,anthropic", "--format", "markdown")
    assert run.returncode == 0, run.stderr
    assert run.stdout == render_markdown(build_report(load_rules(), ["openai", "anthropic"]))
    bad = run_cli("diff", "--providers", "openai,antropic")
    assert bad.returncode == 2 and "did you mean 'anthropic'" in bad.stderr


# The HTML page in a real browser: headless Chromium lays it out, a script writes what it measured into the DOM.

BROWSER = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
needs_chromium = pytest.mark.skipif(
    BROWSER is None, reason="no Chromium (Debian: apt-get install chromium): the page's layout is not checked"
)

MEASURE = """
(() => {
  const width = document.documentElement.clientWidth, out = {viewport: window.innerWidth, width};
  const box = (e) => e.getBoundingClientRect();
  const name = (e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") + (e.className ? "." + e.className : "");
  out.scrollWidth = document.documentElement.scrollWidth;
  out.tooWide = [...document.body.querySelectorAll("*")]
    .filter((e) => box(e).width > 0 && (box(e).right > width + 0.5 || box(e).left < -0.5)).map(name);
  out.columns = [...document.querySelectorAll("thead th")].map((th) => [th.textContent, box(th).left, box(th).right]);
  out.unresolved = [...document.querySelectorAll('a[href^="#"]')]
    .map((a) => a.getAttribute("href").slice(1)).filter((id) => !document.getElementById(id));
  out.links = document.querySelectorAll('a[href^="#"]').length;
  out.contentsTop = box(document.getElementById("contents")).top;
  out.legendTop = box(document.getElementById("legend")).top;
  out.tableTop = box(document.querySelector("table")).top;
  out.markerGaps = [...document.querySelectorAll("sup.refs")].filter((s) => s.querySelectorAll("a").length > 1)
    .map((s) => { const [a, b] = s.querySelectorAll("a"); return box(b).left - box(a).right; });
  const table = document.querySelector("table");
  window.scrollTo(document.documentElement.scrollWidth, box(table).top + window.scrollY + box(table).height / 2);
  out.scrolled = [window.scrollX, window.scrollY];
  out.headTop = box(document.querySelector("thead th:last-child")).top;
  const rows = [...document.querySelectorAll('tbody th[scope="row"]')].filter((th) => box(th).top > 40);
  out.conceptLeft = box(rows[0]).left;
  const pre = document.createElement("pre");
  pre.id = "measurements";
  pre.textContent = JSON.stringify(out);
  document.body.append(pre);
})();
"""


def measure_in_chromium(page: str, tmp_path: Path, width: int = 1280) -> dict[str, Any]:
    """Load the page at `width` x 900 in headless Chromium and return what MEASURE found."""
    assert BROWSER is not None
    target = tmp_path / "report.html"
    target.write_text(page.replace("</body>", f"<script>{MEASURE}</script></body>"), encoding="utf-8")
    run = subprocess.run(
        [BROWSER, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--hide-scrollbars=false",
         f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={width},900", "--dump-dom", target.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    found = re.search(r'<pre id="measurements">(.*?)</pre>', run.stdout, flags=re.S)
    assert found, f"Chromium printed no measurements (exit {run.returncode}): {run.stderr[-2000:]}"
    measured: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    assert measured["viewport"] == width
    return measured


@needs_chromium
def test_three_providers_fit_1280_pixels_in_chromium(tmp_path: Path) -> None:
    report = build_report(load_rules(), ["anthropic", "gemini", "openai"])
    m = measure_in_chromium(render_html(report), tmp_path)
    assert m["tooWide"] == [] and m["scrollWidth"] <= m["width"]  # nothing cut off, no sideways scrolling
    assert [name for name, _, _ in m["columns"]] == ["concept", *report.providers]
    assert all(right <= m["width"] and right - left > 200 for _, left, right in m["columns"][1:])
    assert m["links"] > 50 and m["unresolved"] == []  # contents, section, note and back links all land
    assert m["contentsTop"] < m["tableTop"] and m["legendTop"] < m["tableTop"]
    assert m["markerGaps"] and min(m["markerGaps"]) > 3  # "8, 9", never "89"
    assert m["scrolled"][1] > 0 and abs(m["headTop"]) < 1  # the header row stays at the top


@needs_chromium
def test_a_dozen_providers_keep_every_column_and_the_concept_column_in_view(tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    rules.mkdir()
    names = ["anthropic", "gemini", "openai"]
    for i in range(9):
        name = f"acme{i}"
        user_rules(rules, names[i % 3], name=name)
        names.append(name)
    report = build_report(load_rules(rules), names)
    m = measure_in_chromium(render_html(report), tmp_path)
    assert [name for name, _, _ in m["columns"]] == ["concept", *names]
    assert m["scrolled"][0] > 0  # a dozen columns scroll sideways ...
    assert abs(m["conceptLeft"]) < 1 and abs(m["headTop"]) < 1  # ... with the concept column and header in view


# Variants (`extends:`): grouped under their parent, their parent's answers shown as such.


def test_variants_follow_their_parent_and_say_where_they_agree(tmp_path: Path) -> None:
    (tmp_path / "zeta.yaml").write_text(
        "provider: zeta\nextends: openai\nendpoint:\n  base_url: https://zeta.example.invalid/v1\n", encoding="utf-8"
    )
    book = load_rules(tmp_path, reload=True)
    report = build_report(book)
    following = report.providers[report.providers.index("openai") + 1 :]  # its variants follow it, then the next family
    after = list(takewhile(lambda name: book.get(name).source.data.get("extends") == "openai", following))
    assert "zeta" in after
    assert cell(report, "extends", "zeta")[0].startswith("openai")
    assert cell(report, "default base URL", "zeta") == ("https://zeta.example.invalid/v1",)
    row = next(r for s in report.sections for r in s.rows if r.concept == "tool_choice auto")
    ours = row.cells[report.providers.index("zeta")]
    assert ours.shown == ("as openai",) and ours.lines == row.cells[report.providers.index("openai")].lines
    assert "| as openai " in render_table(report, 400) and "as openai" in render_markdown(report)
    assert 'class="inherited"' in render_html(report)
    alone = build_report(book, ["zeta"])  # without its parent in the report, a variant shows its own values
    assert cell(alone, "tool_choice auto", "zeta") == ("as given",)


def test_a_family_is_picked_with_plus_variants(tmp_path: Path) -> None:
    (tmp_path / "zeta.yaml").write_text("provider: zeta\nextends: openai\n", encoding="utf-8")
    (tmp_path / "eta.yaml").write_text("provider: eta\nextends: zeta\n", encoding="utf-8")  # a variant of a variant
    book = load_rules(tmp_path, reload=True)
    family = [n for n in build_report(book).providers if n == "openai" or book.get(n).source.data.get("extends")
              in ("openai", "zeta")]  # fmt: skip
    assert "eta" in family and "zeta" in family
    assert build_report(book, ["openai+variants"]).providers == tuple(family)
    assert build_report(book, ["zeta+variants"]).providers == ("zeta", "eta")
    assert build_report(book, ["anthropic", "openai+variants", "zeta"]).providers == ("anthropic", *family)
    run = run_cli("diff", "--rules", str(tmp_path), "--providers", "zeta+variants", "--format", "markdown")
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0] == "| concept | zeta | eta |"
    bad = run_cli("diff", "--providers", "opnai+variants")
    assert bad.returncode == 2 and "did you mean 'openai'" in bad.stderr


@needs_chromium
def test_every_shipped_provider_keeps_a_readable_column_in_chromium(tmp_path: Path) -> None:
    report = build_report(load_rules())
    m = measure_in_chromium(render_html(report), tmp_path)
    assert [name for name, _, _ in m["columns"]] == ["concept", *report.providers]
    assert min(right - left for _, left, right in m["columns"][1:]) > 200  # a column stays readable: it scrolls
    assert m["scrolled"][0] > 0 and abs(m["conceptLeft"]) < 1 and abs(m["headTop"]) < 1
    assert m["unresolved"] == []


# Source formats (`--sources`): asked of the compiled formats, a column per format file.


def format_report(book: Any, names: list[str] | None = None) -> Report:
    from toolnexus.devtools.format_diff import build_format_report

    return build_format_report(book, names or [])


# the shared made-up format, with a declared field beside the derived ones and a refused field
MADE_UP_FORMAT = ACME_FORMAT.replace("  fields:\n", "  fields:\n    model: {$get: engine}\n", 1).replace(
    "    mood: {action: drop, doc: no counterpart}\n",
    "    mood: {action: drop, doc: no counterpart}\n    vault: {action: error}\n",
    1,
)


def made_up_formats(tmp_path: Path) -> Path:
    """A user rules directory holding only a made-up format file."""
    (tmp_path / "formats").mkdir()
    (tmp_path / "formats" / "acme.yaml").write_text(MADE_UP_FORMAT)
    return tmp_path


def test_a_made_up_format_in_a_user_rules_dir_gets_its_column(tmp_path: Path) -> None:
    book = load_rules(made_up_formats(tmp_path))
    report = format_report(book)
    assert "acme" in report.providers and report.noun == "formats"
    # declared beside derived: the file's own model read wins over the provider's body read backwards
    assert cell(report, "model ←", "acme") == ("engine (declared)",)
    assert cell(report, "max_completion_tokens ←", "acme") == (
        "max_tokens (derived: anthropic request.body.max_tokens)",
    )
    assert cell(report, "tool_choice ←", "acme") == (
        "lookup(pick) (declared):",
        '· free → "auto"',
        '· must → "required"',
    )
    assert cell(report, "fields dropped", "acme") == ("mood\x1f1\x1f",)
    assert cell(report, "fields refused", "acme") == ("vault",)
    assert cell(report, "messages from", "acme") == ("turns",)
    assert cell(report, "block kind named by", "acme") == ("is",)
    assert cell(report, "one plain text block is a string", "acme") == ()
    assert cell(report, "one plain text block is a string", "anthropic") == ("assistant, user",)
    assert cell(report, "user words block", "acme") == ('a part: {type: "text", text: say}',)
    assert cell(report, "user answer block", "acme")[0].startswith(
        'a message of its own: {role: "tool", tool_call_id: to'
    )
    assert cell(report, "assistant call block", "acme")[0].startswith("an item of tool_calls: {id: ref,")
    assert cell(report, "answer fields", "acme") == (
        "said: text",
        "why: provider.stop_reason",
        "out: provider.usage.output_tokens",
    )
    assert cell(report, "answer blocks", "acme") == (
        "into calls, in this order:",
        "· each tool_calls: {ref: id, fn: name}",
    )
    assert cell(report, "finish_reason tool_calls →", "acme") == (
        "stop_reason tool_use (derived: anthropic response.finish_reason.table)",
    )
    assert cell(report, "event: start", "acme") == ()  # the file has no stream section; anthropic's has
    assert cell(report, "event: start", "anthropic")[0].startswith('{type: "message_start"')
    assert [n.text for n in report.footnotes if n.provider == "acme"] == ["no counterpart"]


def test_every_format_file_shows_every_field_kind_reason_and_event_it_compiled() -> None:
    """Whatever format files exist: each compiled element has its row, and its cell says something."""
    book = load_rules()
    names = book.formats()
    report = format_report(book)
    assert list(report.providers) == names and names[0] == "openai"  # the normal form first
    for name in names:
        fmt = book.format(name)
        rows = [f"{role} {kind} block" for role, kinds in fmt.roles.items() for kind in kinds]
        rows += [f"{field} ←" for field in fmt.field_origin]
        rows += [f"finish_reason {reason} →" for reason in fmt.stop_table]
        rows += [f"{'.'.join(to)} ←" for to, _, _ in fmt.usage]
        rows += [
            "event: " + " ".join(str(p + 1) if isinstance(p, int) else p for p in key[1:])
            for key in fmt.plan.nodes
            if key[0] == "stream"
        ]
        for row in rows:
            assert cell(report, row, name), (name, row)
        derived = [line for rows_ in report.sections for r in rows_.rows for line in r.cells[names.index(name)].lines]
        # every format's stop reasons read its provider's finish table backwards; the rest as it derives
        assert any("derived: " in line for line in derived) == bool(fmt.plan.derived or fmt.stop_table)


def test_the_shipped_messages_format_shows_derived_and_declared_fields() -> None:
    report = format_report(load_rules(), ["anthropic"])
    assert cell(report, "stop ←", "anthropic") == ("stop_sequences (derived: anthropic request.body.stop_sequences)",)
    assert cell(report, "stream ←", "anthropic") == ("stream (declared)",)
    effort = cell(report, "reasoning_effort ←", "anthropic")
    assert effort[0] == "thinking, the table read backwards (derived: anthropic request.body.thinking):"
    assert '· {type: "enabled", budget_tokens: 2048} → low' in effort
    assert '· any → "required"' in cell(report, "tool_choice ←", "anthropic")
    assert "parameters: input_schema (derived: anthropic tools.declaration.input_schema)" in cell(
        report, "tool function ←", "anthropic"
    )
    assert cell(report, "usage.input_tokens ←", "anthropic")[0].startswith("prompt_tokens - prompt_tokens_details.")


def test_the_sources_option_prints_the_format_report(tmp_path: Path) -> None:
    rules = made_up_formats(tmp_path)
    run = run_cli("diff", "--sources", "acme,anthropic", "--rules", str(rules), "--format", "markdown")
    assert run.returncode == 0, run.stderr
    assert run.stdout == render_markdown(format_report(load_rules(rules), ["acme", "anthropic"]))
    assert table_lines(run.stdout)[0] == "| concept | acme | anthropic |"
    page = run_cli("diff", "--sources", "--rules", str(rules), "--format", "html")
    assert page.returncode == 0 and "<title>toolnexus: format differences</title>" in page.stdout
    for wrong in (
        ["--sources", "acmee"],
        ["anthropic", "--sources"],
        ["--summary", "--sources"],
    ):
        bad = run_cli("diff", *wrong, "--rules", str(rules))
        assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.splitlines()) == 1, (wrong, bad.stderr)


def test_format_diff_reads_no_format_or_provider_names() -> None:
    source = (REPO / "engine" / "toolnexus" / "devtools" / "format_diff.py").read_text()
    book = load_rules()
    for name in {*book.names(), *book.formats()} - {"openai"}:
        assert f'"{name}"' not in source and f"'{name}'" not in source


def test_the_normal_form_is_the_first_format_column_with_its_readers_rows() -> None:
    """Chat Completions is a format file too: its fields declared, each role's message keys, lists and part kinds
    as the request reader takes them from it."""
    report = format_report(load_rules(), ["openai", "anthropic"])
    assert report.providers == ("openai", "anthropic")
    assert cell(report, "model ←", "openai") == ("model (declared)",)
    assert cell(report, "messages from", "openai") == ("messages",)
    assert cell(report, "tool message (reader)", "openai") == (
        "keys: content, is_error, role, tool_call_id",
        "part kinds: image_url, text",
    )
    assert "tool_calls: entries of type function, keys function, id, type" in cell(
        report, "assistant message (reader)", "openai"
    )
    assert cell(report, "user message (reader)", "anthropic") == ()  # another format has no reader rows
    assert cell(report, "finish_reason length →", "openai")[0].startswith("choices[0].finish_reason length (derived")
    run = run_cli("diff", "--sources", "openai", "--format", "markdown")
    assert run.returncode == 0 and table_lines(run.stdout)[0] == "| concept | openai |", run.stderr
