"""The control panel: source, model, delegate and its options, throttle, top-k, threshold.

It only emits what the user asked for; the window applies it to the live session and
the panel shows back what is really running (the delegation panel), never its own guess.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QAbstractSpinBox,
    QApplication,
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QPushButton,
    QSpinBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.backends.options import BackendOptions, ComputeUnits, GpuPrecision
from app.model.spec import DEFAULT_MODEL, bundled_models
from app.pipeline import InferenceConfig
from app.sources import CameraInfo

OPEN_FILE = "__open__"
_COMBO_MIN_CHARS = 10  # combos shrink to this many characters, so the panel fits its dock without a scrollbar
_THREADS_TIP = "CPU threads for XNNPACK (and the CPU fallback)"
DEFAULT_B_MODEL = DEFAULT_MODEL
DELEGATE_LABELS = {
    "cpu": "CPU (XNNPACK)",
    "gpu": "GPU (LiteRT)",
    "coreml": "Core ML",
    "reference": "TensorFlow reference",
}


@dataclass(frozen=True)
class BSide:
    """What side B of an A/B comparison runs: a bundled name or a .tflite path, a delegate, labels."""

    model: str
    delegate: str
    labels: Path | None = None


MODEL_OWN_LABELS = "the model's own"


class LabelsChoice(QWidget):
    """A side's labels: the file chosen (the button opens another) or the model's own, and a way back to
    the model's own once a file was chosen."""

    def __init__(self, whose: str) -> None:
        super().__init__()
        self._whose = whose
        self.button = QPushButton(MODEL_OWN_LABELS)
        self.own = QToolButton()
        self.own.setText("↩ model's own")
        self.own.setToolTip(f"Back to {whose} model's own labels (its sidecar, a file beside it, or its metadata's)")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.button, 1)
        layout.addWidget(self.own)
        self.file: Path | None = None
        self.set_file(None)

    def set_file(self, path: Path | None) -> None:
        self.file = path
        self.button.setText(path.name if path else MODEL_OWN_LABELS)
        self.button.setToolTip(str(path) if path else f"Labels for {self._whose} model: click to open a labels file")
        self.own.setVisible(path is not None)


def _form(box: QGroupBox) -> QFormLayout:
    form = QFormLayout(box)
    form.setVerticalSpacing(4)  # with the panel's own spacing, the Controls fit the default window
    form.setContentsMargins(8, 4, 8, 4)
    # A narrow dock puts a field under its label instead of cutting it off or scrolling sideways.
    form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    return form


