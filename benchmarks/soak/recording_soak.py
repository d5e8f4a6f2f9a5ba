"""An hour of recording through the window's own path (app.live.controller.LiveController, 5 s metrics
window, the Record button's writer) at full inference speed: the demo clip read as fast as
inference takes it. Prints one line a minute: rows written and lost, RSS, threads, open
files, inference fps; memory must not grow with the recording.

    python -m benchmarks.soak.recording_soak [--minutes 60] [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

from app.live.controller import LiveController
from app.pipeline import InferenceConfig
from benchmarks.harness.procfs import process_counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, help="folder for the recording (default: a new temporary one)")
    args = parser.parse_args(argv)
    args.out = args.out or Path(tempfile.mkdtemp())
    session = LiveController("demo", InferenceConfig(options={"threads": args.threads}), pace=False)
    session.start()
    while session.snapshot().inferences_total < 20:
        time.sleep(0.1)
    path = args.out / "soak.csv"
    session.start_recording(path)
    print(f"recording {path}", flush=True)
    print("| minute | rows | lost | RSS MiB | threads | open files | inference fps (5 s window) |", flush=True)
    print("| --- | --- | --- | --- | --- | --- | --- |", flush=True)
    started = time.monotonic()
    for minute in range(1, int(args.minutes) + 1):
        time.sleep(max(0.0, started + minute * 60 - time.monotonic()))
        status = session.recording_status()
        snap = session.snapshot()
        now = process_counts()
        assert status is not None
        print(
            f"| {minute} | {status.rows} | {status.lost_rows} | {now.rss_mib:.1f} | "
            f"{threading.active_count()} | {now.open_files} | {snap.inference_fps:.1f} |",
            flush=True,
        )
        if status.error:
            print(f"recording error: {status.error}")
            break
    ended, final = session.stop()
    print(f"stopped cleanly: {ended}; {final.rows if final else 0} rows, {final.lost_rows if final else 0} lost, "
          f"{path.stat().st_size / 2**20:.1f} MiB, pid {os.getpid()}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
