"""The window under load against the same run headless: what the pipeline measures with the window
open (its observer effect), and what the window itself delivers.

The demo clip paced at 30 fps, the bundled float32 model on the CPU, recorded to CSV several ways in
turn, round after round (order rotated), so machine noise hits all of them: headless
(`delegate-scope bench --no-pin`: the window does not pin its inference thread either), and the real
window under Xvfb (a 3840x2160x24 screen) at each of `--sizes` (default 1280x860, the window's
default, and 3840x2160, a 4K screen filled). From each recording (its first WARMUP_S seconds
dropped) the medians of `inference_ms` and `preprocess_ms`, and the process CPU %; each window
figure is quoted as a ratio to the headless one of the same round, and the median ratio over the
rounds is the result. From each window's `--stats`: displayed fps, GUI-thread work per displayed
frame (poll + paint + flush, p50 / p95), plot refresh rate, and its inference throughput against
headless bench's.

Targets: inference and preprocess medians windowed within 5% of headless;
displayed fps >= 29, GUI work p95 <= 5 ms, plots >= 5 Hz, inference throughput >= 0.90 of headless.

    python -m benchmarks.suite.window [--seconds 40] [--repeats 3] [--threads 1] [--sizes 1280x860 3840x2160]
        [--old-window CHECKOUT] [--offscreen-4k] [--offscreen] [--json FILE]

--old-window adds the window at the largest of `--sizes` from another checkout (its app/ on
PYTHONPATH), to see what a change to the window did, in the same rounds. --offscreen-4k adds the
window at 3840x2160 on Qt's offscreen platform: everything the app paints, without an X server
receiving it (under Xvfb the server's copy of a 4K window is work a GPU compositor would do on a
desktop). --offscreen runs every window on the offscreen platform (no xvfb-run needed; what the X
server's copy costs is then left out). The window runs in benchmarks/suite/window_child.py.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.harness.children import app_command, run_checked, write_json
from benchmarks.harness.paths import ROOT
from benchmarks.harness.rounds import alternate
from benchmarks.harness.xvfb import require_xvfb, under_xvfb

WARMUP_S = 5.0
SCREEN = "3840x2160x24"
CHILD = Path(__file__).resolve().with_name("window_child.py")


def figures(csv_path: Path) -> dict[str, float]:
    with csv_path.open(newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if not r["event"] and float(r["t_s"]) >= WARMUP_S]
    if len(rows) < 50:
        sys.exit(f"{csv_path.name}: only {len(rows)} inferences after the warm-up")

    def median(column: str) -> float:
        return statistics.median(float(r[column]) for r in rows if r[column])

    return {
        "inferences": len(rows),
        "inference_ms": median("inference_ms"),
        "preprocess_ms": median("preprocess_ms"),
        "process_cpu_pct": median("process_cpu_pct"),
        "inference_fps": median("inference_fps"),
    }


def headless(out: Path, seconds: float, threads: int) -> dict[str, float]:
    summary = out.with_suffix(".json")
    run_checked(app_command("bench", "--source", "demo", "--no-pin", "--threads", str(threads),
                            "--seconds", str(seconds), "--csv", str(out), "--json", str(summary)))  # fmt: skip
    return {**figures(out), "inference_fps_run": json.loads(summary.read_text())["metrics"]["inference_fps"]}


def windowed(
    name: str, out: Path, seconds: float, threads: int, code: Path, offscreen: bool = False
) -> dict[str, float]:
    """The window of checkout `code` at the size `name` ends with, under Xvfb or offscreen."""
    w, h = name.split()[-1].split("x")
    stats_path = out.with_suffix(".stats.json")
    env = {**os.environ, "PYTHONPATH": str(code)}
    child = [sys.executable, "-P", str(CHILD), w, h, str(seconds), str(threads), str(out), str(stats_path)]
    if offscreen or name.startswith("offscreen"):
        run_checked(child, {**env, "QT_QPA_PLATFORM": "offscreen"})
    else:
        run_checked(under_xvfb(child, SCREEN), env)
    stats = json.loads(stats_path.read_text())
    keys = ("display_fps", "gui_work_ms_p50", "gui_work_ms_p95", "plot_refresh_hz", "inference_fps_run")
    return {**figures(out), **{k: stats[k] for k in keys}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--sizes", nargs="+", default=["1280x860", "3840x2160"], help="window sizes, WxH")
    parser.add_argument("--old-window", type=Path, help="a checkout whose window also runs, at the largest size")
    parser.add_argument(
        "--offscreen-4k",
        action="store_true",
        help="also the window at 3840x2160 on Qt's offscreen platform (no X server)",
    )
    parser.add_argument("--offscreen", action="store_true", help="every window on Qt's offscreen platform, no Xvfb")
    parser.add_argument("--json", type=Path, help="write every round's figures here")
    args = parser.parse_args(argv)
    if not args.offscreen:
        require_xvfb()
    seconds = args.seconds + WARMUP_S
    largest = max(args.sizes, key=lambda s: int(s.split("x")[0]) * int(s.split("x")[1]))
    names = ["headless", *(f"window {size}" for size in args.sizes)]
    if args.old_window:
        names.append(f"old window {largest}")
    if args.offscreen_4k:
        names.append("offscreen window 3840x2160")
    with tempfile.TemporaryDirectory() as tmp:
        counter = iter(range(10**9))

        def leg(name: str) -> dict[str, float]:
            out = Path(tmp, f"{name.replace(' ', '_')}-{next(counter)}.csv")
            if name == "headless":
                return headless(out, seconds, args.threads)
            code = args.old_window.resolve() if name.startswith("old") else ROOT
            return windowed(name, out, seconds, args.threads, code, args.offscreen)

        def report(i: int, results: dict[str, dict[str, float]]) -> None:
            for name, r in results.items():
                print(f"round {i + 1} {name:26} {json.dumps(r)}", flush=True)

        results = alternate({name: lambda name=name: leg(name) for name in names}, args.repeats, report=report)
    print_tables(results, args)
    write_json(args.json, {"seconds": args.seconds, "warmup_s": WARMUP_S, "threads": args.threads,
                           "offscreen": args.offscreen, "runs": results})  # fmt: skip
    return 0


def print_tables(results: dict[str, list[dict[str, float]]], args: argparse.Namespace) -> None:
    med = statistics.median
    head = results["headless"]
    print(f"\n{args.repeats} rounds of {args.seconds:.0f} s (after {WARMUP_S:.0f} s warm-up), threads {args.threads}")
    print(f"{'':26} {'inference p50':>14} {'preprocess p50':>15} {'process CPU':>12}   ratios to headless, same round")
    for name, rows in results.items():
        line = f"{name:26} {med(r['inference_ms'] for r in rows):11.2f} ms"
        line += f" {med(r['preprocess_ms'] for r in rows):12.2f} ms"
        line += f" {med(r['process_cpu_pct'] for r in rows):10.1f} %"
        if name != "headless":
            ratios = {
                key: [r[key] / h[key] for r, h in zip(rows, head, strict=True)]
                for key in ("inference_ms", "preprocess_ms")
            }
            line += "   inference " + ", ".join(f"{x:.3f}" for x in ratios["inference_ms"])
            line += f" (median {med(ratios['inference_ms']):.3f})"
            line += "; preprocess " + ", ".join(f"{x:.3f}" for x in ratios["preprocess_ms"])
            line += f" (median {med(ratios['preprocess_ms']):.3f})"
            line += f"; displayed fps {med(r['display_fps'] for r in rows):.1f}"
        print(line)
    print(
        "\nThe window's own figures (medians over rounds; targets: >= 29 fps, GUI work p95 <= 5 ms, >= 5 Hz, >= 0.90):"
    )
    print("| window | displayed fps | GUI-thread work per displayed frame, p50 / p95 | plot refresh "
          "| inference throughput, window / headless bench |")  # fmt: skip
    print("| --- | --- | --- | --- | --- |")
    for name, rows in results.items():
        if name == "headless":
            continue
        ratio = med(r["inference_fps_run"] / h["inference_fps_run"] for r, h in zip(rows, head, strict=True))
        print(
            f"| {name} | {med(r['display_fps'] for r in rows):.1f} | {med(r['gui_work_ms_p50'] for r in rows):.2f} / "
            f"{med(r['gui_work_ms_p95'] for r in rows):.2f} ms | {med(r['plot_refresh_hz'] for r in rows):.2f} Hz | "
            f"{med(r['inference_fps_run'] for r in rows):.1f} / {med(h['inference_fps_run'] for h in head):.1f} "
            f"per s = {ratio:.3f} |"
        )


if __name__ == "__main__":
    sys.exit(main())
