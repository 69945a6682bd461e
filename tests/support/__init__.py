"""Shared test material: strategies, stubs, judges, case-table helpers.

Test modules import these and never each other.
"""
