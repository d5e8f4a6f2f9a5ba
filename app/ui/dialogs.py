"""The questions the window asks the user (file, folder and stream dialogs) and the About box.
Each returns what was chosen, or None when the user cancelled."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QStandardPaths
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMessageBox, QWidget

from app import __version__
from app.recording.writer import package_versions
from app.sources import parse_source_spec


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


def show_about(parent: QWidget) -> None:
    versions = package_versions()
    lines = [f"<b>Delegate Scope {__version__}</b>", "See where and how fast a TFLite model really runs.", ""]
    lines += [f"{name} {version}" for name, version in versions.items() if version]
    QMessageBox.about(parent, "About Delegate Scope", "<br>".join(lines))
