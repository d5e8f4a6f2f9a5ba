"""Session recording: one CSV row per inference or event, plus a JSON sidecar (NAME.csv.meta.json) with the context.

The writer never blocks the inference thread: rows go into a bounded queue that a
writer thread drains. If the disk stalls and the queue fills, rows are counted as
lost (the count goes into the sidecar) instead of slowing the pipeline. Each batch
is flushed to the OS as it is written, so a killed process leaves a file whose
only possible damage is an incomplete last line, which the reader ignores.
Disk full or a vanished folder stops the recording with a message; the app runs on.
Format: docs/csv-format.md.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import io
import json
import math
import os
import platform
import queue
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from app.schemas import versioned
from app.system.redact import redact_credentials

FORMAT_VERSION = 4
COLUMNS = [
    "timestamp",  # ISO 8601 with UTC offset, ms precision
    "t_s",  # seconds since the recording started (monotonic clock)
    "event",  # empty for an inference row; start, open, switch, fallback, source_lost, ... , stop
    "frame_id",
    "source",
    "model",
    "model_id",  # first 12 hex digits of the model's sha256; the sidecar maps it to the full hash and path
    "backend_requested",
    "backend_used",
    "threads",
    "throttle_ms",
    "queue_ms",
    "preprocess_ms",
    "inference_ms",
    "postprocess_ms",
    "end_to_end_ms",
    "inference_cpu_ms",  # version 2: the inference's thread + its runtime's threads; version 1: the process
    "inference_thread_cpu_ms",  # version 2 on: the split of the above, read per thread ...
    "runtime_threads_cpu_ms",  # ... (empty where per-thread times cannot be read)
    "rest_of_process_cpu_ms",  # every other thread of the process meanwhile
    "capture_fps",
    "inference_fps",
    "process_cpu_pct",
    "system_cpu_pct",
    "rss_mb",
    "gpu_mem_mb",  # version 4 on: NVML's GPU memory of the process and its children, empty where not read
    "gpu_util_pct",
    "gpu_sm_clock_mhz",  # version 3 on: the power state at the row's newest sample (app/system/power_counters.py) ...
    "gpu_power_w",  # ... NVML's SM clock and board power draw, empty where not readable ...
    "cpu_mhz",  # ... and the CPU's clock, the median over cores (cpufreq), empty where not exposed
    "top1_index",
    "top1_label",
    "top1_score",
    "top_indices",  # "|"-separated, best first
    "top_labels",
    "top_scores",
    "message",
]
# A recording of a model that is not a classifier (bench's on one) and every window recording (its model
# may change task mid-recording) has these after `message`: its task, the result count (detections,
# classes present, keypoints, outputs), the "|"-separated labels and scores of what it found, and the
# one-line summary. A classifier's bench recording is as it always was.
TASK_COLUMNS = ["task", "result_count", "result_labels", "result_scores", "result"]
COLUMNS_TASKS = COLUMNS + TASK_COLUMNS
# Version 1 had no per-thread split, version 2 no power state, version 3 no GPU memory; their files are read
# with those cells empty.
_ADDED_IN_2 = ("inference_thread_cpu_ms", "runtime_threads_cpu_ms", "rest_of_process_cpu_ms")
_ADDED_IN_3 = ("gpu_sm_clock_mhz", "gpu_power_w", "cpu_mhz")
_ADDED_IN_4 = ("gpu_mem_mb",)
COLUMNS_V3 = [c for c in COLUMNS if c not in _ADDED_IN_4]
COLUMNS_TASKS_V3 = COLUMNS_V3 + TASK_COLUMNS
COLUMNS_V2 = [c for c in COLUMNS_V3 if c not in _ADDED_IN_3]
COLUMNS_TASKS_V2 = COLUMNS_V2 + TASK_COLUMNS
COLUMNS_V1 = [c for c in COLUMNS_V2 if c not in _ADDED_IN_2]
TEXT_COLUMNS = {"event", "source", "model", "backend_requested", "backend_used", "top1_label", "top_labels", "message",
                "task", "result_labels", "result"}  # fmt: skip
_FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
_MAY_HOLD_URLS = {"source", "message"}  # a stream:URL source, and events that name it
_VANISH_CHECK_S = 0.5
_BATCH_S = 0.1
QUEUE_ROWS = 10_000  # ~2 s at 5,000 inferences/s; a stalled disk loses rows beyond this, never blocks


def neutralise(text: str) -> str:
    """Stop spreadsheets from executing a cell (OWASP CSV injection): prefix a quote, alter nothing else."""
    return "'" + text if text.startswith(_FORMULA_PREFIXES) else text


def original_text(cell: str) -> str:
    """Undo `neutralise` (one `'` before a formula character) when reading a recording back."""
    if cell.startswith("'") and cell[1:].startswith(_FORMULA_PREFIXES):
        return cell[1:]
    return cell


def cell_number(text: str | None) -> float:
    """A CSV cell as a float; empty, malformed or infinite cells are NaN."""
    if text is None:
        return math.nan
    try:
        value = float(text)
    except (TypeError, ValueError):  # TypeError: a sidecar's JSON value that is no string or number
        return math.nan
    return value if math.isfinite(value) else math.nan


def _iso_now(wall: float) -> str:
    return datetime.fromtimestamp(wall, UTC).astimezone().isoformat(timespec="milliseconds")


def package_versions(
    names: tuple[str, ...] = (
        "ai-edge-litert",
        "numpy",
        "opencv-python-headless",
        "PySide6-Essentials",
        "pyqtgraph",
        "psutil",
        "coremltools",
    ),
) -> Mapping[str, str]:
    """Installed version by distribution name (those not installed left out)."""
    versions = {}
    for name in names:
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions[name] = metadata.version(name)
    return versions


def cpu_name() -> str:
    """The CPU model ("AMD EPYC ..."); platform.processor() is empty on most Linux systems."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


