"""docs/cli.md, written from the parser that runs: every command with its purpose and synopsis, and
every option with its value, default and help, grouped as `--help` groups them. Regenerate with
`python -m app.cli.reference > docs/cli.md`; tests/test_cli_reference.py fails when the file differs.

The text never depends on the terminal (argparse's help wraps to it) or on the machine: options are
read from the parser's actions, not from its formatted help, and the one help text that names this
machine's core count is written in words."""

from __future__ import annotations

import argparse
import enum
import re
import sys
from collections.abc import Iterator

from app import errors
from app.backends.options import default_threads
from app.cli.main import NAMES, build_parser
from app.cli.output import PROG

REGENERATE = "python -m app.cli.reference > docs/cli.md"
_DOCS_PAGE = re.compile(r"\bdocs/([\w.-]+\.md)\b")

# What each exit code means (README.md, "Exit codes", has the examples and is checked by
# tests/test_exit_codes.py). Every code an error class of app/errors.py carries must have words here.
EXIT_CODES: dict[int, str] = {
    0: "ok (warnings go to stderr)",
    1: 'a bug ("internal error"): please report it',
    2: "usage: a bad option or argument",
    3: "model problem: missing, unreadable, refused by the runtime, or not of the task the command reads",
    4: "image problem: a missing or unreadable image, or an `--inputs` file that does not fit",
    5: "the requested backend is unavailable with `--no-fallback` (`numerics` never falls back)",
    6: "source problem: a camera or video that cannot be opened or read",
    7: "a required check failed: `inspect --require`, or a `--budget` of `bench`, `sweep` or `compare`",
    130: "interrupted (Ctrl+C)",
}


def generate() -> str:
    """The whole of docs/cli.md."""
    parser = build_parser()
    subparsers = _subparsers(parser)
    parsers = [subparsers.choices[name] for name in NAMES]
    purposes = {a.dest: a.help or "" for a in subparsers._choices_actions}
    shared = _shared_options(parsers)
    lines = [
        "# Command-line reference",
        "",
        f"Generated from the parser `{PROG}` runs (`app/cli/main.py` and `app/cli/commands/`): do not edit by",
        f"hand; regenerate with `{REGENERATE}`. `{PROG} COMMAND --help` prints the same options.",
        "",
        *_contents(purposes),
        *_every_command(parser, parsers[0], shared),
        *_exit_codes(),
    ]
    for name, sub in zip(NAMES, parsers, strict=True):
        lines += _command(name, purposes[name], sub, shared)
    return "\n".join(lines).rstrip("\n") + "\n"


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction[argparse.ArgumentParser]:
    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(found) == 1, "the parser has one set of subcommands"
    return found[0]


def _shared_options(parsers: list[argparse.ArgumentParser]) -> set[str]:
    """Option strings every command takes (--help, --debug): documented once, not per command."""
    sets = [{s for a in p._actions for s in a.option_strings} for p in parsers]
    return set.intersection(*sets)


def _contents(purposes: dict[str, str]) -> list[str]:
    rows = [f"| [`{name}`](#{_anchor(name)}) | {_cell(purposes[name])} |" for name in NAMES]
    return ["| command | what it does |", "| --- | --- |", *rows, ""]


def _every_command(parser: argparse.ArgumentParser, first: argparse.ArgumentParser, shared: set[str]) -> list[str]:
    top = [a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)]
    common = [a for a in first._actions if set(a.option_strings) & shared]
    return [
        "## Every command",
        "",
        "```text",
        f"{PROG} [--version] [COMMAND] [options]",
        "```",
        "",
        f"With no command, or with options only, `{PROG}` runs `gui` (the window). Before any command:",
        "",
        *_table(parser, top),
        "Every command takes:",
        "",
        *_table(first, common),
    ]


def _exit_codes() -> list[str]:
    carried = {cls.exit_code for cls in _error_classes()}
    missing = sorted(carried - EXIT_CODES.keys())
    assert not missing, f"exit codes without words in app/cli/reference.py EXIT_CODES: {missing}"
    rows = [f"| {code} | {_cell(words)} |" for code, words in sorted(EXIT_CODES.items())]
    return [
        "## Exit codes",
        "",
        "Every command exits with one of these and, on failure, prints one line on stderr (`--debug` adds the",
        "traceback and the runtime's native log). Examples of each, per command, and the test that keeps them:",
        '[README.md, "Exit codes"](../README.md#exit-codes).',
        "",
        "| code | meaning |",
        "| --- | --- |",
        *rows,
        "",
    ]


