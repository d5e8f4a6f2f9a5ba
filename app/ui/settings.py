"""Remembered settings (QSettings), validated on the way in: the file is user-editable, so a
bad value is dropped with a note, never trusted (no path is opened just because it is there)."""

from __future__ import annotations

import struct
import sys
import types
from dataclasses import dataclass, fields
from pathlib import Path

from PySide6.QtCore import QByteArray, QDataStream, QSettings

from app.backends import BACKENDS
from app.backends.options import ComputeUnits, GpuPrecision
from app.errors import SourceError
from app.model.decode import DETECTION_THRESHOLD
from app.model.spec import bundled_models
from app.sources import parse_source_spec

MAX_PATH_CHARS = 4096  # PATH_MAX on Linux; a longer "path" makes the OS raise instead of saying no
REFUSED_PYOBJECT = "(a serialized Python object: not loaded)"


def _disarm_pyobject_unpickling() -> None:
    """QSettings turns `key=@Variant(...PySide::PyObjectWrapper...)` into a Python object by calling
    `pickle.loads` on bytes from the file: anyone who can write a settings file (or hand the user one
    for `--settings`) could run code. PySide looks up `pickle.loads` once, on the first such value,
    and keeps it; decoding one harmless value while `pickle` is a stub makes it keep the stub, so every
    such value in any QSettings of this process reads back as REFUSED_PYOBJECT. The app never stores
    Python objects in its settings (only text, numbers and byte arrays). tests/ui/test_settings_security
    proves it with a payload that would create a file."""
    name = b"PySide::PyObjectWrapper\0"
    harmless = b"N."  # pickle protocol 0 for None; never decoded (the stub answers)
    data = struct.pack(">II", 127, len(name)) + name + struct.pack(">I", len(harmless)) + harmless
    stub = types.ModuleType("pickle")
    stub.loads = lambda *args, **kwargs: REFUSED_PYOBJECT  # type: ignore[attr-defined]  # a stand-in module: mypy knows no attributes on one
    real = sys.modules.get("pickle")
    sys.modules["pickle"] = stub
    try:
        stream = QDataStream(QByteArray(data))
        stream.setVersion(QDataStream.Version.Qt_4_0)  # what QSettings uses for @Variant
        stream.readQVariant()
    finally:
        if real is None:
            del sys.modules["pickle"]
        else:
            sys.modules["pickle"] = real


_disarm_pyobject_unpickling()


@dataclass
class SavedSettings:
    """What the window remembers, one settings-file key per field (docs/settings.md lists each)."""

    source: str | None = None
    model: str | None = None
    delegate: str = "cpu"
    threads: int | None = None
    precision: str = "fp16"
    allow_software: bool = False
    units: str = "all"
    throttle_ms: float = 0.0
    top_k: int = 5
    threshold: float = DETECTION_THRESHOLD  # as predict's and bench's --score-threshold
    recordings_dir: str | None = None

    def update(self, **values: object) -> None:
        for key, value in values.items():
            setattr(self, key, value)


# How each key of a fixed set of values or a range is checked when read back; source, model,
# recordings_dir (paths) and allow_software (a flag) have their own rules in load_settings.
# tests/ui/test_settings_reference.py holds docs/settings.md to these.
CHOICES: dict[str, tuple[str, ...]] = {
    "delegate": tuple(BACKENDS),
    "precision": tuple(GpuPrecision),
    "units": tuple(ComputeUnits),
}
RANGES: dict[str, tuple[type, float, float]] = {  # key: (type, lowest, highest)
    "threads": (int, 1, 256),
    "throttle_ms": (float, 0.0, 10_000.0),
    "top_k": (int, 1, 10),
    "threshold": (float, 0.0, 1.0),
}
GEOMETRY, WINDOW_STATE = "geometry", "windowState"  # Qt's own blobs: the window's size and its docks


def setting_keys() -> tuple[str, ...]:
    """Every key the window reads from and writes to its settings file."""
    return (*(f.name for f in fields(SavedSettings)), GEOMETRY, WINDOW_STATE)


