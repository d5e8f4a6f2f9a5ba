"""Help → Where files go names the real paths of this window and system, each copyable."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")


def _help_action(window, text: str):
    help_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Help")
    return next(a for a in help_menu.actions() if a.text() == text)


@pytest.mark.slow  # opens the real window on the demo clip
def test_where_files_go_names_this_windows_real_paths(make_window, tmp_path: Path):
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtWidgets import QPushButton

    from app.system.paths import error_log
    from app.ui.help_files import FilesDialog

    window = make_window()
    _help_action(window, "&Where files go").trigger()
    (dialog,) = [d for d in window.findChildren(FilesDialog) if d.isVisible()]
    paths = {place.what: place.path for place in dialog.locations}
    assert paths["Settings"] == str(tmp_path / "settings.ini") == window.qsettings.fileName()
    assert paths["Recordings"] == window.recordings_dir()
    assert paths["Error log"] == str(error_log())
    assert [f.text() for f in dialog.fields] == [place.path for place in dialog.locations]
    assert all(f.isReadOnly() for f in dialog.fields)
    next(b for b in dialog.findChildren(QPushButton) if b.text() == "Copy").click()
    assert QGuiApplication.clipboard().text() == window.recordings_dir()

    window.saved.recordings_dir = str(tmp_path / "elsewhere")  # as Record → Recordings folder… does
    _help_action(window, "&Where files go").trigger()
    (dialog,) = [d for d in window.findChildren(FilesDialog) if d.isVisible()]
    assert {p.what: p.path for p in dialog.locations}["Recordings"] == str(tmp_path / "elsewhere")


def test_the_settings_format_is_named_as_stored(tmp_path: Path):
    from PySide6.QtCore import QSettings

    from app.ui.help_files import file_locations, settings_format

    ini = QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat)
    assert settings_format(ini) == "an INI file"
    rows = {place.what: place for place in file_locations("~/rec", ini)}
    assert rows["Recordings"].path == str(Path.home() / "rec")  # expanded: a path to paste, not a rule
    assert "as an INI file" in rows["Settings"].note and rows["Settings"].path == str(tmp_path / "s.ini")
