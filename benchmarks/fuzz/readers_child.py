"""One reader's fuzz campaign (tests/harness/reader_fuzz.py) in a process of its own, for
benchmarks/fuzz/readers.py: a hang shows there as a timeout. Prints one JSON line.

    python -m benchmarks.fuzz.readers_child READER SEED CASES BASE_RECORDING
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.harness import reader_fuzz


def main(argv: list[str] | None = None) -> int:
    reader, seed, cases, base = argv or sys.argv[1:]
    with tempfile.TemporaryDirectory() as work:
        run = getattr(reader_fuzz, "fuzz_" + reader)
        extra: dict[str, Any] = {"base": Path(base)} if reader == "recording" else {}
        tally = run(Path(work), int(seed), int(cases), **extra)
    print(json.dumps({"outcomes": dict(tally.outcomes), "failures": tally.failures[:10], "slowest_s": tally.slowest_s,
                      "stages": dict(tally.stages)}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
