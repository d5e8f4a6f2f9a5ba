"""The window's observer effect: what the pipeline measures with the window open, against `bench`.

The demo clip paced at 30 fps, the bundled float32 model on the CPU, recorded to CSV three ways in
turn, round after round, so machine noise hits all three: headless (`delegate-scope bench`), and the
real window under Xvfb at 1280x860 (the default) and at 3840x2160 (a 4K screen, the window filling
it). From each recording (its first WARMUP_S seconds dropped) the medians of `inference_ms` and
`preprocess_ms`, and the process CPU %; each window figure is quoted as a ratio to the headless one
of the same round, and the median ratio over the rounds is the result. Target (issue 24, item 5):
inference and preprocess medians windowed within 5% of headless.

    python benchmarks/observer_effect.py [--seconds 40] [--repeats 3] [--threads 1] [--old-window CHECKOUT]

--old-window adds the window at 3840x2160 from another checkout (its app/ on PYTHONPATH), to see
what a change to the window did, in the same rounds. --offscreen-4k adds the window at 3840x2160 on
Qt's offscreen platform: everything the app paints, without an X server receiving it (under Xvfb the
server's copy of a 4K window is work a GPU compositor would do on a desktop).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WARMUP_S = 5.0
SIZES = ((1280, 860), (3840, 2160))
SCREEN = "-screen 0 3840x2160x24"


def run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")


def window_child(width: int, height: int, seconds: float, threads: int, csv_path: Path, stats: Path) -> None:
    """The real window at width x height, recording from the start, closing itself after `seconds`."""
    from PySide6.QtCore import QCoreApplication, QSettings

    from app.ui.app import application
    from app.ui.main_window import GuiOptions, MainWindow

    QCoreApplication.setApplicationName("Delegate Scope observer-effect benchmark")
    app = application()
    settings = QSettings(str(csv_path.with_suffix(".ini")), QSettings.Format.IniFormat)
    options = GuiOptions(source="demo", threads=threads, record=csv_path, exit_after=seconds, stats_file=stats,
                         dialogs=False, save_settings=False)  # fmt: skip
    window = MainWindow(options, settings)
    window.resize(width, height)
    window.show()
    app.exec()
    if window.size().width() != width or window.size().height() != height:
        sys.exit(f"the window was {window.size().width()}x{window.size().height()}, not {width}x{height}")


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=40.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--old-window", type=Path, help="a checkout whose window also runs at 3840x2160")
    parser.add_argument("--offscreen-4k", action="store_true",
                        help="also the window at 3840x2160 on Qt's offscreen platform (no X server)")
    parser.add_argument("--child", nargs=4, metavar=("W", "H", "CSV", "STATS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        w, h, csv_path, stats = args.child
        window_child(int(w), int(h), args.seconds, args.threads, Path(csv_path), Path(stats))
        return
    if not shutil.which("xvfb-run"):
        sys.exit("needs xvfb-run (Debian package xvfb)")
    py = sys.executable
    seconds = args.seconds + WARMUP_S
    names = ["headless", *(f"window {w}x{h}" for w, h in SIZES)]
    if args.old_window:
        names.append("old window 3840x2160")
    if args.offscreen_4k:
        names.append("offscreen window 3840x2160")
    results: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeats):
            order = names[i % len(names) :] + names[: i % len(names)]  # rotate: none always runs first
            for name in order:
                out = Path(tmp, f"{name.replace(' ', '_')}-{i}.csv")
                if name == "headless":
                    env = {**os.environ, "PYTHONPATH": str(ROOT)}
                    # --no-pin: the window does not pin its inference thread, so neither does bench here.
                    run([py, "-m", "app", "bench", "--source", "demo", "--no-pin", "--threads", str(args.threads),
                         "--seconds", str(seconds), "--csv", str(out)], env)  # fmt: skip
                else:
                    w, h = name.split()[-1].split("x")
                    code = args.old_window.resolve() if name.startswith("old") else ROOT
                    env = {**os.environ, "PYTHONPATH": str(code)}
                    stats_path = out.with_suffix(".stats.json")
                    child = [py, str(Path(__file__).resolve()), "--seconds", str(seconds),
                             "--threads", str(args.threads), "--child", w, h, str(out), str(stats_path)]  # fmt: skip
                    if name.startswith("offscreen"):
                        run(child, {**env, "QT_QPA_PLATFORM": "offscreen"})
                    else:
                        run(["xvfb-run", "-a", "-s", SCREEN, *child], env)
                    stats = json.loads(stats_path.read_text())
                results[name].append(figures(out))
                if name != "headless":
                    results[name][-1]["display_fps"] = stats["display_fps"]
                print(f"round {i + 1} {name:22} {json.dumps(results[name][-1])}", flush=True)
    print(f"\n{args.repeats} rounds of {args.seconds:.0f} s (after {WARMUP_S:.0f} s warm-up), threads {args.threads}")
    print(f"{'':22} {'inference p50':>14} {'preprocess p50':>15} {'process CPU':>12}   ratios to headless, same round")
    for name in names:
        rows = results[name]
        line = f"{name:22} {statistics.median(r['inference_ms'] for r in rows):11.2f} ms"
        line += f" {statistics.median(r['preprocess_ms'] for r in rows):12.2f} ms"
        line += f" {statistics.median(r['process_cpu_pct'] for r in rows):10.1f} %"
        if name != "headless":
            ratios = {
                key: [r[key] / h[key] for r, h in zip(rows, results["headless"], strict=True)]
                for key in ("inference_ms", "preprocess_ms")
            }
            line += "   inference " + ", ".join(f"{x:.3f}" for x in ratios["inference_ms"])
            line += f" (median {statistics.median(ratios['inference_ms']):.3f})"
            line += "; preprocess " + ", ".join(f"{x:.3f}" for x in ratios["preprocess_ms"])
            line += f" (median {statistics.median(ratios['preprocess_ms']):.3f})"
            line += f"; displayed fps {statistics.median(r['display_fps'] for r in rows):.1f}"
        print(line)


if __name__ == "__main__":
    main()
