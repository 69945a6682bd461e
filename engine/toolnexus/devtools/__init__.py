"""Tools around the engine, never imported by it: the CLI, the conformance check, diff, the demo and
the loopback provider stub (tests and benchmarks use it too)."""
