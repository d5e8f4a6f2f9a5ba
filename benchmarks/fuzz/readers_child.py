"""One reader's fuzz campaign (tests/harness/reader_fuzz.py) in a process of its own, for
benchmarks/fuzz/readers.py: a hang shows there as a timeout. Prints one JSON line.

    python -m benchmarks.fuzz.readers_child READER SEED CASES BASE_RECORDING
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.harness import reader_fuzz


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("reader", choices=reader_fuzz.READERS)
    parser.add_argument("seed", type=int)
    parser.add_argument("cases", type=int)
    parser.add_argument("base", type=Path, help="a recording, the seed of the recording reader's cases")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as work:
        run = getattr(reader_fuzz, "fuzz_" + args.reader)
        extra: dict[str, Any] = {"base": args.base} if args.reader == "recording" else {}
        tally = run(Path(work), args.seed, args.cases, **extra)
    print(json.dumps({"outcomes": dict(tally.outcomes), "failures": tally.failures[:10], "slowest_s": tally.slowest_s,
                      "stages": dict(tally.stages)}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
