"""Pure translation: each rule-file section compiled (request, response, streaming, endpoint) and run.
No I/O, no HTTP stack: `from toolnexus import translate_request` loads only this and the rule language."""
