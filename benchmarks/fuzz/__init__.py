"""Fuzz campaigns over user files (the harnesses live in tests/harness, shared with the tests)."""
