"""docs/cli.md is the parser written out: regenerated here, it must equal the file kept in docs/; every
option of every command is in its command's section, and the text does not depend on the terminal's
width or the machine's core count."""

from __future__ import annotations

import argparse
import difflib
import os
import subprocess
import sys

import pytest

from app.cli.main import NAMES, build_parser
from app.cli.reference import EXIT_CODES, REGENERATE, generate
from app.errors import DelegateScopeError
from tests.helpers.paths import ROOT

CLI_MD = ROOT / "docs" / "cli.md"


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def _sections(text: str) -> dict[str, str]:
    """docs/cli.md cut at its `## ` headings: heading -> the text under it."""
    out: dict[str, str] = {}
    for part in text.split("\n## ")[1:]:
        heading, _, body = part.partition("\n")
        out[heading.strip()] = body
    return out


def test_docs_cli_md_is_the_parser_written_out():
    kept = CLI_MD.read_text(encoding="utf-8") if CLI_MD.exists() else ""
    fresh = generate()
    if kept != fresh:
        diff = "".join(
            list(difflib.unified_diff(kept.splitlines(True), fresh.splitlines(True), "docs/cli.md", "generated"))[:40]
        )
        pytest.fail(f"docs/cli.md differs from the parser; regenerate it: {REGENERATE}\n{diff}")


def test_every_option_of_every_command_is_in_its_section():
    sections = _sections(generate())
    every = sections["Every command"]
    for name, parser in _subparsers().items():
        assert name in sections, f"no section for {name}"
        for action in parser._actions:
            for option in action.option_strings:
                assert f"`{option}`" in sections[name] or f"`{option}`" in every, (name, option)
            if not action.option_strings:  # a positional argument: its metavar heads its row
                heads = [line.split(" | ")[0] for line in sections[name].splitlines() if line.startswith("| `")]
                assert any(str(action.metavar or action.dest) in head for head in heads), (name, action.dest)
            if action.help and action.help is not argparse.SUPPRESS and "%" not in action.help:
                first_words = " ".join(action.help.split()[:3])
                assert first_words in sections[name] or first_words in every, (name, action.dest, first_words)


def test_the_options_no_other_page_documented_are_there_with_their_help():
    sections = _sections(generate())
    assert "`--gpu-wait-hint`" in sections["bench"] and "hint_waiting_for_completion" in sections["bench"]
    for name in ("classify", "predict"):
        assert "| `--mean` | `MEAN` |" in sections[name] and "(pixel - mean) / std" in sections[name]
        assert "| `--std` | `STD` |" in sections[name]


def test_commands_come_in_help_order_each_with_its_purpose():
    text = generate()
    headings = [h for h in _sections(text) if h not in ("Every command", "Exit codes")]
    assert headings == list(NAMES)
    for name in NAMES:
        assert f"| [`{name}`](#{name}) |" in text  # the contents table links each section


def test_every_exit_code_an_error_carries_has_its_meaning():
    def classes(cls: type[DelegateScopeError]) -> list[type[DelegateScopeError]]:
        return [cls, *(c for sub in cls.__subclasses__() for c in classes(sub))]

    codes = {cls.exit_code for cls in classes(DelegateScopeError)}
    assert codes <= EXIT_CODES.keys()
    section = _sections(generate())["Exit codes"]
    for code in EXIT_CODES:
        assert f"\n| {code} | " in section
    assert "](../README.md#exit-codes)" in section  # the examples of each, kept by tests/test_exit_codes.py


def test_the_text_depends_on_neither_the_terminal_nor_the_core_count(monkeypatch):
    first = generate()
    monkeypatch.setenv("COLUMNS", "37")
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert generate() == first
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert generate() == first
    assert "all cores but one" in first


def test_the_regenerate_command_prints_the_same_text():
    env = {**os.environ, "COLUMNS": "50"}
    out = subprocess.run(
        [sys.executable, "-m", "app.cli.reference"], cwd=ROOT, env=env, capture_output=True, check=True, timeout=120
    )
    assert out.stdout.decode("utf-8") == generate()
