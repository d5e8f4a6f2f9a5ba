"""The delegation panel: what really runs, as the runtime reported it, and what the CPU time says."""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QGraphicsOpacityEffect, QLabel, QSizePolicy, QVBoxLayout, QWidget

from app.backends.base import CoreMLMode, DelegationReport
from app.backends.describe import (
    BUILT_IN_KERNELS,
    coreml_prediction_sentence,
    delegation_panel_facts,
    init_footprint_text,
    megabytes,
    offload_sentence,
    report_backend_words,
)
from app.coverage import Coverage
from app.coverage.text import left_on_cpu_lines
from app.metrics.bottleneck import Bottleneck
from app.metrics.memory import MemoryDelta
from app.metrics.window import MetricsSnapshot
from app.ui.views.coverage import BUILT_IN_COLOUR, CoverageStrip

_COLOURS = {"ok": "#1b5e20", "info": "#555555", "warn": "#b71c1c"}
_PIECES_SHOWN = 5  # pieces named in the panel's line; the tooltip lists them all


class DelegationPanel(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        # While a session opens (the TensorFlow reference takes seconds): what is starting and for how long;
        # the facts below are the previous session's, greyed, until the new one's open event.
        self.opening = QLabel("")
        self.opening.setWordWrap(True)
        self.opening.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.opening.setStyleSheet("background: #fff3cd; color: #5d4200; padding: 4px")
        self.opening.setVisible(False)
        layout.addWidget(self.opening)
        self.facts = QLabel("No model open yet.")
        self.coverage = QLabel("")
        self.pieces = QLabel("")  # Core ML requested: the pieces a Mac runs the model in (app/coreml_mil/split.py)
        self.strip = CoverageStrip()
        self.legend = QLabel("")
        self.left_on_cpu = QLabel("")
        self.offload = QLabel("")
        self.bound = QLabel("")  # which stage sets the rate (app/metrics/bottleneck.py)
        self.memory = QLabel("")  # each side's init footprint and the process's resident set now
        self.memory.setToolTip(
            "init: what opening the session (its first inference included) added to the process's resident set, "
            "measured around the open in this process: what the window's other threads allocated meanwhile "
            "counts too (bench measures it where nothing else runs: docs/guide.md, Memory)"
        )
        self.switch = QLabel("")
        # Offload and Rate, the live readings, come right under the node strip: at 1280×860 they were below the
        # facts table and out of view; Core ML's pieces, the nodes its delegate leaves and the facts follow.
        labels = (self.coverage, self.strip, self.legend, self.offload, self.bound, self.memory, self.pieces,
                  self.left_on_cpu, self.facts)  # fmt: skip
        for label in (*labels, self.switch):
            if isinstance(label, QLabel):
                label.setWordWrap(True)
                # Wrap to the dock's width instead of widening the panel past it (the strip must stay in view).
                label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
                label.setTextFormat(Qt.TextFormat.RichText)
                label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            layout.addWidget(label)
        self.strip.setVisible(False)
        layout.addStretch(1)
        self._old = [*labels, self.switch]  # greyed while a new session opens
        self.report: DelegationReport | None = None
        self.report_b: DelegationReport | None = None  # side B's, while A/B runs
        self._a: tuple[str, str, tuple[str, ...]] = ("", "", ())  # A's model label, labels, label warnings
        self._b: tuple[str, str] = ("", "")  # B's model label, labels
        self._tasks = ("", "")  # each side's task and its evidence ("detection (metadata: ...)")

    def set_report(
        self,
        report: DelegationReport | None,
        model_label: str = "",
        labels: str = "",
        label_warnings: Sequence[str] = (),
    ) -> None:
        self.report = report
        self._a = (model_label, labels, tuple(label_warnings))
        if report is None:
            self.facts.setText("No model open yet.")
            return
        self._show_facts()
        self._show_coverage(report)

    def set_failure(self, text: str) -> None:
        """No session opened (the runtime refused the model): why, where the facts would be."""
        if self.report is None:
            self.facts.setText(f"<span style='color:{_COLOURS['warn']}'>{html.escape(text)}</span>")

    def set_report_b(
        self, report: DelegationReport | None, model_label: str = "", labels: str = "", task: str = ""
    ) -> None:
        """Side B's facts beside A's while A/B runs (None: A alone again)."""
        if (report, model_label, labels, task) == (self.report_b, *self._b, self._tasks[1]):
            return
        self.report_b, self._b, self._tasks = report, (model_label, labels), (self._tasks[0], task)
        if self.report is not None:
            self._show_facts()

    def set_task(self, task: str) -> None:
        """Side A's task and why the app reads the model that way (shown from the next report on)."""
        self._tasks = (task, self._tasks[1])
        if self.report is not None:
            self._show_facts()

    def _show_facts(self) -> None:
        """A's facts, and B's in a second column while comparing (rows matched by name)."""
        assert self.report is not None
        model_label, labels, label_warnings = self._a
        columns = [_facts(self.report, model_label, labels, label_warnings, self._tasks[0])]
        if self.report_b is not None:
            columns.append(_facts(self.report_b, *self._b, (), self._tasks[1]))
        names = list(dict.fromkeys(name for column in columns for name in column))
        rows = []
        if len(columns) > 1:
            rows.append("<tr><td></td><td><b>A</b></td><td><b>B</b></td></tr>")
        for name in names:
            # &nbsp;: a name never wraps ("Nodes / delegated" read as two rows); the value column wraps instead.
            cells = [
                f"<td valign='top' style='padding-right:6px'><b>{html.escape(name).replace(' ', '&nbsp;')}</b></td>"
            ]
            values = [column.get(name, ("", "info")) for column in columns]
            if len(values) > 1 and values[0][0] and values[0] == values[1]:
                values = values[:1]  # the same on both sides: said once, across both columns (more room)
            span = " colspan='2'" if len(values) < len(columns) else ""
            both = f"<span style='color:{_COLOURS['info']}'>both: </span>" if span else ""
            for value, level in values:
                style = f"color:{_COLOURS[level]}; padding-right:6px"
                # Breakable everywhere: a long model or file name cut the value at the dock's edge.
                cells.append(f"<td valign='top'{span} style='{style}'>{both}{_breakable(value)}</td>")
            rows.append("<tr>" + "".join(cells) + "</tr>")
        width = " width='100%'" if len(columns) > 1 else ""  # two sides share the dock's width
        self.facts.setText(f"<table cellspacing='2'{width}>" + "".join(rows) + "</table>")

    def _show_coverage(self, report: DelegationReport) -> None:
        """The node strip (what runs where, node by node) and, when Core ML was asked for, what the
        TFLite Core ML delegate would take, with the nodes it would leave on the CPU and why."""
        rows = []
        if report.coverage is not None:
            rows.append((f"Runs now: {report_backend_words(report)}", report.coverage))
        parts, left_parts = [], []
        sentence = coreml_prediction_sentence(report)
        if sentence and report.predicted is not None:
            rows.append(("Core ML (predicted)", report.predicted))
            parts.append(f"<b>{html.escape(sentence)}</b>")
            if report.predicted.log:
                parts.append(f"<span style='color:{_COLOURS['info']}'>Its log would say: "
                             f"<tt>{html.escape(report.predicted.log)}</tt></span>")  # fmt: skip
            left = left_on_cpu_lines(report.predicted)
            if left:
                left_parts.append("Left on the CPU by the Core ML delegate:<br>" + "<br>".join(
                    f"&nbsp;• {html.escape(line)}" for line in left))  # fmt: skip
        self.coverage.setText("<br>".join(parts))
        self.coverage.setVisible(bool(parts))
        self._show_pieces(report)
        self.left_on_cpu.setText("<br>".join(left_parts))
        self.left_on_cpu.setVisible(bool(left_parts))
        self.strip.set_rows(rows)
        self.legend.setText(_legend(self.strip.rows) if self.strip.rows else "")

    def _show_pieces(self, report: DelegationReport) -> None:
        """The pieces Core ML runs the model in, one compact line as `inspect` prints it (at most
        _PIECES_SHOWN named; all of them, one per line, in the tooltip); when this session ran them (the
        partitioned Core ML session on a Mac), each piece's time in the first inference."""
        plan = report.coreml_pieces
        if report.requested != "coreml" or plan is None or not (plan.runs_core_ml or plan.not_split):
            self.pieces.setText("")
            self.pieces.setToolTip("")
            self.pieces.setVisible(False)
            return
        ran = report.used == "coreml" and report.coreml_mode is CoreMLMode.PARTITIONED
        where = "" if ran else "on a Mac"
        # inspect's sentence, its headline in bold: "Core ML on a Mac runs it in 3 pieces: Core ML nodes 0–57 → …"
        headline, _, rest = plan.sentence(where, limit=_PIECES_SHOWN).partition(": ")
        line = f"<b>{html.escape(headline)}</b>: {_unbroken(rest)}"
        if len(plan.pieces) > _PIECES_SHOWN:
            line += f" <span style='color:{_COLOURS['info']}'>(hover for all)</span>"
        parts = [line]
        tip = [f"{plan.headline(where)}, in order:"] if plan.pieces else [plan.sentence(where)]
        for position, piece in enumerate(plan.pieces):
            timed = f": {plan.piece_time(position)}" if ran else ""
            tip.append(f"{position + 1}. {piece.text(max_ops=None)}{timed}")
        if ran and plan.pieces:
            times = " → ".join(plan.piece_time(i) for i in range(len(plan.pieces)))
            if plan.first_inference_ms is None:
                times = "not reported"
            parts.append(f"<span style='color:{_COLOURS['info']}'>First inference, per piece: {_unbroken(times)}"
                         "</span>")  # fmt: skip
            tip.append("(times: the first inference, piece by piece)")
        self.pieces.setText("<br>".join(parts))
        self.pieces.setToolTip("\n".join(tip))
        self.pieces.setVisible(True)

    def set_opening(self, text: str | None) -> None:
        """A session is opening (`text` says what, for how long): the facts shown are marked as the previous
        session's and greyed. None: it opened (or failed); the facts are current again."""
        if text is None:
            if self.opening.isVisible():
                self.opening.setVisible(False)
                self.opening.setText("")
                for widget in self._old:
                    widget.setGraphicsEffect(None)  # type: ignore[arg-type]  # None removes the effect (Qt docs); the stubs omit it
            return
        old = "; below, the previous session's facts until it opens" if self.report is not None else ""
        self.opening.setText(f"<b>{html.escape(text)}</b>{old}")
        if not self.opening.isVisible():
            self.opening.setVisible(True)
            for widget in self._old:
                effect = QGraphicsOpacityEffect(widget)
                effect.setOpacity(0.35)
                widget.setGraphicsEffect(effect)

    @property
    def greyed(self) -> bool:
        """The facts shown are the previous session's, greyed (tests)."""
        return self.opening.isVisible() and all(w.graphicsEffect() is not None for w in self._old)

    def set_memory(self, a: MemoryDelta | None, b: MemoryDelta | None = None, rss_mb: float | None = None) -> None:
        """The Memory line: what opening each side's session added to the resident set (A/B: both sides'),
        and the process's resident set now (both sides run in it; a GPU process's child counts)."""
        parts = []
        if a is not None:
            parts.append(("A " if b is not None else "") + init_footprint_text(a))
        if b is not None:
            parts.append("B " + init_footprint_text(b))
        if rss_mb is not None:
            parts.append(f"the process's resident set now {megabytes(rss_mb)}")
        text = f"<b>Memory</b>: {html.escape('; '.join(parts))}" if parts else ""
        if text != self.memory.text():
            self.memory.setText(text)

    def set_switch_cost(self, text: str) -> None:
        self.switch.setText(f"<i>{html.escape(text)}</i>" if text else "")

    def set_metrics(
        self, snap: MetricsSnapshot, backend: str, shared: bool = False, bottleneck: Bottleneck | None = None
    ) -> None:
        stats = snap.latency.get("inference")
        if not stats or not stats.count:
            self.offload.setText("")
            self.bound.setText("")
            return
        sentence = offload_sentence(
            snap.cpu_per_wall,
            backend,
            snap.cpu_ms_per_inference,
            stats.mean,
            snap.system_cpu_pct,
            waited_ms=snap.waited_ms_per_inference,
            slept_ms=snap.slept_ms_per_inference,
        )
        if snap.gpu_busy_ms_per_inference:  # the GPU's own evidence: a waiting thread may spin
            sentence += f" NVML: the GPU itself was busy {snap.gpu_busy_ms_per_inference:.2f} ms per inference."
        if shared:  # A/B: the CPU figure is this side's threads, and the two sides queue for cores
            sentence += " (A/B running: two sides share the CPU, so wall time includes waiting for a core.)"
        self.offload.setText(f"<b>Offload</b>: {html.escape(sentence)}")
        self.bound.setText(f"<b>Rate</b>: {html.escape(bottleneck.sentence)}" if bottleneck else "")

    def text(self) -> str:
        """Everything shown, as plain text (tests and the clipboard)."""
        doc = QTextDocument()
        widgets = (self.opening, self.coverage, self.pieces, self.left_on_cpu, self.facts, self.offload, self.bound,
                   self.memory, self.switch)  # fmt: skip
        doc.setHtml("<br>".join(w.text() for w in widgets))
        # The names' non-breaking spaces read as spaces; the values' break opportunities as nothing.
        return doc.toPlainText().replace("\xa0", " ").replace(_BREAK, "").replace(_JOIN, "")


def _facts(
    report: DelegationReport, model_label: str, labels: str, warnings: Sequence[str], task: str = ""
) -> dict[str, tuple[str, str]]:
    """One side's rows: name -> (value, level); labels in red when they do not fit the model's outputs."""
    rows = {"Model": (model_label, "info")} if model_label else {}
    if task:  # what the app reads the model as, and the evidence: a wrong guess is seen (and --task fixes it)
        rows["Task"] = (task, "info")
    if labels:
        rows["Labels"] = (labels + ("; " + "; ".join(warnings) if warnings else ""), "warn" if warnings else "ok")
    for fact in delegation_panel_facts(report):
        name = fact.label
        while name in rows:  # several warnings: each keeps its row
            name += " "
        rows[name] = (fact.value, fact.level)
    return rows


def _legend(rows: Sequence[tuple[str, Coverage]]) -> str:
    """The strip's key, naming only the colours drawn: on the CPU's own row a node XNNPACK does not take is
    on the built-in kernels (amber), not "left on the CPU" (red: a delegate's node that stays on the CPU)."""
    nodes = [(coverage.delegate, node.delegated) for _, coverage in rows for node in coverage.nodes]
    all_cpu = all(delegate == "cpu" for delegate, _ in nodes)
    parts = []
    if any(delegated for _, delegated in nodes):
        parts.append("<span style='color:#2e7d32'>■</span><span style='color:#1565c0'>■</span> "
                     f"{'XNNPACK' if all_cpu else 'delegated'} (a colour change is a partition boundary)")  # fmt: skip
    if any(delegate == "cpu" and delegated is False for delegate, delegated in nodes):
        parts.append(f"<span style='color:{BUILT_IN_COLOUR}'>■</span> {BUILT_IN_KERNELS} (the CPU either way)")
    if any(delegate != "cpu" and delegated is False for delegate, delegated in nodes):
        parts.append("<span style='color:#c62828'>■</span> left on the CPU")
    if any(delegated is None for _, delegated in nodes):
        parts.append("<span style='color:#9e9e9e'>■</span> not reported")
    return f"<small>Nodes in execution order. {', '.join(parts)}. Hover a node for its op and reason.</small>"


_BREAK = "\u200b"  # a zero-width space: where a long name may wrap
_JOIN = "\u2060"  # a word joiner: where a line must not wrap


def _unbroken(text: str) -> str:
    """HTML for a pieces line that wraps only between its parts: never inside "0–57" (a line may break
    after an en dash), "Core ML", or a time and its unit."""
    return html.escape(text).replace("–", "–" + _JOIN).replace(" ms", "&nbsp;ms").replace("Core ML", "Core&nbsp;ML")


# A word this long may break inside (only where its column is narrower than it): B's column in A/B was cut
# by 'CONCATENATION,' and 'TFLite_Detection_'.
_LONG_WORD = re.compile(f"[^\\s{_BREAK}]{{12,}}")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
# A file's extension (".txt", ".tflite") at a word's end, and a dot with no extension or decimals ("5.8 ms")
# after it: a name wraps after the latter only.
_EXTENSION = re.compile(r"\.[A-Za-z0-9]{1,8}$")
_BREAKING_DOT = re.compile(r"\.(?![A-Za-z0-9]{1,8}(?![\w.]))")


def _split_word(match: re.Match[str]) -> str:
    """A long word broken where it reads best: between camel-case parts ('TfLite|XNNPack|Delegate'), else
    every 6 characters (break opportunities only: a line breaks there only when the word does not fit); a
    file's extension stays on its stem's last piece ('mobile|netv2.tflite', never '.tf|lite')."""
    word = match.group(0)
    extension = _EXTENSION.search(word)
    tail = extension.group(0) if extension and extension.start() > 0 else ""
    parts = _CAMEL.sub(_BREAK, word[: len(word) - len(tail)]).split(_BREAK)
    return _BREAK.join(_BREAK.join(part[i : i + 6] for i in range(0, len(part), 6)) for part in parts) + tail


def _breakable(value: str) -> str:
    """HTML for a value that may wrap after '_', '/' and a dot within a name too, and inside a long word: a
    model name like efficientnet_lite0_int8 or the log's '(TfLiteXNNPackDelegate)' fits a narrow column
    instead of widening the table past the dock (B's column was cut at the right). A file name never wraps
    before its extension ("imagenet_labels. / txt" at the default size): "imagenet_ / labels.txt"."""
    text = _BREAKING_DOT.sub("." + _BREAK, value.replace("_", "_" + _BREAK).replace("/", "/" + _BREAK))
    return html.escape(_LONG_WORD.sub(_split_word, text))