@dataclass(frozen=True)
class MachineInfo:
    """The machine a recording was made on (the sidecar's `machine`)."""

    os: str
    platform: str
    machine: str
    processor: str
    cpu_count: int | None
    python: str

    @classmethod
    def here(cls) -> MachineInfo:
        return cls(
            os=f"{platform.system()} {platform.release()}",
            platform=platform.platform(),
            machine=platform.machine(),
            processor=cpu_name(),
            cpu_count=os.cpu_count(),
            python=sys.version.split()[0],
        )

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


SIDECAR_SUFFIX = ".meta.json"  # NAME.csv -> NAME.csv.meta.json: never the NAME.json a user asks bench to write


def sidecar_path(csv_path: Path) -> Path:
    """Where a recording's sidecar is written: beside it, its full name + `.meta.json`."""
    return Path(csv_path).with_name(Path(csv_path).name + SIDECAR_SUFFIX)


def _read_sidecar(csv_path: Path) -> dict[str, Any]:
    """The sidecar: NAME.csv.meta.json, or NAME.json as recordings made before 2026-12 named it (read only
    when it is a session sidecar: a NAME.json beside a newer recording may be bench's --json summary)."""
    for path, legacy in ((sidecar_path(csv_path), False), (Path(csv_path).with_suffix(".json"), True)):
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            continue
        except (OSError, ValueError, RecursionError):  # RecursionError: nesting deeper than Python's stack
            return {}
        if not isinstance(meta, dict) or (legacy and meta.get("format") != "delegate-scope-session"):
            return {}
        return meta
    return {}


@dataclass
class RecorderState:
    path: Path
    rows: int = 0
    lost_rows: int = 0
    started_wall: float = 0.0
    error: str | None = None
    stopped: bool = False
    extra: dict = field(default_factory=dict)


