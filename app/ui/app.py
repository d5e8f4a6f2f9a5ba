"""Start the window: check the display and the inputs first (bad ones are one line and an exit
code, as in every command), then run the Qt event loop."""

from __future__ import annotations

import os
import sys
import traceback
from types import TracebackType
from typing import TYPE_CHECKING

from app.errors import UsageError
from app.model.spec import load_model_spec
from app.pipeline import InferenceConfig
from app.sources import parse_source_spec
from app.system.heap import limit_arenas
from app.system.paths import error_log

if TYPE_CHECKING:
    from PySide6.QtWidgets import QApplication

ORGANISATION, APPLICATION = "DelegateScope", "Delegate Scope"
# When the GUI thread runs Python (plots, overlay) at the moment an inference ends, the
# inference thread waits up to CPython's switch interval for the GIL: 5 ms by default, a whole
# int8 inference here. python -m benchmarks.investigations.switch_interval --spinner: 22 inferences/s at 5 ms,
# 107/s at 0.5 ms; without such a thread the two intervals measured the same (docs/performance.md).
GUI_SWITCH_INTERVAL_S = 0.0005
# Every switch in the window replaces worker threads; capped, they share arenas instead of each
# keeping its own free memory (app.system.heap.limit_arenas; docs/reliability.md, "The window for an hour").
GUI_MALLOC_ARENAS = 2


def check_display() -> None:
    """Qt aborts the process when it cannot reach a display; say so plainly instead."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return
    if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        raise UsageError(
            "no display to open the window on (DISPLAY is not set): run it under `xvfb-run -a`, "
            "set QT_QPA_PLATFORM=offscreen for a scripted run, or use `bench` headless"
        )


def run_gui(options: object) -> int:
    from app.ui.main_window import MainWindow
    from app.ui.settings import window_state
    from app.ui.window_config import GuiOptions

    assert isinstance(options, GuiOptions)
    check_display()
    if options.source:
        parse_source_spec(options.source)  # SourceError (exit 6) before any window appears
    if options.model:
        load_model_spec(options.model)  # ModelError (exit 3)
    if options.compare_labels is not None and not options.compare_labels.is_file():
        raise UsageError(f"--compare-labels: no such file: {options.compare_labels}")
    if options.compare_model or options.compare_labels:  # B's model and labels: exit 3 before any window
        load_model_spec(options.compare_model or options.model or InferenceConfig.model, options.compare_labels)
    for path in (options.screenshot, options.stats_file):
        if path is not None and not path.parent.is_dir():
            raise UsageError(f"folder does not exist: {path.parent}")

    from PySide6.QtCore import QCoreApplication, QSettings

    QCoreApplication.setOrganizationName(ORGANISATION)
    QCoreApplication.setApplicationName(APPLICATION)
    app = application()
    if options.settings_file:
        settings = QSettings(str(options.settings_file), QSettings.Format.IniFormat)
    else:
        settings = QSettings()
    window = MainWindow(options, settings)
    _install_excepthook(window)
    window.restore_layout(*window_state(settings))
    window.show()
    code = app.exec()
    if window.exit_code:  # a scripted run says what stopped it, as bench does
        print(f"delegate-scope: error: {window.exit_message}", file=sys.stderr)
        return window.exit_code
    return code


def application() -> QApplication:
    """The QApplication, with the process-wide settings the window wants, set before any
    worker thread starts."""
    from PySide6.QtWidgets import QApplication  # here, as in run_gui: bad inputs fail before Qt loads

    sys.setswitchinterval(GUI_SWITCH_INTERVAL_S)
    limit_arenas(GUI_MALLOC_ARENAS)
    app = QApplication.instance()
    if app is None:
        app = QApplication([])
    assert isinstance(app, QApplication)
    return app


def _install_excepthook(window: object) -> None:
    """An unexpected error in a Qt callback: full traceback to a log file, one line to the user."""
    log = error_log()

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        try:
            with open(log, "a", encoding="utf-8") as f:
                f.write("".join(traceback.format_exception(kind, exc, tb)))
        except OSError:
            pass
        show = getattr(window, "show_error", None)
        if show is not None:
            show("Internal error", f"{kind.__name__}: {exc} (details in {log})")

    sys.excepthook = hook
