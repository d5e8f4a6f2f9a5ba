"""The questions the window asks the user (file, folder and stream dialogs) and the About box.
Each returns what was chosen, or None when the user cancelled."""

from __future__ import annotations

import platform
from pathlib import Path

import PySide6
from PySide6.QtCore import QStandardPaths, Qt, qVersion
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMessageBox, QWidget

from app.recording.writer import package_versions
from app.sources import parse_source_spec
from app.system.version import summary, version


def ask_source(parent: QWidget, kind: str) -> str | None:
    """The source spec a dialog yields for "Video file…" (video), "Image folder…" (images) or
    "Network stream…" (stream); SourceError for a stream URL that is refused."""
    if kind == "video":
        path, _ = QFileDialog.getOpenFileName(
            parent, "Open video", "", "Videos (*.mp4 *.avi *.mov *.mkv *.webm);;All files (*)"
        )
        return f"video:{path}" if path else None
    if kind == "images":
        path = QFileDialog.getExistingDirectory(parent, "Open image folder")
        return f"images:{path}" if path else None
    url, ok = QInputDialog.getText(
        parent, "Open network stream", "URL of the camera or stream (rtsp://, http://, tcp://, udp://, …):"
    )
    if not ok or not url.strip():
        return None
    spec = f"stream:{url.strip()}"
    parse_source_spec(spec)
    return spec


def ask_model(parent: QWidget) -> str | None:
    path, _ = QFileDialog.getOpenFileName(parent, "Open TFLite model", "", "TFLite models (*.tflite);;All files (*)")
    return path or None


def ask_labels(parent: QWidget) -> Path | None:
    path, _ = QFileDialog.getOpenFileName(parent, "Open labels", "", "Labels (*.txt);;All files (*)")
    return Path(path) if path else None


def ask_recording(parent: QWidget, folder: str) -> Path | None:
    path, _ = QFileDialog.getOpenFileName(parent, "Review a recording", folder, "Recordings (*.csv);;All files (*)")
    return Path(path) if path else None


def ask_recordings_dir(parent: QWidget, folder: str) -> str | None:
    # Start where recordings go now (not the process's working directory).
    return QFileDialog.getExistingDirectory(parent, "Recordings folder", folder) or None


def ask_screenshot_path(parent: QWidget) -> str | None:
    path, _ = QFileDialog.getSaveFileName(parent, "Save screenshot", "delegate-scope.png", "PNG (*.png)")
    return path or None


def default_recordings_dir() -> str:
    docs = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation) or str(Path.home())
    return str(Path(docs) / "Delegate Scope")


def about_lines() -> list[str]:
    """The About box: name, version and purpose (both from the installed metadata), then what it runs on."""
    versions = package_versions()
    lines = [f"<b>Delegate Scope {version()}</b>", summary(), ""]
    lines.append(f"LiteRT (ai-edge-litert) {versions.get('ai-edge-litert', 'not installed')}")
    lines.append(f"Qt {qVersion()}, PySide6 {PySide6.__version__}")
    lines.append(f"Python {platform.python_version()} ({platform.python_implementation()})")
    shown = ("ai-edge-litert", "PySide6-Essentials")
    lines += [f"{name} {number}" for name, number in versions.items() if number and name not in shown]
    return lines


def show_about(parent: QWidget) -> QMessageBox:
    """Help → About, its text selectable (versions go into bug reports); not modal, so it never blocks a run."""
    box = QMessageBox(QMessageBox.Icon.NoIcon, "About Delegate Scope", "<br>".join(about_lines()), parent=parent)
    box.setTextFormat(Qt.TextFormat.RichText)
    box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    box.setModal(False)
    box.show()
    return box
