"""The window for a long time: full speed, recording on, a switch every minute.

A real MainWindow (offscreen Qt unless a display is set) runs for `--minutes`, its
recording on from the first second, throttle 0. Every `--switch-every` seconds it makes the
next change in a fixed cycle through the window's own entry points (threads, model, delegate
with its fallbacks, A/B on and off, source). Every `--sample-every` seconds it samples RSS,
OS threads, Python threads, open file descriptors, inferences, recorded rows, glibc's heap
account (in use / held free / mmapped, arenas: `app.system.heap.heap_stats`) and the memory blocks
Python's allocator holds (`sys.getallocatedblocks`), so RSS growth can be told apart: live objects, memory the
allocator keeps, or neither (native code outside malloc's view). At the end
it stops the recording, checks the CSV (every row the recorder counted is in the file),
closes the window (no delegate-scope thread may be left) and writes:

    OUT/window_soak.csv    one row per sample
    OUT/window_soak.png    the curves
    OUT/window_soak.json   summary (first/last/max of each, switches, rows, lost rows)

    QT_QPA_PLATFORM=offscreen python -m benchmarks.soak.window_soak --minutes 60 --out OUT
"""

from __future__ import annotations

import argparse
import csv
import itertools
import json
import os
import sys
import threading
import time
from pathlib import Path

from PySide6.QtCore import QSettings, QTimer

from app.system.heap import HeapStats, heap_stats
from app.ui.app import application
from app.ui.main_window import GuiOptions, MainWindow
from benchmarks.harness.procfs import process_counts

FAST_SOURCE = "synthetic:1280x720@100"  # faster than any model here: inference runs flat out


