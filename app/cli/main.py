"""Command line: the subcommands assembled into one parser, and the dispatch that turns typed errors
into one line and an exit code. Each command's options and run live in its own module
(app/cli/commands/<name>.py); no command logic lives here.

Only the chosen command's module is imported (as pip does): each imports what its run needs, and
importing all eleven cost ~0.55 s of CPU at every start, ~0.2-0.5 s more than one command alone
(`report` 0.03 s). `--help` without a command imports them all to list them."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Callable

from app.cli.command import Command
from app.cli.output import PROG
from app.errors import DelegateScopeError
from app.system.native_log import NativeLogFile
from app.system.version import version

# In the order `delegate-scope --help` lists them; each is the module app/cli/commands/<name>.py.
NAMES: tuple[str, ...] = (
    "classify",
    "predict",
    "inspect",
    "delegates",
    "profile",
    "numerics",
    "bench",
    "sweep",
    "compare",
    "gui",
    "report",
)


def load(name: str) -> Command:
    """The command `name`, importing its module (and what that module imports) now."""
    command: Command = importlib.import_module(f"app.cli.commands.{name}").COMMAND
    return command


def commands() -> tuple[Command, ...]:
    """Every command, in --help order (imports every command module)."""
    return tuple(load(name) for name in NAMES)


class _VersionAction(argparse.Action):
    """argparse's own version action, with the version read only when asked for (app.system.version)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, argparse.SUPPRESS, nargs=0, help="show program's version number and exit")

    def __call__(self, parser: argparse.ArgumentParser, *args: object) -> None:
        print(f"{parser.prog} {version()}")  # stdout, as argparse's version action
        parser.exit()


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser; with `only`, that command's options alone (the other commands stay names, so
    a wrong name is still told the valid ones)."""
    parser = argparse.ArgumentParser(prog=PROG, description="See where and how fast a TFLite model really runs.")
    parser.add_argument("--version", action=_VersionAction)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show tracebacks and native runtime logs")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in NAMES:
        if only is not None and name != only:
            sub.add_parser(name, parents=[common])
            continue
        command = load(name)
        p = sub.add_parser(command.name, parents=[common], help=command.help, description=command.description)
        command.add_arguments(p)
        p.set_defaults(handler=command.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    # Before a command imports numpy. numpy's OpenBLAS starts a thread per core, and they spin after
    # start-up: 0.2-0.25 s of CPU per process on the 2-core machine (docs/reliability.md), on the cores
    # the inference threads use, in the app and in every child it starts (GPU probe, compile check).
    # No command does BLAS work that gains from threads. A user's own setting wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["gui", *argv]  # plain `delegate-scope [options]` opens the window
    args = build_parser(argv[0] if argv[0] in NAMES else None).parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.handler  # the chosen Command's run
    native = NativeLogFile()
    try:
        return run(args)
    except DelegateScopeError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the last line of defence: no traceback unless asked
        if args.debug:
            traceback.print_exc()
        print(f"{PROG}: internal error: {type(exc).__name__}: {exc} (run with --debug for details)", file=sys.stderr)
        return 1
    finally:
        if args.debug:
            lines = native.read().splitlines()
            if lines:  # a heading over nothing reads as a log lost: an empty one is said in words
                print(f"{PROG}: native runtime log ({native.path}):", file=sys.stderr)
                for line in lines:
                    print(f"[native] {line}", file=sys.stderr)
            else:
                print(f"{PROG}: the native runtime wrote nothing to its log ({native.path})", file=sys.stderr)
        else:
            native.remove()
