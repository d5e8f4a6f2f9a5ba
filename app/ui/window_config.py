"""What the window runs with: the command line's options over the saved settings over the
defaults; and what it remembers at exit."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from app.backends.options import BackendOptions, default_threads
from app.live.trace import DEFAULT_SECONDS as DEFAULT_TRACE_SECONDS
from app.model.spec import ModelOptions
from app.pipeline import InferenceConfig
from app.sources import CameraInfo, list_cameras
from app.ui.settings import SavedSettings


@dataclass(frozen=True)
class GuiOptions:
    """The `gui` command's options, built from its parser by field name (app/cli/commands/gui.py)."""

    source: str | None = None
    model: str | None = None
    delegate: str | None = None
    threads: int | None = None
    throttle_ms: float | None = None
    score_threshold: float | None = None  # None: the saved setting
    # --gpu-precision, --allow-software-gpu, --coreml-units: None keeps the saved settings' choice.
    gpu_precision: str | None = None
    allow_software_gpu: bool | None = None
    coreml_units: str | None = None
    # --compare-with/--compare-model/--compare-labels: the window starts with A/B on (B: A's model and delegate
    # where not given).
    compare_with: str | None = None
    compare_model: str | None = None
    compare_labels: Path | None = None
    settings_file: Path | None = None
    record: Path | None = None
    exit_after: float | None = None
    screenshot: Path | None = None
    stats_file: Path | None = None
    trace: Path | None = None  # take a trace from the start, written at exit (Record → Trace… stops it sooner)
    trace_seconds: float | None = DEFAULT_TRACE_SECONDS  # the trace's ring: its last seconds (None: all of it)
    save_settings: bool | None = None  # None: yes for an interactive run, no for a scripted one (--exit-after)
    dialogs: bool = True  # False for scripted runs and tests: errors go to the status bar only
    # --task, --input-shape, --inputs (app/cli/options.py): how to read the model the window starts with.
    model_options: ModelOptions = field(default_factory=ModelOptions)

    @property
    def compare(self) -> bool:
        return bool(self.compare_with or self.compare_model or self.compare_labels)

    @property
    def scripted(self) -> bool:
        return self.exit_after is not None

    @property
    def saves_settings(self) -> bool:
        # A scripted demo or benchmark leaves the user's own settings alone unless asked.
        return self.save_settings if self.save_settings is not None else not self.scripted


@dataclass(frozen=True)
class StartConfig:
    config: InferenceConfig
    source: str
    threshold: float  # the overlay's score threshold, 0..1
    # Cameras below this index were probed to choose the start source (found ones in `cameras`);
    # the window's background listing starts after them instead of opening them again.
    probed_below: int = 0
    cameras: tuple[CameraInfo, ...] = ()


def start_config(options: GuiOptions, saved: SavedSettings) -> StartConfig:
    s, o = saved, options
    threshold = o.score_threshold if o.score_threshold is not None else s.threshold
    source = o.source or s.source
    probed_below, cameras = 0, tuple[CameraInfo, ...]()
    if source is None:  # a first start: camera 0 if it opens, else the demo clip
        probed_below, cameras = 1, tuple(list_cameras(max_index=1))
        source = "camera:0" if cameras else "demo"
    inference_options = BackendOptions(
        threads=o.threads or s.threads or default_threads(),
        precision=o.gpu_precision or s.precision,
        allow_software=o.allow_software_gpu if o.allow_software_gpu is not None else s.allow_software,
        compute_units=o.coreml_units or s.units,
    )
    config = InferenceConfig(
        model=o.model or s.model or InferenceConfig.model,
        delegate=o.delegate or s.delegate,
        options=inference_options,
        throttle_ms=o.throttle_ms if o.throttle_ms is not None else s.throttle_ms,
        top_k=s.top_k,
        model_options=o.model_options,
        score_threshold=threshold,  # the window's control: the decoder keeps what the overlay shows
    )
    return StartConfig(config, source, threshold, probed_below, cameras)


def remember(saved: SavedSettings, config: InferenceConfig, source: str, threshold: float) -> None:
    """Put what runs now into `saved` (recordings_dir, chosen in a dialog, is already there)."""
    saved.update(
        source=source,
        model=str(config.model),
        delegate=config.delegate,
        threads=config.options.threads,
        precision=config.options.precision,
        allow_software=config.options.allow_software,
        units=config.options.compute_units,
        throttle_ms=config.throttle_ms,
        top_k=config.top_k,
        threshold=threshold,
    )
