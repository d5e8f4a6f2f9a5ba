"""What one subcommand is: its name and help, its own options, and the function that runs it.
Each module of commands/ defines one; app/cli/main.py only assembles them."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Command:
    name: str
    help: str  # its line in `delegate-scope --help`
    description: str  # the paragraph of `delegate-scope NAME --help`
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]  # the exit code; typed errors are raised, not returned
