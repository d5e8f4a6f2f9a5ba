"""Where one GPU inference's time goes: the raw C loop against the pipeline, in one process, the run
timed from inside C.

Each native run is wrapped by a small C helper that reads CLOCK_MONOTONIC (the clock of
time.perf_counter on Linux) just before and after LiteRtRunCompiledModel, so a run splits into:
write (the input copy), enter (ctypes and giving the GIL up), native (the run itself), exit (taking
the GIL back), read (the output), and the gap to the next write (the inference thread's own
Python: the slot, the hand-off, timing). The pipeline's parts of that gap are timed too. Three
phases per process (benchmarks/investigations/gpu_run_anatomy_child.py): the C loop (the harness's
timed loop and inputs, as gpu_pipeline's), `bench` on the synthetic source, the C loop again.

    python -m benchmarks.investigations.gpu_run_anatomy [--frames 2000] [--processes 3] [--helper timed.so]

The helper (gpu_run_anatomy_helper.c) is compiled with `cc` into a temporary folder unless --helper
names a built one (a machine without a compiler: build it elsewhere with `cc -O2 -shared -fPIC`).
Linux only.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.harness.children import run_module
from benchmarks.harness.paths import model_path

HELPER_C = Path(__file__).resolve().with_name("gpu_run_anatomy_helper.c")

KEYS = ("rate", "write", "enter", "native", "exit", "read", "gap", "period_mean")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(model_path("efficientnet_lite0")))
    parser.add_argument("--frames", type=int, default=2000)
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--helper", type=Path, help="the C helper, built (default: compile it with cc)")
    parser.add_argument("--allow-software", action="store_true", help="accept a software Vulkan driver (a dry run)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        helper = args.helper
        if helper is None:
            if not shutil.which("cc"):
                print("no C compiler (cc): build the helper elsewhere and pass --helper", file=sys.stderr)
                return 2
            helper = Path(tmp) / "timed.so"
            subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(helper), str(HELPER_C)], check=True)
        columns = " | ".join(f"{k} us (p50)" for k in KEYS[1:-1])
        print(f"| process | phase | rate /s | {columns} | period us (mean) |")
        print("| --- " * (len(KEYS) + 2) + "|")
        for p in range(args.processes):
            child = [str(helper.resolve()), args.model, str(args.frames), "1" if args.allow_software else "0"]
            proc = run_module("benchmarks.investigations.gpu_run_anatomy_child", *child, timeout=600)
            lines = proc.stdout.strip().splitlines()
            if proc.returncode != 0 or not lines:
                print(f"| {p + 1} | failed: {(proc.stderr.strip().splitlines() or ['no output'])[-1]} |")
                continue
            for phase in json.loads(lines[-1]):
                row = " | ".join(str(phase.get(k)) for k in KEYS)
                parts = f" parts: {phase['parts']}" if "parts" in phase else ""
                print(f"| {p + 1} | {phase['phase']} | {row} |{parts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
