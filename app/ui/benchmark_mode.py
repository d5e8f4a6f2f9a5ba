"""The window's unpaced mode: files read as fast as inference takes them, so the FPS plot shows what
each delegate can do instead of the source's 30 fps. A benchmark mode, not a way to watch video, so
it is labelled as one wherever a rate is shown: the video badge and the status bar. Never saved in
the settings: the next start is paced again."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLabel, QStatusBar

from app.sources import LIVE_KINDS, kind_of

BADGE = "UNPACED BENCHMARK"
_STYLE = "color: white; background: #b35900; font-weight: bold; padding: 1px 6px; border-radius: 3px"


class UnpacedMode:
    def __init__(
        self,
        parent: QObject,
        status_bar: QStatusBar,
        *,
        set_pace: Callable[[bool], object],
        source: Callable[[], str],
        add_marker: Callable[[str], object],
    ) -> None:
        """`set_pace(paced)` restarts the pipeline paced or not; `source()` is the source running now;
        `add_marker(text)` marks the switch on the plots."""
        self._set_pace, self._source, self._add_marker = set_pace, source, add_marker
        self.action = QAction("&Unpaced: as fast as possible (benchmark)", parent)
        self.action.setCheckable(True)
        self.action.setToolTip(
            "Benchmark mode: read the video or images as fast as inference takes them (not at the file's frame "
            "rate), so the FPS plot shows each delegate's real rate. Cameras and streams deliver at their own rate."
        )
        self.action.toggled.connect(self.set_unpaced)
        self.label = QLabel("")
        self.label.setStyleSheet(_STYLE)
        self.label.setVisible(False)
        status_bar.addPermanentWidget(self.label)

    @property
    def unpaced(self) -> bool:
        return self.action.isChecked()

    def set_unpaced(self, on: bool) -> None:
        if self.action.isChecked() != on:
            self.action.setChecked(on)  # toggled() comes back here once
            return
        self._set_pace(not on)
        self._add_marker("unpaced (benchmark)" if on else "paced")
        self.refresh()

    def refresh(self) -> None:
        """The status bar's label, for the mode and the source now running."""
        self.label.setVisible(self.unpaced)
        if not self.unpaced:
            return
        text = f"{BADGE}: frames as fast as inference takes them, not real time"
        if self._live_source():
            text = f"{BADGE} (no effect: a camera or stream delivers at its own rate)"
        self.label.setText(text)
        self.label.setToolTip(self.action.toolTip())

    def badge(self) -> str:
        """What the video badge adds after the backend's name (the stats tick asks 5 times a second,
        and the status bar's label is brought in step with the source running now)."""
        self.refresh()
        return " · UNPACED" if self.unpaced else ""

    def _live_source(self) -> bool:
        return kind_of(self._source()) in LIVE_KINDS
