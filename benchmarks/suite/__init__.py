"""Repeatable measurements behind the figures of docs/: each prints a table and writes --json."""
