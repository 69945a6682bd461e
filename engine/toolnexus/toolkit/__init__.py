"""Toolkits: tools defined in Python or served by MCP servers, declared to and called for a model."""
