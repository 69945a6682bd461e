"""Made-up rule and format files shared by test modules (each defined once here; a module adapts one with
`str.replace` when it needs a variation)."""

from __future__ import annotations

# A source format (rules/formats/) over the anthropic provider's rules, to test the format machinery alone.
ACME_FORMAT = """
format: acme
doc: a made-up chat format, to test the machinery alone
provider: anthropic
request:
  derive: [body]
  fields:
    tool_choice: {$lookup: pick, table: {free: auto, must: required}}
  unsupported:
    mood: {action: drop, doc: no counterpart}
  messages:
    each: turns
    kind: is
    roles:
      user:
        kinds:
          words: {part: {type: text, text: {$get: say}}}
          answer:
            message: {role: tool, tool_call_id: {$get: to, required: true}, content: {$get: body}}
      assistant:
        kinds:
          words: {part: {type: text, text: {$get: say}}}
          call:
            item: tool_calls
            as: {id: {$get: ref}, type: function, function: {name: {$get: fn}, arguments: {$json_text: args}}}
answer:
  message:
    said: {$get: text}
    why: {$get: provider.stop_reason}
    out: {$get: provider.usage.output_tokens}
  blocks:
    into: calls
    from:
      - {each: tool_calls, as: {ref: {$get: id}, fn: {$get: name}}}
"""


# A made-up provider's rule file, section by section: the skeleton every made-up provider of the suite starts
# from (a chat API that names its roles `human`/`bot` and its parts `t`/`call`/`answer`). A test module gives
# the sections it tests as its own text and edits (old, new) on the whole; each old text must be there.
PROVIDER_SECTIONS = {
    "endpoint": "endpoint: {{path: /chat, auth_header: x-key, api_key_env: [{key}]}}\n",
    "request": """\
request:
  body:
    model: {$get: model}
    system: {$get: system}
    turns: {$get: messages}
    tools: {$get: tools}
    tool_choice: {$get: tool_choice}
""",
    "messages": """\
messages:
  system: {roles: [system, developer], join: "\\n"}
  roles:
    user: {message: {from: human, say: {$content: blocks}}}
    assistant: {message: {from: bot, say: {$content: blocks}}}
    tool: {message: {from: human, say: {$content: blocks}}}
  parts:
    text: {t: {$get: text}}
    tool_call: {call: {$get: id}, fn: {$get: name}, args: {$get: arguments}}
    tool_result: {answer: {$get: tool_call_id}, body: {$get: content}}
""",
    "tools": "tools: {declaration: {name: {$get: name}}}\n",
    "tool_choice": """\
tool_choice: {auto: {mode: auto}, none: {mode: none}, required: {mode: any}, function: {mode: one}}
""",
    "response": """\
response:
  items: [{each: out, kind: kind, kinds: {say: {text: {$get: text}}}}]
  finish_reason: {from: stop, documented: [done], table: {done: stop}, unknown: stop}
  usage: {prompt_tokens: {$get: usage.in}}
""",
}


def made_up_provider(name: str, *edits: tuple[str, str], **sections: str) -> str:
    """The rule file of a made-up provider `name`: the skeleton's sections in order, each replaced by the text
    given for it (a section the skeleton lacks goes after the tools), then `edits` applied to the whole."""
    given = dict(sections)
    endpoint = PROVIDER_SECTIONS["endpoint"].format(key=f"{name.upper()}_KEY")
    parts = [f"provider: {name}\n", given.pop("endpoint", endpoint)]
    for section in ("request", "messages", "tools"):
        parts.append(given.pop(section, PROVIDER_SECTIONS[section]))
    tail = [given.pop(section, PROVIDER_SECTIONS[section]) for section in ("tool_choice", "response")]
    text = "".join([*parts, *given.values(), *tail])
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text