class ControlPanel(QWidget):
    source_requested = Signal(str)  # a source spec, or OPEN_FILE:video / OPEN_FILE:images
    model_requested = Signal(str)  # a bundled name or a path, or OPEN_FILE
    delegate_requested = Signal(str)
    options_changed = Signal(object)  # BackendOptions
    throttle_changed = Signal(float)
    top_k_changed = Signal(int)
    threshold_changed = Signal(float)  # 0..1
    compare_changed = Signal(object)  # None (off) or the BSide to run
    b_file_requested = Signal(str)  # "model" (Open .tflite… for B), "labels" (a labels file for B), "own-labels"
    labels_requested = Signal(str)  # side A's labels: "open" (a labels file) or "own" (back to the model's own)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setSpacing(4)
        layout.setContentsMargins(6, 4, 6, 4)
        self._unavailable: dict[str, str] = {}  # delegate -> why it cannot run here
        # Third-party models opened this session, path -> label: they stay in the Model lists after a switch.
        self._opened: dict[str, str] = {}
        self._b_model = DEFAULT_B_MODEL
        self.forms: list[QFormLayout] = []
        for build in (self._input_box, self._delegate_box, self._compare_box, self._pipeline_box):
            layout.addWidget(build())
        layout.addStretch(1)
        self._connect()
        self._show_relevant_options()
        for combo in self.findChildren(QComboBox):
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(_COMBO_MIN_CHARS)
        # Scrolling the panel must not change what runs: a wheel over an unfocused spin box or combo
        # (threads 2 -> 1 rebuilt the model mid-run) scrolls the panel instead.
        wheeled: list[QWidget] = [*self.findChildren(QAbstractSpinBox), *self.findChildren(QComboBox)]
        for widget in wheeled:
            widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
            widget.installEventFilter(self)

    def _input_box(self) -> QGroupBox:
        box = QGroupBox("Input and model")
        form = _form(box)
        self.source = QComboBox()
        self.source.setToolTip("Where frames come from")
        form.addRow("Source", self.source)
        self.model = QComboBox()
        form.addRow("Model", self.model)
        self.labels = LabelsChoice("A's")
        form.addRow("Labels", self.labels)
        self.forms.append(form)
        return box

    def _delegate_box(self) -> QGroupBox:
        box = QGroupBox("Delegate")
        form = _form(box)
        self.delegate = QComboBox()
        for name, label in DELEGATE_LABELS.items():
            self.delegate.addItem(label, name)
        form.addRow("Run on", self.delegate)
        self.threads = QSpinBox()
        self.threads.setRange(1, max(1, os.cpu_count() or 1) * 2)
        self.threads.setToolTip(_THREADS_TIP)
        self.threads.valueChanged.connect(self._flag_oversubscription)
        form.addRow("Threads", self.threads)
        self.precision = QComboBox()
        self.precision.addItems(list(GpuPrecision))
        self.precision.setToolTip("GPU: fp16 allowed (faster) or fp32 enforced")
        form.addRow("GPU precision", self.precision)
        self.allow_software = QCheckBox("Allow a software GPU")
        self.allow_software.setToolTip("Run on llvmpipe / SwiftShader ('GPU' work done by the CPU), flagged as such")
        form.addRow("", self.allow_software)
        self.units = QComboBox()
        self.units.addItems(list(ComputeUnits))
        self.units.setToolTip("Core ML compute units")
        form.addRow("Core ML units", self.units)
        self._delegate_form = form
        self.forms.append(form)
        return box

    def _compare_box(self) -> QGroupBox:
        box = QGroupBox("Compare A/B")
        form = _form(box)
        self.compare = QCheckBox("Run B on the same frames")
        self.compare.setToolTip("A is the model and delegate above; B runs next to it on every frame it can")
        form.addRow("", self.compare)
        self.b_model = QComboBox()
        self.b_model.setToolTip("B's model: a bundled one, or Open .tflite… for any model")
        self._fill_models(self.b_model, DEFAULT_B_MODEL)
        form.addRow("B model", self.b_model)
        self.b_labels_choice = LabelsChoice("B's")
        self.b_labels = self.b_labels_choice.button
        form.addRow("B labels", self.b_labels_choice)
        self.b_delegate = QComboBox()
        for name, label in DELEGATE_LABELS.items():
            self.b_delegate.addItem(label, name)
        form.addRow("B runs on", self.b_delegate)
        self._compare_form = form
        self.forms.append(form)
        return box

    def _pipeline_box(self) -> QGroupBox:
        box = QGroupBox("Pipeline")
        form = _form(box)
        self.throttle = QSpinBox()
        self.throttle.setRange(0, 10_000)
        self.throttle.setSuffix(" ms")
        self.throttle.setToolTip(
            "Delay between inference starts (the iOS sample's delayBetweenInferencesMs); 0 = flat out"
        )
        form.addRow("Throttle", self.throttle)
        self.top_k = QSpinBox()
        self.top_k.setRange(1, 10)
        form.addRow("Top-k", self.top_k)
        self.threshold = QDoubleSpinBox()
        self.threshold.setRange(0.0, 100.0)
        self.threshold.setDecimals(0)
        self.threshold.setSuffix(" %")
        self.threshold.setToolTip(
            "Detections below this score are counted, not kept (the decoder's threshold); a classifier's top-k "
            "is listed whole, as predict and bench print it"
        )
        form.addRow("Score threshold", self.threshold)
        self.forms.append(form)
        return box

    def _connect(self) -> None:
        """Each control to the signal the window listens to."""
        self.source.activated.connect(self._source_activated)
        self.model.activated.connect(self._model_activated)
        self.delegate.activated.connect(lambda _: self.delegate_requested.emit(self.delegate.currentData()))
        self.delegate.currentIndexChanged.connect(lambda _: self._show_relevant_options())
        for signal in (
            self.threads.valueChanged,
            self.precision.currentIndexChanged,
            self.allow_software.toggled,
            self.units.currentIndexChanged,
        ):
            signal.connect(lambda *_: self.options_changed.emit(self.options()))
        self.throttle.valueChanged.connect(lambda v: self.throttle_changed.emit(float(v)))
        self.top_k.valueChanged.connect(self.top_k_changed.emit)
        self.threshold.valueChanged.connect(lambda v: self.threshold_changed.emit(v / 100.0))
        self.compare.toggled.connect(lambda _: self._compare_changed())
        self.b_model.activated.connect(self._b_model_activated)
        self.b_labels.clicked.connect(lambda: self.b_file_requested.emit("labels"))
        self.b_labels_choice.own.clicked.connect(lambda: self.b_file_requested.emit("own-labels"))
        self.labels.button.clicked.connect(lambda: self.labels_requested.emit("open"))
        self.labels.own.clicked.connect(lambda: self.labels_requested.emit("own"))
        self.b_delegate.activated.connect(lambda _: self._compare_changed())
        self.model.currentIndexChanged.connect(lambda _: self.model.setToolTip(self.model.currentText()))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Wheel and isinstance(watched, QWidget) and not watched.hasFocus():
            area = self._scroll_area()
            if area is not None:
                QApplication.sendEvent(area.viewport(), event)
            return True  # not delivered to the control
        return super().eventFilter(watched, event)

    def _scroll_area(self) -> QAbstractScrollArea | None:
        parent = self.parentWidget()
        while parent is not None and not isinstance(parent, QAbstractScrollArea):
            parent = parent.parentWidget()
        return parent

    def _flag_oversubscription(self, threads: int) -> None:
        """More threads than cores is allowed (a benchmark may want it) but never silent."""
        cores = os.cpu_count() or 1
        over = threads > cores
        self.threads.setStyleSheet("color: #b71c1c" if over else "")
        self.threads.setToolTip(
            f"{threads} threads on {cores} cores: XNNPACK's threads will share cores and wait for each other"
            if over
            else _THREADS_TIP
        )

    def _compare_changed(self) -> None:
        on = self.compare.isChecked()
        self._show_relevant_options()
        self.compare_changed.emit(self.b_side() if on else None)

    def b_side(self) -> BSide:
        """What B would run, as chosen in the panel."""
        return BSide(self.b_model.currentData(), self.b_delegate.currentData(), self.b_labels_choice.file)

    def _b_model_activated(self, index: int) -> None:
        if self.b_model.itemData(index) == OPEN_FILE:
            # The box shows B's model until the dialog picks another (cancelling changes nothing).
            self._fill_models(self.b_model, self._b_model)
            self.b_file_requested.emit("model")
            return
        self._b_model = self.b_model.itemData(index)
        self.set_b_labels(None)  # a labels file belongs to the model it was chosen for
        self._compare_changed()

    def add_b_model(self, path: str, label: str) -> None:
        """A third-party model opened for B: listed (in both Model lists) and chosen; emits nothing."""
        self._opened[path] = label
        current_a = self.model.currentData()
        self._fill_models(self.model, current_a)
        self._fill_models(self.b_model, path)
        self._b_model = path
        self.set_b_labels(None)

    def set_b_labels(self, path: Path | None) -> None:
        self.b_labels_choice.set_file(path)

    def set_labels(self, path: Path | None) -> None:
        """Side A's labels: the file the running model reads them from, or None (the model's own)."""
        self.labels.set_file(path)

    # ---- filling -------------------------------------------------------------------------

    def show_sources(self, cameras: list[CameraInfo], current: str) -> None:
        """The cameras found, the built-in sources and `current`; then "Video file…", "Image folder…"
        and "Network stream…"."""
        entries = [(f"Camera {c.index}" + (f": {c.name}" if c.name else ""), c.spec) for c in cameras]
        entries += [("Demo clip", "demo"), ("Synthetic pattern", "synthetic")]
        self.source.blockSignals(True)
        self.source.clear()
        for label, spec in entries:
            self.source.addItem(label, spec)
        if self.source.findData(current) < 0:
            self.source.addItem(current, current)
        self.source.insertSeparator(self.source.count())
        self.source.addItem("Video file…", f"{OPEN_FILE}:video")
        self.source.addItem("Image folder…", f"{OPEN_FILE}:images")
        self.source.addItem("Network stream…", f"{OPEN_FILE}:stream")
        self.source.setCurrentIndex(self.source.findData(current))
        self.source.blockSignals(False)

    def set_models(self, current: str, label: str | None = None) -> None:
        """Side A's Model list, `current` chosen; a third-party model stays listed for the session."""
        if current not in bundled_models():
            self._opened[current] = label or self._opened.get(current) or Path(current).name
        self._fill_models(self.model, current)
        self._fill_models(self.b_model, self._b_model)

    def _fill_models(self, combo: QComboBox, current: str) -> None:
        combo.blockSignals(True)
        combo.clear()
        for name in bundled_models():
            combo.addItem(name, name)
        for path, label in self._opened.items():
            combo.addItem(label, path)
            combo.setItemData(combo.count() - 1, path, Qt.ItemDataRole.ToolTipRole)
        if combo.findData(current) < 0 and current != OPEN_FILE:
            combo.addItem(Path(current).name, current)
        combo.insertSeparator(combo.count())
        combo.addItem("Open .tflite…", OPEN_FILE)
        combo.setCurrentIndex(max(0, combo.findData(current)))
        combo.setToolTip(combo.currentText())
        combo.blockSignals(False)

    def set_delegate_availability(self, reasons: dict[str, str | None]) -> None:
        """Mark the delegates that cannot run here "(not here)", with the reason as tooltip.

        They stay selectable: choosing one shows what happens (the fallback, and for Core ML what
        the TFLite delegate would take on a Mac) instead of hiding it behind a grey entry."""
        self._unavailable = {name: reason for name, reason in reasons.items() if reason}
        for combo in (self.delegate, self.b_delegate):
            for row in range(combo.count()):
                name = combo.itemData(row)
                reason = reasons.get(name)
                combo.setItemText(row, DELEGATE_LABELS[name] + (" (not here)" if reason else ""))
                tip = f"{DELEGATE_LABELS[name]} is available here"
                if reason:
                    tip = f"Not available here: {reason}. Choosing it falls back to the CPU and says why"
                    if name == "coreml":
                        tip += "; the panel shows what the TFLite Core ML delegate would take on a Mac"
                combo.setItemData(row, tip, Qt.ItemDataRole.ToolTipRole)

    def delegate_available(self, name: str) -> bool:
        return name not in self._unavailable

    def show_delegate(self, name: str) -> None:
        self.delegate.blockSignals(True)
        self.delegate.setCurrentIndex(self.delegate.findData(name))
        self.delegate.blockSignals(False)
        self._show_relevant_options()

    def show_config(self, config: InferenceConfig, threshold: float) -> None:
        """Show what side A runs (and the overlay's threshold, 0..1) without emitting a change."""
        self.set_models(str(config.model), Path(str(config.model)).name)
        self.show_delegate(config.delegate)
        self.set_labels(config.labels)
        widgets = (self.threads, self.precision, self.allow_software, self.units, self.throttle, self.top_k,
                   self.threshold)  # fmt: skip
        for widget in widgets:
            widget.blockSignals(True)
        self.threads.setValue(config.options.cpu_threads)
        self.precision.setCurrentText(config.options.precision)
        self.allow_software.setChecked(config.options.allow_software)
        self.units.setCurrentText(config.options.compute_units)
        self.throttle.setValue(int(config.throttle_ms))
        self.top_k.setValue(config.top_k)
        self.threshold.setValue(threshold * 100)
        for widget in widgets:
            widget.blockSignals(False)

    def show_compare(self, b: BSide | None) -> None:
        """Show the A/B comparison that runs (B's side, or None); emits nothing."""
        widgets = (self.compare, self.b_model, self.b_delegate)
        for widget in widgets:
            widget.blockSignals(True)
        self.compare.setChecked(b is not None)
        if b is not None:
            if b.model not in bundled_models() and b.model not in self._opened:
                self._opened[b.model] = Path(b.model).name
            self._fill_models(self.b_model, b.model)
            self._b_model = b.model
            self.b_delegate.setCurrentIndex(self.b_delegate.findData(b.delegate))
            self.set_b_labels(b.labels)
        for widget in widgets:
            widget.blockSignals(False)
        self._show_relevant_options()

    def allows_software_gpu(self) -> bool:
        return self.allow_software.isChecked()

    def options(self) -> BackendOptions:
        return BackendOptions(
            threads=self.threads.value(),
            precision=self.precision.currentText(),
            allow_software=self.allow_software.isChecked(),
            compute_units=self.units.currentText(),
        )

    # ---- internals -----------------------------------------------------------------------

    def _show_relevant_options(self) -> None:
        """Only the options that apply are shown, so the panel fits its dock at the default size."""
        name = self.delegate.currentData()
        self.precision.setEnabled(name == "gpu")
        self.units.setEnabled(name == "coreml")
        for widget, shown in ((self.precision, name == "gpu"), (self.allow_software, name == "gpu"),
                              (self.units, name == "coreml")):  # fmt: skip
            self._delegate_form.setRowVisible(widget, shown)
        on = self.compare.isChecked()
        for b_widget in (self.b_model, self.b_labels_choice, self.b_delegate):
            self._compare_form.setRowVisible(b_widget, on)

    def _source_activated(self, index: int) -> None:
        self.source_requested.emit(self.source.itemData(index))

    def _model_activated(self, index: int) -> None:
        self.model_requested.emit(self.model.itemData(index))
