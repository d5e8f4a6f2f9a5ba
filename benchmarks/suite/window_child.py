"""The real window for benchmarks/suite/window.py: W x H, recording to CSV from the start, writing its
--stats figures, closing itself after SECONDS.

Run by path with `-P` (its own folder not on the import path), PYTHONPATH naming the checkout whose
app runs: this one, or another one to see what a change to the window did.

    PYTHONPATH=CHECKOUT python -P benchmarks/suite/window_child.py W H SECONDS THREADS CSV STATS
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from PySide6.QtCore import QCoreApplication, QSettings

from app.ui.app import application
from app.ui.main_window import GuiOptions, MainWindow


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, kind in (("width", int), ("height", int), ("seconds", float), ("threads", int), ("csv", Path),
                       ("stats", Path)):  # fmt: skip
        parser.add_argument(name, type=kind)
    args = parser.parse_args(argv)
    width, height, record = args.width, args.height, args.csv
    QCoreApplication.setApplicationName("Delegate Scope observer-effect benchmark")
    app = application()
    settings = QSettings(str(record.with_suffix(".ini")), QSettings.Format.IniFormat)
    options = GuiOptions(source="demo", threads=args.threads, record=record, exit_after=args.seconds,
                         stats_file=args.stats, dialogs=False, save_settings=False)  # fmt: skip
    window = MainWindow(options, settings)
    window.resize(width, height)
    window.show()
    app.exec()
    if window.size().width() != width or window.size().height() != height:
        sys.exit(f"the window was {window.size().width()}x{window.size().height()}, not {width}x{height}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
