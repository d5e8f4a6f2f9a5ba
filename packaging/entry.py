"""Entry point of the frozen bundle: the `delegate-scope` command, plus what `python -m` / `python -c` give.

In a bundle `sys.executable` is this program, not a Python interpreter, yet the app starts helper
processes as `[sys.executable, "-m", "app.backends.gpu.probe"]` (the GPU probe, which must stay a child
so a broken driver cannot kill the app). So here `-m MODULE ARGS...` and `-c CODE ARGS...` behave as
they do for the interpreter; anything else is the command line of `delegate-scope` itself.
"""

from __future__ import annotations

import runpy
import sys


def main() -> int:
    argv = sys.argv[1:]
    if len(argv) >= 2 and argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    if len(argv) >= 2 and argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
        exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
        return 0

    from app.cli.main import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
