"""A scripted run (--exit-after, --stats): what ran, what the window's work cost, what the model
found, and the exit code `bench` would give for the same failure."""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from app.backends import DelegationReport
from app.live.controller import LiveController
from app.metrics.window import MetricsSnapshot
from app.pipeline import Result, Status
from app.schemas import versioned
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


@dataclass
class ResultTally:
    """One side's results as the window showed them: how many, and what the newest one found."""

    frames: int = 0  # results shown (each once, however often it was painted)
    max_count: int = 0
    last: Result | None = None
    _key: tuple[int, int] | None = field(default=None, repr=False)

    def add(self, result: Result | None) -> None:
        if result is None or (result.session_id, result.frame_index) == self._key:
            return
        self._key = (result.session_id, result.frame_index)
        self.frames += 1
        self.last = result
        self.max_count = max(self.max_count, _count(result))

    def reset(self) -> None:
        self.frames, self.max_count, self.last, self._key = 0, 0, None, None

    def task(self) -> str | None:
        if self.last is None:
            return None
        return self.last.task.task.value if self.last.task is not None else "classification"

    def to_dict(self) -> dict[str, object]:
        """--stats' `results`: counts are detections, classes present, keypoints, outputs (raw), or
        top-k labels (classification); `last` is what `predict --json` says of the newest result."""
        last = self.last
        out: dict[str, object] = {"frames": self.frames, "last_count": _count(last) if last else None,
                                  "max_count": self.max_count}  # fmt: skip
        if last is None:
            return out
        if last.task is not None:
            out["last_summary"] = last.task.summary()
            out["last"] = last.task.to_dict()
        else:
            out["last_summary"] = ", ".join(f"{p.label} {p.score:.2f}" for p in last.top[:3])
            out["last"] = {"top": [{"label": p.label, "score": round(p.score, 6)} for p in last.top]}
        return out


def _count(result: Result) -> int:
    return result.task.count() if result.task is not None else len(result.top)


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
    tallies: tuple[ResultTally, ...] = ()  # side A's, and B's when A/B ran
    overlay: dict[str, object] = field(default_factory=dict)  # what the video view drew last (overlay_facts)

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
            **self._results(),
            **({"overlay": self.overlay} if self.overlay else {}),
        }

    def _results(self) -> dict[str, object]:
        """`task` (the newest result's, else the opened model's) and `results`; `task_b` and `results_b`
        when side B showed results."""
        if not self.tallies:
            return {}
        a = self.tallies[0]
        model = self.session.model
        opened_task = model.get("task", "classification") if "name" in model else None
        out: dict[str, object] = {"task": a.task() or opened_task, "results": a.to_dict()}
        if len(self.tallies) > 1 and self.tallies[1].frames:
            out["task_b"], out["results_b"] = self.tallies[1].task(), self.tallies[1].to_dict()
        return out


def window_stats(
    live: LiveController,
    probes: WindowProbes,
    video: VideoView,
    plots: LivePlots,
    tallies: tuple[ResultTally, ...] = (),
) -> WindowStats:
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
        tallies,
        overlay_facts(video),
    )


def overlay_facts(video: VideoView) -> dict[str, object]:
    """--stats' `overlay`: the backend badge's text, where the frame was drawn in the window (x, y, width,
    height: a screenshot's pixels can be read against the results' normalised positions), each label
    panel's rows as last painted, how many class masks were drawn (once per result) and how many of them
    the GUI thread built or resized itself (the controller builds them on the results threads: app/live/mask.py)."""
    rect = video.image_rect()
    origin = video.mapTo(video.window(), rect.topLeft().toPoint())
    return {
        "badge": video.badge_text,  # what really runs, as the top-right badge said it last
        "image_rect": [origin.x(), origin.y(), round(rect.width()), round(rect.height())],
        "panels": video.panel_texts,
        "masks_built": sum(mask.built + mask.taken for mask in video.masks),
        "masks_built_by_gui": sum(mask.built for mask in video.masks),
        "masks_resized_by_gui": sum(mask.resized for mask in video.masks),
    }


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
    path.write_text(json.dumps(versioned(stats.to_dict()), indent=2, default=str), encoding="utf-8")


def _percentile(values: Collection[float], q: float) -> float | None:
    return float(np.percentile(list(values), q)) if values else None