class RecordingWriter:
    """Thread-safe producer side (`add_row` from any thread), one writer thread."""

    def __init__(
        self,
        path: Path,
        metadata_: dict | None = None,
        *,
        columns: list[str] | None = None,
        text_columns: frozenset[str] | set[str] | None = None,
        tasks: bool = False,
    ) -> None:
        """`columns`/`text_columns`: another table written the same way (the A/B per-frame comparison);
        by default the session format above, with TASK_COLUMNS when `tasks` (a model that is not a
        classifier)."""
        self.path = Path(path)
        self.columns = (COLUMNS_TASKS if tasks else COLUMNS) if columns is None else columns
        self._text_columns = TEXT_COLUMNS if text_columns is None else text_columns
        self.sidecar = sidecar_path(self.path)
        self.state = RecorderState(self.path, started_wall=time.time())
        self._t0 = time.monotonic()
        self._queue: queue.Queue[list[str] | None] = queue.Queue(maxsize=QUEUE_ROWS)
        self._meta = {"format": "delegate-scope-session", "format_version": FORMAT_VERSION, **(metadata_ or {})}
        self._lock = threading.Lock()
        self._checked_at = 0.0
        self._stopping = threading.Event()  # cuts the writer's batching pause short at stop
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "x", newline="", encoding="utf-8")  # closed by the writer thread
        except FileExistsError:
            raise OSError(f"will not overwrite an existing recording: {self.path}") from None
        self._csv = csv.writer(self._file)
        self._csv.writerow(self.columns)
        self._file.flush()
        self._write_sidecar()
        self._thread = threading.Thread(target=self._drain, name="delegate-scope-recorder", daemon=True)
        self._thread.start()

    # ---- producer side -----------------------------------------------------------------

    @property
    def t_s(self) -> float:
        return time.monotonic() - self._t0

    def t_of(self, monotonic: float) -> float:
        """A monotonic time as the recording's t_s (to the microsecond, as the CSV writes it)."""
        return round(monotonic - self._t0, 6)

    def add_row(self, row: dict, wall_time: float | None = None, monotonic: float | None = None) -> bool:
        """Queue one row (missing columns stay empty). False if it was lost (queue full or stopped)."""
        if self.state.stopped or self.state.error:
            return False
        wall = time.time() if wall_time is None else wall_time
        t = (time.monotonic() if monotonic is None else monotonic) - self._t0
        values = {"timestamp": _iso_now(wall), "t_s": f"{t:.6f}", **row}
        cells = []
        for column in self.columns:
            value = values.get(column, "")
            text = _format(value)
            if column in _MAY_HOLD_URLS:
                text = redact_credentials(text)
            cells.append(neutralise(text) if column in self._text_columns else text)
        try:
            self._queue.put_nowait(cells)
            return True
        except queue.Full:
            with self._lock:
                self.state.lost_rows += 1
            return False

    def update_metadata(self, **fields: object) -> None:
        """Add to the sidecar and write it now (atomically): facts given when a session opens (the model,
        its delegation) must survive a kill -9 as the rows do, not wait for stop(). Callers give them
        at opens and ends, never per row."""
        with self._lock:
            self._meta.update(fields)
        self._write_sidecar()

    def stop(self, timeout: float = 10.0) -> RecorderState:
        """Flush everything queued, fsync, write the final sidecar. Idempotent."""
        if not self.state.stopped:
            self.state.stopped = True
            self._stopping.set()
            with contextlib.suppress(queue.Full):
                self._queue.put(None, timeout=timeout)
            self._thread.join(timeout)
            self._write_sidecar()
        return self.state

    # ---- writer thread -----------------------------------------------------------------

    def _drain(self) -> None:
        try:
            while True:
                batch = [self._queue.get()]
                if batch[0] is not None:
                    # Gather a tenth of a second of rows per write: one wake-up, one flush, far
                    # less CPU taken from inference than a write per row; a kill -9 loses at most
                    # what was still queued, as before.
                    self._stopping.wait(_BATCH_S)
                while True:  # write what has accumulated in one go, then flush once
                    try:
                        batch.append(self._queue.get_nowait())
                    except queue.Empty:
                        break
                done = batch[-1] is None
                rows = [r for r in batch if r is not None]
                self._csv.writerows(rows)
                self._file.flush()
                with self._lock:
                    self.state.rows += len(rows)
                self._check_still_there()
                if done:
                    os.fsync(self._file.fileno())
                    return
        except OSError as exc:
            self.state.error = f"recording stopped: {exc.strerror or exc} ({self.path})"
        finally:
            with contextlib.suppress(OSError):
                self._file.close()

    def _check_still_there(self) -> None:
        """A file deleted (or its folder removed) under an open handle still accepts writes on
        POSIX, into an inode nobody can reach: stop with a message instead of losing rows silently."""
        now = time.monotonic()
        if now - self._checked_at < _VANISH_CHECK_S:
            return
        self._checked_at = now
        try:
            same = os.path.samestat(os.stat(self.path), os.fstat(self._file.fileno()))
        except FileNotFoundError:
            same = False
        if not same:
            raise OSError(errno.ENOENT, "the recording file was removed or replaced while recording")

    def _write_sidecar(self) -> None:
        with self._lock:
            meta = versioned(
                {
                    **self._meta,
                    "csv": self.path.name,
                    "started": _iso_now(self.state.started_wall),
                    "rows": self.state.rows,
                    "lost_rows": self.state.lost_rows,
                    "error": self.state.error,
                    "complete": self.state.stopped and self.state.error is None,
                    "machine": MachineInfo.here().to_dict(),
                    "packages": package_versions(),
                }
            )
        tmp = self.sidecar.with_name(self.sidecar.name + ".tmp")
        with contextlib.suppress(OSError):  # the CSV is what matters; the sidecar is rewritten at stop
            tmp.write_text(redact_credentials(json.dumps(meta, indent=2, default=str)), encoding="utf-8")
            os.replace(tmp, self.sidecar)


