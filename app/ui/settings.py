"""Remembered settings (QSettings), validated on the way in: the file is user-editable, so a
bad value is dropped with a note, never trusted (no path is opened just because it is there)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

from app.backends import BACKENDS
from app.backends.coreml import COMPUTE_UNITS
from app.backends.gpu import PRECISIONS
from app.errors import SourceError
from app.model import bundled_models
from app.sources import parse_source_spec


@dataclass
class SavedSettings:
    source: str | None = None
    model: str | None = None
    delegate: str = "cpu"
    threads: int | None = None
    precision: str = "fp16"
    allow_software: bool = False
    units: str = "all"
    throttle_ms: float = 0.0
    top_k: int = 5
    threshold: float = 0.0
    recordings_dir: str | None = None

    def update(self, **values: object) -> None:
        for key, value in values.items():
            setattr(self, key, value)


def load_settings(store: QSettings) -> tuple[SavedSettings, list[str]]:
    """The saved settings that pass validation, and one line per value that did not."""
    saved, problems = SavedSettings(), []

    def bad(key: str, value: object, why: str) -> None:
        problems.append(f"ignored saved setting {key}={str(value)[:80]!r}: {why}")

    raw = {f.name: store.value(f.name) for f in fields(SavedSettings)}
    if raw["source"]:
        source = str(raw["source"])
        try:
            kind, arg = parse_source_spec(source)
            if kind in ("video", "images") and not Path(arg).exists():
                bad("source", source, "the file is gone")
            else:
                saved.source = source
        except SourceError as exc:
            bad("source", source, str(exc))
    if raw["model"]:
        model = str(raw["model"])
        if model in bundled_models() or (model.endswith(".tflite") and Path(model).is_file()):
            saved.model = model
        else:
            bad("model", model, "not a bundled model or an existing .tflite file")
    _choice(saved, raw, "delegate", tuple(BACKENDS), bad)
    _choice(saved, raw, "precision", PRECISIONS, bad)
    _choice(saved, raw, "units", tuple(COMPUTE_UNITS), bad)
    _number(saved, raw, "threads", int, 1, 256, bad)
    _number(saved, raw, "throttle_ms", float, 0.0, 10_000.0, bad)
    _number(saved, raw, "top_k", int, 1, 10, bad)
    _number(saved, raw, "threshold", float, 0.0, 1.0, bad)
    if raw["allow_software"] is not None:
        saved.allow_software = str(raw["allow_software"]).lower() in ("true", "1")
    if raw["recordings_dir"]:
        folder = Path(str(raw["recordings_dir"]))
        if folder.is_absolute() and folder.is_dir():
            saved.recordings_dir = str(folder)
        else:
            bad("recordings_dir", folder, "not an existing absolute folder")
    return saved, problems


def save_settings(store: QSettings, saved: SavedSettings, geometry: QByteArray, state: QByteArray) -> None:
    for f in fields(SavedSettings):
        value = getattr(saved, f.name)
        if value is None:
            store.remove(f.name)
        else:
            store.setValue(f.name, value)
    store.setValue("geometry", geometry)
    store.setValue("windowState", state)
    store.sync()


def window_state(store: QSettings) -> tuple[QByteArray | None, QByteArray | None]:
    geometry, state = store.value("geometry"), store.value("windowState")
    return (
        geometry if isinstance(geometry, QByteArray) else None,
        state if isinstance(state, QByteArray) else None,
    )


def _choice(saved: SavedSettings, raw: dict, key: str, allowed: tuple[str, ...], bad) -> None:
    value = raw[key]
    if value is None:
        return
    if str(value) in allowed:
        setattr(saved, key, str(value))
    else:
        bad(key, value, f"expected one of {', '.join(allowed)}")


def _number(saved: SavedSettings, raw: dict, key: str, kind: type, lo: float, hi: float, bad) -> None:
    value = raw[key]
    if value is None:
        return
    try:
        number = kind(value)
    except (TypeError, ValueError):
        bad(key, value, "not a number")
        return
    if not lo <= number <= hi:
        bad(key, value, f"outside {lo}..{hi}")
        return
    setattr(saved, key, number)
