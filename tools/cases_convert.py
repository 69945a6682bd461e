"""One-off migration: fixtures/<provider>/<case>.yaml -> fixtures/cases/<concern>.yaml.

Cases of the same name across providers become one concern: the request keys
they all agree on are the shared OpenAI input, each provider's differing keys
its `with:`. Text is moved block by block, so the hand-written flow style stays.
Gaps are filled afterwards (see the fill step). Checks that every old case
comes back from the new file equal.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import yaml

ORDER = ["openai", "anthropic", "gemini"]
ROOT = Path(__file__).resolve().parents[1]
OLD = ROOT / "fixtures"
NEW = ROOT / "fixtures" / "cases"
# (provider, old name) -> concern: the same concern under another provider's name
RENAME: dict[tuple[str, str], str] = {
    ("openai", "response-finish-length"): "response-finish-max-tokens",
    ("anthropic", "response-finish-refusal"): "response-finish-content-filter",
    ("gemini", "response-finish-safety"): "response-finish-content-filter",
    ("anthropic", "response-text-end-turn"): "response-text-stop",
    ("anthropic", "response-text-blocks-concatenated"): "response-text-parts-concatenated",
    ("anthropic", "response-several-tool-use"): "response-several-tool-calls",
    ("gemini", "response-several-function-calls"): "response-several-tool-calls",
    ("openai", "response-tool-calls"): "response-several-tool-calls",
    ("anthropic", "response-text-and-tool-use"): "response-text-and-tool-call",
    ("gemini", "response-text-and-function-call"): "response-text-and-tool-call",
    ("anthropic", "response-tool-use-wins-over-stop-reason"): "response-tool-call-wins-over-finish",
    ("gemini", "response-function-call-wins-over-finish"): "response-tool-call-wins-over-finish",
    ("anthropic", "response-unknown-block"): "response-unknown-part",
    ("anthropic", "response-thinking-not-text"): "response-thinking-not-text",
    ("gemini", "response-thought-not-text"): "response-thinking-not-text",
    ("anthropic", "error-response-tool-input-list"): "error-response-arguments-list",
    ("gemini", "error-response-args-list"): "error-response-arguments-list",
    ("anthropic", "error-response-tool-input-string"): "error-response-arguments-string",
    ("gemini", "error-response-args-string"): "error-response-arguments-string",
    ("openai", "response-missing-finish-reason"): "response-finish-missing",
    ("anthropic", "response-usage-reasoning-exceeds-noted"): "response-usage-inconsistent-noted",
}


def blocks(text: str, indent: int) -> dict[str, str]:
    """Keys at this indent and their text (the key line and its continuation lines)."""
    out: dict[str, list[str]] = {}
    key = None
    pat = re.compile(" " * indent + r"([A-Za-z_][A-Za-z0-9_]*):")
    for line in text.splitlines():
        m = pat.match(line)
        if m and not line.startswith(" " * (indent + 1)):
            key = m.group(1)
            out[key] = [line]
        elif key is None:
            raise ValueError(f"stray line {line!r}")
        else:
            out[key].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def shift(text: str, by: int) -> str:
    return "\n".join((" " * by + line) if line.strip() else line for line in text.splitlines())


def main() -> None:
    groups: dict[str, dict[str, Path]] = {}
    for provider in ORDER:
        for path in sorted((OLD / provider).glob("*.yaml")):
            name = RENAME.get((provider, path.stem), path.stem)
            groups.setdefault(name, {})[provider] = path
    NEW.mkdir(exist_ok=True)
    for name, members in sorted(groups.items()):
        data = {p: yaml.safe_load(path.read_text()) for p, path in members.items()}
        texts = {p: blocks(path.read_text(), 0) for p, path in members.items()}
        ref = next(p for p in ORDER if p in members)
        out = [texts[ref]["doc"]]
        requesting = [p for p in members if "request" in data[p]]
        common: list[str] = []
        if requesting:
            rref = next(p for p in ORDER if p in requesting)
            keys = [k for k in data[rref]["request"] if all(k in data[p]["request"] for p in requesting)]
            common = keys
            sub = blocks(texts[rref]["request"].split("\n", 1)[1], 2)
            out.append("request:\n" + "\n".join(sub[k] for k in keys))
            opts = {repr(data[p].get("options")) for p in requesting}
            assert len(opts) == 1, (name, opts)
            if "options" in data[rref]:
                out.append(texts[rref]["options"])
        out.append("providers:")
        for p in ORDER:
            if p not in members:
                continue
            col = [f"  {p}:"]
            if p != ref and data[p]["doc"] != data[ref]["doc"]:
                col.append(shift(texts[p]["doc"], 4))
            if "request" in data[p]:
                base = {k: data[rref]["request"][k] for k in common}
                mine = data[p]["request"]
                differ = [k for k in mine if k not in base or mine[k] != base[k] or repr(mine[k]) != repr(base[k])]
                if differ:
                    sub = blocks(texts[p]["request"].split("\n", 1)[1], 2)
                    col.append("    with:\n" + "\n".join(shift(sub[k], 4) for k in differ))
            for key, text in texts[p].items():
                if key not in ("doc", "request", "options"):
                    col.append(shift(text, 4))
            out.append("\n".join(col))
        target = NEW / f"{name}.yaml"
        target.write_text("\n".join(out) + "\n")
        # the round trip: every old case is the new concern's column, flattened
        concern = yaml.safe_load(target.read_text())
        for p in members:
            column = dict(concern["providers"][p])
            flat: dict[str, Any] = {"doc": column.pop("doc", concern["doc"])}
            if "request" in concern and ("request" in data[p]):
                flat["request"] = {**concern["request"], **column.pop("with", {})}
                if "options" in concern:
                    flat["options"] = concern["options"]
            flat.update(column)
            old = data[p]
            if flat != old or any(repr(flat[k]) != repr(old[k]) for k in old if k != "request"):
                sys.exit(f"{name}/{p}: round trip differs\n{flat}\n{old}")
    print(len(groups), "concerns")


if __name__ == "__main__":
    main()