def _error_classes() -> Iterator[type[errors.DelegateScopeError]]:
    todo: list[type[errors.DelegateScopeError]] = [errors.DelegateScopeError]
    while todo:
        cls = todo.pop()
        yield cls
        todo += cls.__subclasses__()


def _command(name: str, purpose: str, sub: argparse.ArgumentParser, shared: set[str]) -> list[str]:
    lines = [f"## {name}", "", _sentence(purpose), "", "```text", _synopsis(sub, shared), "```", ""]
    if sub.description and _sentence(sub.description) != _sentence(purpose):
        lines += [_linked(" ".join(sub.description.split())), ""]
    for group in sub._action_groups:
        actions = [a for a in group._group_actions if not set(a.option_strings) & shared]
        if actions:
            lines += [f"**{_group_title(group)}**", "", *_table(sub, actions)]
        for exclusive in sub._mutually_exclusive_groups:
            if exclusive._group_actions and exclusive._group_actions[0] in actions:
                names = ", ".join(f"`{a.option_strings[0]}`" for a in exclusive._group_actions)
                lines += [f"At most one of {names}.", ""]
    return lines


def _synopsis(sub: argparse.ArgumentParser, shared: set[str]) -> str:
    """`delegate-scope NAME`, the required options, `[options]`, then the positional arguments."""
    parts = [sub.prog]
    for action in sub._actions:
        if action.option_strings and action.required:
            parts.append(f"{action.option_strings[0]} {_value(sub, action)}")
    if any(a.option_strings and not a.required and not set(a.option_strings) & shared for a in sub._actions):
        parts.append("[options]")
    parts += [_value(sub, a) for a in sub._actions if not a.option_strings]
    return " ".join(parts)


def _group_title(group: argparse._ArgumentGroup) -> str:
    # argparse's own titles ("positional arguments", "options") are renamed; a command's own are kept.
    title = {"positional arguments": "arguments", "options": "options", "optional arguments": "options"}.get(
        group.title or "", f"options: {group.title}"
    )
    return title[:1].upper() + title[1:]


def _table(parser: argparse.ArgumentParser, actions: list[argparse.Action]) -> list[str]:
    rows = []
    for action in actions:
        if action.help == argparse.SUPPRESS:
            continue
        name = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{_value(parser, action)}`"
        value = _value(parser, action) if action.option_strings else ""
        value = f"`{value}`" if value else ""
        if isinstance(action, argparse._AppendAction):
            value += " (repeatable)"
        rows.append(f"| {name} | {value} | {_default(action)} | {_cell(_help(parser, action))} |")
    head = "option" if any(a.option_strings for a in actions) else "argument"
    return [f"| {head} | value | default | what it does |", "| --- | --- | --- | --- |", *rows, ""]


def _value(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """What follows the option (`EXPR`, `{fp16,fp32}`, `RULE [RULE ...]`), as --help's usage writes it."""
    if action.nargs == 0:
        return ""
    default_metavar = action.dest.upper() if action.option_strings else action.dest
    return parser._get_formatter()._format_args(action, default_metavar)


def _default(action: argparse.Action) -> str:
    if action.required and action.nargs not in ("?", "*"):  # argparse marks a `*` positional required
        return "required"
    value = action.default
    if value is None or value is argparse.SUPPRESS or isinstance(value, bool) or value == []:
        return ""
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, float):
        value = f"{value:g}"
    return f"`{value}`"


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    text = parser._get_formatter()._expand_help(action) if action.help else ""
    # The default thread count is this machine's core count less one: written as the rule it follows.
    return _linked(text.replace(f"(default {default_threads()} here)", "(default: all cores but one, at least 1)"))


def _linked(text: str) -> str:
    """A page of docs/ named in a help text, as a link (this page is in docs/ too)."""
    return _DOCS_PAGE.sub(r"[docs/\1](\1)", text)


def _cell(text: str) -> str:
    """One table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading of plain words."""
    return "-".join(heading.lower().split())


if __name__ == "__main__":
    sys.stdout.buffer.write(generate().encode("utf-8"))  # UTF-8 and \n on every OS, as the file is kept