def _format(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}" if abs(value) < 1e6 else f"{value:.1f}"
    return str(value)


@dataclass
class Recording:
    rows: list[dict]
    metadata: dict
    skipped_lines: int  # incomplete or malformed lines ignored (at most the last one after a crash)
    first_skipped: tuple[int, str] | None = None  # the first of them: its line number (1: the header) and why
    torn: bool = False  # the last line has no line end: the writer was cut off mid-line


def read_recording(path: Path) -> Recording:
    """Read a recording; a torn last line (killed writer), a line of the wrong cell count or a row with no
    time is skipped and counted, not an error."""
    text = Path(path).read_bytes().decode("utf-8", errors="replace")
    complete_text = text if text.endswith("\n") else text[: text.rfind("\n") + 1]
    torn = not text.endswith("\n")
    reader = csv.reader(io.StringIO(complete_text))
    header = next(reader, None)
    missing: dict[str, str] = {}
    if header == COLUMNS:
        columns = COLUMNS
    elif header == COLUMNS_TASKS:
        columns = COLUMNS_TASKS
    elif header in (COLUMNS_V3, COLUMNS_TASKS_V3):
        columns, missing = header, dict.fromkeys(_ADDED_IN_4, "")
    elif header in (COLUMNS_V2, COLUMNS_TASKS_V2):
        columns, missing = header, dict.fromkeys(_ADDED_IN_3 + _ADDED_IN_4, "")
    elif header == COLUMNS_V1:
        columns, missing = COLUMNS_V1, dict.fromkeys(_ADDED_IN_2 + _ADDED_IN_3 + _ADDED_IN_4, "")
    else:
        raise ValueError(f"{path}: not a Delegate Scope recording (unexpected header)")
    rows = []
    skipped: list[tuple[int, str]] = []
    while True:
        line = reader.line_num + 1  # where the next record starts
        try:
            cells = next(reader, None)
        except csv.Error as exc:  # e.g. an unclosed quote running past the field size limit
            skipped.append((line, f"not CSV ({exc})"))
            continue
        if cells is None:
            break
        if len(cells) != len(columns):
            skipped.append((line, f"{len(cells)} cells where the header has {len(columns)}"))
            continue
        row = {**dict(zip(columns, cells, strict=True)), **missing}
        if math.isnan(cell_number(row["t_s"])):  # every row the writer writes has its time
            skipped.append((line, f"no time in its t_s cell ({row['t_s'][:20]!r})"))
            continue
        rows.append(row)
    if torn:
        skipped.append((complete_text.count("\n") + 1, "cut off mid-line, no line end"))
    return Recording(rows, _read_sidecar(Path(path)), len(skipped), skipped[0] if skipped else None, torn)