def load_settings(store: QSettings) -> tuple[SavedSettings, list[str]]:
    """The saved settings that pass validation, and one line per value that did not."""
    saved, problems = SavedSettings(), []

    def bad(key: str, value: object, why: str) -> None:
        problems.append(f"ignored saved setting {key}={str(value)[:80]!r}: {why}")

    raw = {f.name: store.value(f.name) for f in fields(SavedSettings)}
    if raw["source"] and (source := _text(raw, "source", bad)):
        try:
            kind, arg = parse_source_spec(source)
            if kind in ("video", "images") and not Path(arg).is_absolute():
                bad("source", source, "a relative path depends on the folder the app was started from")
            elif kind in ("video", "images") and not _exists(Path(arg), file=kind == "video"):
                bad("source", source, "the file is gone" if kind == "images" else "no such video file")
            else:
                saved.source = source
        except SourceError as exc:
            bad("source", source, str(exc))
    if raw["model"] and (model := _text(raw, "model", bad)):
        if model in bundled_models():
            saved.model = model
        elif not (model.endswith(".tflite") and Path(model).is_absolute()):
            bad("model", model, "not a bundled model or an absolute path to a .tflite file")
        elif not _exists(Path(model), file=True):
            bad("model", model, "no such .tflite file")
        else:
            saved.model = model
    for key, allowed in CHOICES.items():
        _choice(saved, raw, key, allowed, bad)
    for key, (number_type, lo, hi) in RANGES.items():
        _number(saved, raw, key, number_type, lo, hi, bad)
    if raw["allow_software"] is not None:
        saved.allow_software = str(raw["allow_software"]).lower() in ("true", "1")
    if raw["recordings_dir"] and (text := _text(raw, "recordings_dir", bad)):
        folder = Path(text)
        if folder.is_absolute() and _exists(folder, folder=True):
            saved.recordings_dir = str(folder)
        else:
            bad("recordings_dir", folder, "not an existing absolute folder")
    return saved, problems


def _text(raw: dict, key: str, bad) -> str | None:
    """A path-like setting as text, or None (with a note) for a list, a number, a NUL or a novel."""
    value = raw[key]
    if not isinstance(value, str):
        bad(key, value, f"expected text, found {type(value).__name__}")
    elif value == REFUSED_PYOBJECT:
        bad(key, value, "serialized Python objects are never loaded")
    elif len(value) > MAX_PATH_CHARS:
        bad(key, value, f"{len(value)} characters is too long for a path")
    elif "\0" in value:
        bad(key, value, "contains a NUL character")
    else:
        return value
    return None


def _exists(path: Path, file: bool = False, folder: bool = False) -> bool:
    try:
        return path.is_file() if file else path.is_dir() if folder else path.exists()
    except (OSError, ValueError):  # a name too long for the file system, a component too long
        return False


def save_settings(store: QSettings, saved: SavedSettings, geometry: QByteArray, state: QByteArray) -> None:
    for f in fields(SavedSettings):
        value = getattr(saved, f.name)
        if f.name in ("source", "model") and isinstance(value, str):
            value = _absolute(f.name, value)  # read back only as absolute paths: the start folder varies
        if value is None:
            store.remove(f.name)
        else:
            store.setValue(f.name, value)
    store.setValue(GEOMETRY, geometry)
    store.setValue(WINDOW_STATE, state)
    store.sync()


def _absolute(key: str, value: str) -> str:
    """A model file or a video:/images: source with its path made absolute; anything else as is."""
    if key == "model":
        return str(Path(value).absolute()) if value.endswith(".tflite") else value
    try:
        kind, arg = parse_source_spec(value)
    except (SourceError, OSError, ValueError):
        return value
    if kind in ("video", "images") and not Path(arg).is_absolute():
        return f"{kind}:{Path(arg).absolute()}"
    return value


def window_state(store: QSettings) -> tuple[QByteArray | None, QByteArray | None]:
    geometry, state = store.value(GEOMETRY), store.value(WINDOW_STATE)
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
