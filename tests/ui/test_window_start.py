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

