"""docs/settings.md is the settings file as the window reads and writes it: every key the code asks a
real QSettings for and every key it writes to a real INI file has a row there, each choice and range
the reader checks is written in its row, and the page's examples load with exactly the notes it shows."""

from __future__ import annotations

import re
from dataclasses import fields
from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings

from app.ui.settings import CHOICES, RANGES, SavedSettings, load_settings, save_settings, setting_keys, window_state
from tests.helpers.paths import ROOT

PAGE = ROOT / "docs" / "settings.md"


class _Asked(QSettings):
    """A real INI-backed QSettings that notes each key the code reads."""

    def __init__(self, path: Path) -> None:
        super().__init__(str(path), QSettings.Format.IniFormat)
        self.asked: list[str] = []

    def value(self, key, *args, **kwargs):  # type: ignore[override]  # the same call, noted
        self.asked.append(key)
        return super().value(key, *args, **kwargs)


def _text() -> str:
    return PAGE.read_text(encoding="utf-8")


def _rows() -> dict[str, list[str]]:
    """The Keys table: key -> its cells (Type, Default, Allowed, What it sets, On the command line)."""
    section = _text().split("\n## Keys\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if match := re.match(r"\| `(\w+)` \|", line):
            rows[match.group(1)] = [cell.strip() for cell in line.strip().strip("|").split("|")][1:]
    return rows


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", _text(), flags=re.DOTALL)


def _ini(value: object) -> str:
    """A value as the INI file writes it."""
    if isinstance(value, bool):
        return str(value).lower()
    return f"{value:g}" if isinstance(value, float) else str(value)


def _written_keys(tmp_path: Path) -> set[str]:
    """What save_settings puts in a real file when every setting has a value."""
    every = SavedSettings(source="demo", model="efficientnet_lite0", threads=2, recordings_dir=str(tmp_path))
    assert all(getattr(every, f.name) is not None for f in fields(SavedSettings))
    ini = tmp_path / "written.ini"
    save_settings(QSettings(str(ini), QSettings.Format.IniFormat), every, QByteArray(b"g"), QByteArray(b"s"))
    return set(QSettings(str(ini), QSettings.Format.IniFormat).allKeys())


def test_the_page_has_a_row_for_every_key_read_and_written(tmp_path: Path):
    store = _Asked(tmp_path / "empty.ini")
    load_settings(store)
    window_state(store)
    read, written = set(store.asked), _written_keys(tmp_path)
    assert read == written, "a key written but never read back, or read but never written"
    assert read == set(setting_keys())
    documented = set(_rows())
    assert documented == read, f"missing from docs/settings.md: {read - documented}; not a key: {documented - read}"


def test_each_row_gives_the_choices_ranges_and_defaults_the_reader_checks():
    rows = _rows()
    assert set(setting_keys()) <= set(rows), "a key without a row (the test above names it)"
    for key, allowed in CHOICES.items():
        missing = [str(v) for v in allowed if f"`{v}`" not in rows[key][2]]
        assert not missing, f"{key}: the Allowed cell does not name {missing}"
    for key, (_, lo, hi) in RANGES.items():
        assert f"`{lo:g}..{hi:g}`" in rows[key][2], f"{key}: the Allowed cell does not say {lo:g}..{hi:g}"
    for f in fields(SavedSettings):
        default = getattr(SavedSettings(), f.name)
        if default is not None:  # None: a default the page describes in words (the demo clip, cores less one)
            assert f"`{_ini(default)}`" in rows[f.name][1], f"{f.name}: the Default cell does not say {default!r}"


def test_the_bad_file_on_the_page_gives_exactly_the_notes_it_shows(tmp_path: Path):
    bad_file = next(b for b in _blocks("ini") if "threads=0" in b)
    (notes,) = _blocks("text")
    ini = tmp_path / "bad.ini"
    ini.write_text(bad_file, encoding="utf-8")
    saved, problems = load_settings(QSettings(str(ini), QSettings.Format.IniFormat))
    assert saved == SavedSettings()
    assert problems == notes.strip().splitlines()


def test_the_example_file_on_the_page_loads_as_written(tmp_path: Path):
    example = next(b for b in _blocks("ini") if "source=demo" in b)
    # Its folder is the reader's example; a real one stands in, since the check wants it to exist.
    text = re.sub(r"(?m)^recordings_dir=.*$", f"recordings_dir={tmp_path}", example)
    ini = tmp_path / "demo.ini"
    ini.write_text(text, encoding="utf-8")
    store = QSettings(str(ini), QSettings.Format.IniFormat)
    assert set(store.allKeys()) <= set(setting_keys())
    saved, problems = load_settings(store)
    assert problems == []
    given = dict(line.split("=", 1) for line in text.splitlines()[1:] if line)
    assert {key: _ini(getattr(saved, key)) for key in given} == given
