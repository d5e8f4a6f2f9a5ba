"""The raw Interpreter loop in a process of its own; prints "median_ms rate".

python -m benchmarks.harness.interpreter_child MODEL THREADS RUNS
"""

from __future__ import annotations

import sys
from pathlib import Path

from benchmarks.harness.loops import interpreter_loop


def main(argv: list[str] | None = None) -> int:
    model, threads, runs = argv or sys.argv[1:]
    result = interpreter_loop(Path(model), int(threads), int(runs))
    print(result.median_ms, result.rate)
    return 0


if __name__ == "__main__":
    sys.exit(main())
