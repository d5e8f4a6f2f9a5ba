"""Command line: the subcommands assembled into one parser, and the dispatch that turns typed errors
into one line and an exit code. Each command's options and run live in its own module
(app/cli/commands/<name>.py); no command logic lives here."""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable

from app import __version__
from app.cli.command import Command
from app.cli.commands import (
    bench,
    classify,
    compare,
    delegates,
    gui,
    inspect,
    numerics,
    predict,
    profile,
    report,
    sweep,
)
from app.cli.output import PROG
from app.errors import DelegateScopeError
from app.system.native_log import NativeLogFile

# In the order `delegate-scope --help` lists them.
COMMANDS: tuple[Command, ...] = (
    classify.COMMAND,
    predict.COMMAND,
    inspect.COMMAND,
    delegates.COMMAND,
    profile.COMMAND,
    numerics.COMMAND,
    bench.COMMAND,
    sweep.COMMAND,
    compare.COMMAND,
    gui.COMMAND,
    report.COMMAND,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="See where and how fast a TFLite model really runs.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show tracebacks and native runtime logs")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        p = sub.add_parser(command.name, parents=[common], help=command.help, description=command.description)
        command.add_arguments(p)
        p.set_defaults(handler=command.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["gui", *argv]  # plain `delegate-scope [options]` opens the window
    args = parser.parse_args(argv)
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
            print(f"{PROG}: native runtime log ({native.path}):", file=sys.stderr)
            for line in native.read().splitlines():
                print(f"[native] {line}", file=sys.stderr)
        else:
            native.remove()
