"""A scripted run (--exit-after, --stats): what ran, what the window's work cost, and the exit
code `bench` would give for the same failure."""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.backends import DelegationReport
from app.live.controller import LiveController
from app.metrics.window import MetricsSnapshot
from app.pipeline import Status
from app.system.redact import redact_credentials
from app.ui.views.plots import LivePlots
from app.ui.views.video import VideoView
from app.ui.window_probes import DisplayFigures, WindowProbes


@dataclass(frozen=True)
class SessionFacts:
    """What ran: model, source, requested and used backend, fallback, final state."""

    model: dict[str, Any]  # the model opened last (its open event's facts), or the one requested
    source: str  # credentials redacted
    report: DelegationReport | None
    status: Status

    def to_dict(self) -> dict[str, object]:
        """The `session` object of the --stats JSON."""
        report = self.report
        delegate = {k: v for k, v in report.to_dict().items() if k != "native_log"} if report else None
        return {"model": self.model, "source": self.source, "delegate": delegate, "status": self.status.to_dict()}


@dataclass(frozen=True)
class WindowStats:
    """Figures for benchmarks and scripted runs (--stats FILE)."""

    inference_fps_run: float | None
    display: DisplayFigures
    paint_ms_p50: float | None
    paint_ms_p95: float | None
    plot_updates: int
    metrics: MetricsSnapshot
    session: SessionFacts

    def to_dict(self) -> dict[str, object]:
        """The --stats JSON (its keys in this order: benchmarks read it)."""
        return {
            "inference_fps_run": self.inference_fps_run,
            **asdict(self.display),
            "paint_ms_p50": self.paint_ms_p50,
            "paint_ms_p95": self.paint_ms_p95,
            "plot_updates": self.plot_updates,
            "metrics": self.metrics.to_dict(),
            "session": self.session.to_dict(),
        }


def window_stats(live: LiveController, probes: WindowProbes, video: VideoView, plots: LivePlots) -> WindowStats:
    snap = live.snapshot()
    paint = video.paint_times
    return WindowStats(
        probes.inference_fps_run(snap.inferences_total),
        probes.figures(),
        _percentile(paint, 50),
        _percentile(paint, 95),
        plots.updates,
        snap,
        session_facts(live),
    )


def session_facts(live: LiveController) -> SessionFacts:
    opened = [e.model for e in live.events() if e.model]
    return SessionFacts(
        opened[-1].to_dict() if opened else {"requested": str(live.config().model)},
        redact_credentials(live.source),
        live.report(),
        live.status(),
    )


def scripted_outcome(live: LiveController) -> tuple[int, str]:
    """The exit code of what stopped the pipeline (6: a source that never opened, 3: a model
    refused), 0 otherwise, as `bench` would; read it before closing stops the pipeline."""
    error = live.status().error()
    return (error.exit_code, str(error)) if error is not None else (0, "")


def write_stats(path: Path, stats: WindowStats) -> None:
    path.write_text(json.dumps(stats.to_dict(), indent=2, default=str), encoding="utf-8")


def _percentile(values: Collection[float], q: float) -> float | None:
    return float(np.percentile(list(values), q)) if values else None
