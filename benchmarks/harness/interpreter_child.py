"""The raw Interpreter loop in a process of its own; prints "median_ms rate".

python -m benchmarks.harness.interpreter_child MODEL THREADS RUNS
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from benchmarks.harness.loops import interpreter_loop


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("threads", type=int)
    parser.add_argument("runs", type=int)
    args = parser.parse_args(argv)
    result = interpreter_loop(args.model, args.threads, args.runs)
    print(result.median_ms, result.rate)
    return 0


if __name__ == "__main__":
    sys.exit(main())
