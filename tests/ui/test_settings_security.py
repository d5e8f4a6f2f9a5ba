"""Settings files are user-editable (and `gui --settings FILE` opens any file): hostile values in a
real INI file are ignored with a note, and a serialized Python object in one never runs."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QByteArray, QSettings

from app.ui.settings import SavedSettings, load_settings, save_settings, window_state
from tests.helpers.cli import run_cli
from tests.helpers.paths import PHOTOS, ROOT

MODEL = ROOT / "models" / "efficientnet_lite0_int8.tflite"


class _Payload:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _qt_escaped(data: bytes) -> str:
    return "".join(f"\\x{b:02x}" for b in data)


def _pyobject_variant(obj: object) -> str:
    """What QSettings writes for a Python object: a QDataStream (version 4.0) QVariant of PySide's
    PyObjectWrapper type, whose bytes are a pickle, escaped into INI text. Built by hand, not by Qt."""
    name = b"PySide::PyObjectWrapper\0"
    data = pickle.dumps(obj)
    stream = (127).to_bytes(4, "big") + len(name).to_bytes(4, "big") + name + len(data).to_bytes(4, "big") + data
    return f"@Variant({_qt_escaped(stream)})"


def _store(path: Path) -> QSettings:
    return QSettings(str(path), QSettings.Format.IniFormat)


@pytest.mark.slow
def test_a_pickled_object_in_the_settings_file_is_never_unpickled(tmp_path: Path):
    marker = tmp_path / "PWNED"
    ini = tmp_path / "hostile.ini"
    ini.write_text(
        "[General]\n"
        f"model={_pyobject_variant(_Payload(marker))}\n"
        f"junk_key={_pyobject_variant(_Payload(marker))}\n"  # a key the app never asks for
        "top_k=3\n",
        encoding="utf-8",
    )
    # Control: plain PySide, in a fresh process without the app, does run it. The payload is live.
    probe = "import sys; from PySide6.QtCore import QSettings as S; S(sys.argv[1], S.Format.IniFormat).allKeys()"
    subprocess.run([sys.executable, "-c", probe, str(ini)], check=True, timeout=60)
    assert marker.exists(), "the payload should run under plain PySide; the test below would prove nothing"
    marker.unlink()

    store = _store(ini)
    saved, problems = load_settings(store)
    assert saved.model is None and saved.top_k == 3
    assert any("model=" in p and "serialized Python objects are never loaded" in p for p in problems), problems
    assert sorted(store.allKeys()) == ["junk_key", "model", "top_k"]
    assert store.value("junk_key") != 0  # os.system's return value, had it run
    window_state(store)
    save_settings(store, saved, QByteArray(b"geometry"), QByteArray(b"state"))  # sync() re-reads the file
    assert not marker.exists(), "a settings file ran code"

    # The real window, started on that file and closed again.
    run = run_cli(
        "gui", "--settings", ini, "--source", f"images:{PHOTOS}", "--threads", "1", "--exit-after", "2",
        env={"QT_QPA_PLATFORM": "offscreen"}, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert not marker.exists(), "the window ran code from its settings file"


def test_hostile_path_values_are_ignored_with_a_note(tmp_path: Path, monkeypatch):
    folder = tmp_path / "recordings"
    folder.mkdir()
    (tmp_path / "dir.tflite").mkdir()
    (tmp_path / "rel.tflite").write_bytes(MODEL.read_bytes())
    (tmp_path / "clip.mp4").write_bytes(b"not really a video")
    (tmp_path / "folder.mp4").mkdir()
    cwd = tmp_path / "start"
    cwd.mkdir()
    monkeypatch.chdir(cwd)  # so that every "../" value below names something that exists
    novel = "/" + "x" * 100_000
    cases = {  # key: (value, words of the note)
        "model": [
            ("/nonexistent/evil.tflite", "no such .tflite file"),
            (str(tmp_path / "dir.tflite"), "no such .tflite file"),  # a folder where a file is expected
            ("../rel.tflite", "absolute path"),
            (novel + ".tflite", "too long"),
            (str(MODEL) + "\0.txt", "NUL"),
            (str(MODEL.with_suffix(".json")), "not a bundled model"),  # exists, but not a model
        ],
        "recordings_dir": [
            ("/nonexistent/folder", "not an existing absolute folder"),
            (str(tmp_path / "clip.mp4"), "not an existing absolute folder"),  # a file where a folder is expected
            ("../recordings", "not an existing absolute folder"),
            (novel, "too long"),
            (str(folder) + "\0/etc", "NUL"),
        ],
        "source": [
            ("video:/nonexistent/clip.mp4", "no such video file"),
            (f"video:{tmp_path / 'folder.mp4'}", "no such video file"),
            ("video:../clip.mp4", "relative path"),
            ("images:../recordings", "relative path"),
            ("video:" + novel, "too long"),
            ("camera:99999999", "camera index"),
            (f"video:{tmp_path / 'clip.mp4'}\0x", "NUL"),
        ],
    }
    for key, values in cases.items():
        for value, why in values:
            ini = tmp_path / "settings.ini"
            ini.unlink(missing_ok=True)
            store = _store(ini)
            store.setValue(key, value)
            store.sync()
            saved, problems = load_settings(_store(ini))
            assert getattr(saved, key) is None, (key, value[:100])
            assert len(problems) == 1 and problems[0].startswith(f"ignored saved setting {key}="), problems
            assert why in problems[0], (why, problems[0])
            assert len(problems[0]) < 400  # the 100 kB value is not echoed back whole

    # The same keys with good values are kept: the validator is not just saying no.
    store = _store(tmp_path / "good.ini")
    good = {"model": str(tmp_path / "rel.tflite"), "recordings_dir": str(folder)}
    good["source"] = f"video:{tmp_path / 'clip.mp4'}"
    for key, value in good.items():
        store.setValue(key, value)
    store.sync()
    saved, problems = load_settings(_store(tmp_path / "good.ini"))
    assert problems == [] and {k: getattr(saved, k) for k in good} == good


def test_values_of_the_wrong_type_are_ignored_with_a_note(tmp_path: Path):
    ini = tmp_path / "types.ini"
    ini.write_text(
        "[General]\n"
        "model=a.tflite, b.tflite\n"  # INI commas make a list
        "recordings_dir=@Rect(0 0 10 10)\n"
        "source=@ByteArray(video:/etc/passwd)\n"
        "delegate=cpu, gpu\n"
        "threads=@Size(2 3)\n"
        "top_k=five\n"
        "throttle_ms=nan\n"
        "threshold=1e999\n"
        "precision=@Point(1 2)\n",
        encoding="utf-8",
    )
    saved, problems = load_settings(_store(ini))
    assert saved == SavedSettings()  # every default kept
    keys = sorted(p.split("=")[0].removeprefix("ignored saved setting ") for p in problems)
    assert keys == sorted(
        ["model", "recordings_dir", "source", "delegate", "threads", "top_k", "throttle_ms", "threshold", "precision"]
    ), problems
    assert "expected text, found list" in next(p for p in problems if p.startswith("ignored saved setting model="))


def test_saved_paths_are_written_absolute(tmp_path: Path, monkeypatch):
    """What the window saves must pass its own validation next time, from any start folder."""
    (tmp_path / "clip.mp4").write_bytes(b"x")
    (tmp_path / "m.tflite").write_bytes(MODEL.read_bytes())
    monkeypatch.chdir(tmp_path)
    store = _store(tmp_path / "s.ini")
    save_settings(store, SavedSettings(source="video:clip.mp4", model="m.tflite"), QByteArray(), QByteArray())
    monkeypatch.chdir(ROOT)
    saved, problems = load_settings(_store(tmp_path / "s.ini"))
    assert problems == []
    assert (saved.source, saved.model) == (f"video:{tmp_path / 'clip.mp4'}", str(tmp_path / "m.tflite"))
    store = _store(tmp_path / "b.ini")
    save_settings(store, SavedSettings(source="demo", model="efficientnet_lite0"), QByteArray(), QByteArray())
    assert (store.value("source"), store.value("model")) == ("demo", "efficientnet_lite0")
