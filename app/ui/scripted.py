"""A scripted run (--exit-after, --stats): what ran, what the window's work cost, and the exit
code `bench` would give for the same failure."""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import asdict
from pathlib import Path

import numpy as np

from app.live.controller import LiveController
from app.system.redact import redact_credentials
from app.ui.views.plots import LivePlots
from app.ui.views.video import VideoView
from app.ui.window_probes import WindowProbes


def window_stats(live: LiveController, probes: WindowProbes, video: VideoView, plots: LivePlots) -> dict:
    """Figures for benchmarks and scripted runs (--stats FILE)."""
    snap = live.snapshot()
    paint = video.paint_times
    return {
        "inference_fps_run": probes.inference_fps_run(snap.inferences_total),
        **asdict(probes.figures()),
        "paint_ms_p50": _percentile(paint, 50),
        "paint_ms_p95": _percentile(paint, 95),
        "plot_updates": plots.updates,
        "metrics": snap.to_dict(),
        "session": session_facts(live),
    }


def session_facts(live: LiveController) -> dict:
    """What ran: model, source, requested and used backend, fallback, final state."""
    report = live.report()
    status = live.status()
    delegate = {k: v for k, v in report.to_dict().items() if k != "native_log"} if report else None
    opened = [e.model for e in live.events() if e.model]
    return {
        "model": opened[-1].to_dict() if opened else {"requested": str(live.config().model)},
        "source": redact_credentials(live.source),
        "delegate": delegate,
        "status": {"state": status.state, "message": status.message, "exit_code": status.exit_code},
    }


def scripted_outcome(live: LiveController) -> tuple[int, str]:
    """The exit code of what stopped the pipeline (6: a source that never opened, 3: a model
    refused), 0 otherwise, as `bench` would; read it before closing stops the pipeline."""
    error = live.status().error()
    return (error.exit_code, str(error)) if error is not None else (0, "")


def write_stats(path: Path, stats: dict) -> None:
    path.write_text(json.dumps(stats, indent=2, default=str), encoding="utf-8")


def _percentile(values: Collection[float], q: float) -> float | None:
    return float(np.percentile(values, q)) if values else None