def switches(window: MainWindow) -> list[tuple[str, object]]:
    """The cycle of changes, each through the entry point a user's action reaches."""
    c = window.controls
    return [
        ("threads 2", lambda: c.threads.setValue(2)),
        ("model int8", lambda: window.switch_model("efficientnet_lite0_int8")),
        ("delegate coreml", lambda: window.request_delegate("coreml")),
        ("delegate gpu", lambda: window.request_delegate("gpu")),
        ("delegate cpu", lambda: window.request_delegate("cpu")),
        ("A/B on (B: fp32 on cpu)", lambda: window.set_compare(("efficientnet_lite0", "cpu"))),
        ("A/B off", lambda: window.set_compare(None)),
        ("source demo", lambda: window.switch_source("demo")),
        ("source synthetic", lambda: window.switch_source(FAST_SOURCE)),
        ("model fp32, threads 1", lambda: (window.switch_model("efficientnet_lite0"), c.threads.setValue(1))),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--switch-every", type=float, default=60.0, help="seconds")
    parser.add_argument("--sample-every", type=float, default=5.0, help="seconds")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # read when the application starts
    args.out.mkdir(parents=True, exist_ok=True)
    recording = args.out / "window_soak_session.csv"
    recording.unlink(missing_ok=True)

    app = application()
    settings = QSettings(str(args.out / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(
        GuiOptions(source=FAST_SOURCE, threads=1, throttle_ms=0, record=recording, dialogs=False), settings
    )
    window.resize(1280, 860)
    window.show()
    started = time.monotonic()
    samples: list[dict] = []
    done: list[str] = []
    cycle = switches(window)
    errors: list[str] = []
    switch_ms: list[float] = []

    def sample() -> None:
        status = window.live.recording_status()
        snap = window.live.snapshot()
        heap = heap_stats() or HeapStats.unknown()
        now = process_counts()
        samples.append(
            {
                "minute": round((time.monotonic() - started) / 60, 3),
                "rss_mib": round(now.rss_mib, 2),
                "os_threads": now.os_threads,
                "py_threads": threading.active_count(),
                "fds": now.fds,
                "inferences_since_switch": snap.inferences_total,  # reset at each source switch and A/B on or off
                "inference_fps": round(snap.inference_fps, 1),
                "rows": status.rows if status else 0,
                "lost_rows": status.lost_rows if status else 0,
                "switches": len(done),
                "state": window.live.status().state,
                "heap_in_use_mib": round(heap.in_use, 2),
                "heap_free_mib": round(heap.free, 2),
                "heap_mmapped_mib": round(heap.mmapped, 2),
                "main_arena_mib": round(heap.main_arena, 2),
                "other_arenas_mib": round(heap.other_arenas, 2),
                "arenas": heap.arenas,  # nan off glibc: heap_stats() is None
                # Not len(gc.get_objects()): that list holds a reference to every object for a
                # moment, and LiteRT's Interpreter.invoke() refuses to run while anything but the
                # interpreter holds its wrapper ("There is at least 1 reference to internal data").
                "py_blocks": sys.getallocatedblocks(),
            }
        )
        s = samples[-1]
        print(
            f"{s['minute']:6.2f} min  RSS {s['rss_mib']:7.1f} MiB  "
            f"threads {s['os_threads']:3d} (py {s['py_threads']})  fds {s['fds']:3d}  "
            f"{s['inference_fps']:5.1f} inf/s  {s['state']}  rows {s['rows']}  switches {s['switches']}  "
            f"heap {s['heap_in_use_mib']:.0f} used {s['heap_free_mib']:.0f} free {s['heap_mmapped_mib']:.0f} mmap "
            f"arenas: main {s['main_arena_mib']:.0f} + {s['arenas'] - 1:.0f} others {s['other_arenas_mib']:.0f}  "
            f"py blocks {s['py_blocks']}",
            flush=True,
        )

    def switch() -> None:
        name, action = cycle[len(done) % len(cycle)]
        started = time.perf_counter()
        try:
            action()  # type: ignore[operator]
        except Exception as exc:  # a soak reports failures, it does not stop at the first
            errors.append(f"{name}: {type(exc).__name__}: {exc}")
        switch_ms.append(round((time.perf_counter() - started) * 1000, 1))  # GUI thread blocked
        done.append(name)
        print(f"-- switch {len(done)}: {name} ({switch_ms[-1]:.0f} ms on the GUI thread)", flush=True)

    sampler = QTimer(interval=int(args.sample_every * 1000), timeout=sample)
    switcher = QTimer(interval=int(args.switch_every * 1000), timeout=switch)
    QTimer.singleShot(0, sample)
    sampler.start()
    switcher.start()

    final_status: list[str] = []

    def finish() -> None:
        status = window.live.status()
        final_status.append(f"{status.state}: {status.message}")
        sampler.stop()
        switcher.stop()
        sample()  # the last one while everything still runs: quitting closes the window
        app.quit()

    QTimer.singleShot(int(args.minutes * 60_000), finish)
    app.exec()

    status = window.stop_recording() or window.last_recording  # the window stops it itself on an error
    window.close()
    app.processEvents()
    leftover = [t.name for t in threading.enumerate() if "delegate-scope" in t.name and t.is_alive()]
    with recording.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    inference_rows = sum(1 for r in rows if not r["event"])
    events = [r["event"] for r in rows if r["event"]]

    with (args.out / "window_soak.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(samples[0]))
        writer.writeheader()
        writer.writerows(samples)
    plot(samples, args.out / "window_soak.png", args.minutes)

    def span(key: str) -> dict:
        values = [s[key] for s in samples]
        after_warm = [s[key] for s in samples if s["minute"] >= 1.0] or values
        return {"first": values[0], "at_1_min": after_warm[0], "last": values[-1], "max": max(values)}

    summary = {
        "minutes": args.minutes,
        "switches": done,
        "switch_errors": errors,
        "switch_gui_ms": switch_ms,
        "window_errors": window.last_error,
        "rss_mib": span("rss_mib"),
        "os_threads": span("os_threads"),
        "py_threads": span("py_threads"),
        "fds": span("fds"),
        "heap_in_use_mib": span("heap_in_use_mib"),
        "heap_free_mib": span("heap_free_mib"),
        "heap_mmapped_mib": span("heap_mmapped_mib"),
        "main_arena_mib": span("main_arena_mib"),
        "other_arenas_mib": span("other_arenas_mib"),
        "py_blocks": span("py_blocks"),
        "inferences_since_last_switch": samples[-1]["inferences_since_switch"],
        "recorder_rows": status.rows if status else None,
        "recorder_lost_rows": status.lost_rows if status else None,
        "recorder_error": status.error if status else None,
        "csv_inference_rows": inference_rows,
        "csv_events": {kind: events.count(kind) for kind in sorted(set(events))},
        "threads_left": leftover,
        "not_running_samples": sum(1 for s in samples if s["state"] in ("error", "stopped", "ended")),
        "final_status": final_status[0] if final_status else None,
        "last_events": [f"{e.kind}: {e.message}" for e in window.live.events()[-5:]],
    }
    (args.out / "window_soak.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))
    ok = not errors and not leftover and status is not None and not status.error and not summary["not_running_samples"]
    return 0 if ok else 1


def plot(samples: list[dict], path: Path, minutes: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x = [s["minute"] for s in samples]
    fig, axes = plt.subplots(5, 1, figsize=(9, 11), sharex=True)
    panels = [
        ("rss_mib", "RSS (MiB)"),
        ("os_threads", "OS threads"),
        ("fds", "open file descriptors"),
        ("heap", "glibc heap (MiB)"),
        ("inference_fps", "inferences / s (5 s window)"),
    ]
    for ax, (key, label) in zip(axes, panels, strict=True):
        if key == "heap":
            for part, name in (
                ("heap_in_use_mib", "in use"),
                ("heap_free_mib", "held free"),
                ("heap_mmapped_mib", "mmapped"),
                ("main_arena_mib", "main arena"),
                ("other_arenas_mib", "other arenas"),
            ):
                ax.plot(x, [s[part] for s in samples], lw=1.2, label=name)
            ax.legend(fontsize=8, loc="upper left")
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
            continue
        ax.plot(x, [s[key] for s in samples], lw=1.2)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        if key != "inference_fps":
            hi = max(s[key] for s in samples)
            ax.set_ylim(0, hi * 1.15 + 1)  # from zero: flat must look flat, not magnified noise
            ax.set_title(f"{label}: {samples[0][key]} → {samples[-1][key]} (max {hi})", fontsize=9, loc="left")
    switch_minutes = [s["minute"] for a, s in itertools.pairwise(samples) if s["switches"] > a["switches"]]
    for ax in axes:
        for m in switch_minutes:
            ax.axvline(m, color="grey", lw=0.5, alpha=0.5)
    axes[-1].set_xlabel("minutes (grey lines: a switch)")
    fig.suptitle(f"Window soak: {minutes:g} min offscreen, recording on, a switch every minute", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
