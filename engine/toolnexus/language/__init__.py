"""The rule language: rule files read with their positions (loader), paths, templates compiled to
Python, tool-call id rules and the JSON checks every boundary shares. Knows no rule-file section."""
