"""Where the window starts: camera 0 is probed once, and only on a first start with no source."""

import app.ui.window_config as window_config
from app.sources import list_cameras
from app.ui.settings import SavedSettings
from app.ui.window_config import GuiOptions, start_config


def counting_probe(monkeypatch):
    calls = []

    def probe(max_index: int = 8, first_index: int = 0):
        calls.append((max_index, first_index))
        return list_cameras(max_index, first_index)  # the real look-up: no camera here, so []

    monkeypatch.setattr(window_config, "list_cameras", probe)
    return calls


def test_a_first_start_probes_camera_zero_once_and_says_so(monkeypatch):
    calls = counting_probe(monkeypatch)
    start = start_config(GuiOptions(), SavedSettings())
    assert calls == [(1, 0)]
    assert start.probed_below == 1  # the background listing starts at camera 1
    assert start.source == ("camera:0" if start.cameras else "demo")


def test_a_given_or_saved_source_probes_nothing(monkeypatch):
    calls = counting_probe(monkeypatch)
    assert start_config(GuiOptions(source="synthetic"), SavedSettings()).probed_below == 0
    assert start_config(GuiOptions(), SavedSettings(source="demo")).source == "demo"
    assert calls == []


def test_the_score_threshold_starts_at_the_cli_default_and_a_saved_or_given_one_wins(tmp_path):
    """A first start keeps detections from 0.5 as predict and bench do (it started at 0: a detector showed
    every low-score box); a threshold saved in the settings file, or --score-threshold, still wins."""
    from PySide6.QtCore import QSettings

    from app.model.decode import DETECTION_THRESHOLD
    from app.ui.settings import load_settings

    first = start_config(GuiOptions(source="demo"), SavedSettings())
    assert first.threshold == first.config.score_threshold == DETECTION_THRESHOLD == 0.5
    ini = tmp_path / "saved.ini"
    ini.write_text("[General]\nthreshold=0.2\n", encoding="utf-8")
    saved, problems = load_settings(QSettings(str(ini), QSettings.Format.IniFormat))
    assert problems == [] and start_config(GuiOptions(source="demo"), saved).threshold == 0.2
    given = start_config(GuiOptions(source="demo", score_threshold=0.7), saved)
    assert given.threshold == given.config.score_threshold == 0.7
