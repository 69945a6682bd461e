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
