"""The Ops view in the real window: off by default, profiles the running session while on, colours rows by
where each op ran, shows side B's table with A's in A/B, and its ops in view at 1280×860."""

from __future__ import annotations

import pytest

from app.profile.types import Placement
from app.ui.views.ops import CPU_COLOUR, KERNEL, PARTITION_COLOURS

# The live inference held to one start per 200 ms: the profiler's thread runs at nice +10
# (app/profile/background.py) and, on a machine busy with other work, waited seconds on the live
# pipelines' inferences, which ran all the while.
THROTTLE_MS = 200.0


def test_off_by_default_then_profiles_the_running_session(make_window, qtbot):
    window = make_window(throttle_ms=THROTTLE_MS)
    view = window.ops_view
    assert not view.enable.isChecked() and not view.profiler.running
    view.set_profiling(True)
    assert view.profiler.running
    qtbot.waitUntil(lambda: "a" in view.latest and view.latest["a"].profile is not None, timeout=60_000)
    profile = view.latest["a"].profile
    assert profile.used == "cpu" and view.latest["a"].target.delegate == "cpu"
    table = view.side_a.table
    assert table.rowCount() == len(profile.ops) > 50
    # Rows are coloured by where each op ran: the delegated partition's colour in the "where" column.
    for row, op in enumerate(profile.ops):
        colour = table.item(row, 4).background().color().name()
        expected = CPU_COLOUR if op.placement is Placement.CPU else PARTITION_COLOURS[(op.partition or 0) % 4]
        assert colour == expected.lower(), (row, op)
    assert not view.side_b.isVisible()
    view.set_profiling(False)
    assert not view.profiler.running and not view.enable.isChecked()


def test_ab_shows_both_sides(make_window, qtbot):
    window = make_window(throttle_ms=THROTTLE_MS)
    window.set_compare(("efficientnet_lite0_int8", "cpu"))
    view = window.ops_view
    view.set_profiling(True)
    qtbot.waitUntil(lambda: {"a", "b"} <= set(view.latest), timeout=90_000)
    qtbot.waitUntil(lambda: view.side_b.table.rowCount() > 0, timeout=5_000)
    assert view.side_b.isVisible()
    assert view.latest["b"].target.model == "efficientnet_lite0_int8"
    kernels_b = {view.side_b.table.item(r, 3).text() for r in range(view.side_b.table.rowCount())}
    assert any("QC8" in k or "QS8" in k for k in kernels_b), kernels_b  # B really ran the int8 model
    view.set_profiling(False)


@pytest.mark.slow
def test_a_recording_stopped_while_profiling_carries_the_profile(make_window, qtbot, tmp_path):
    from app.profile.sidecar import read_profile

    window = make_window(throttle_ms=THROTTLE_MS)
    view = window.ops_view
    view.set_profiling(True)
    qtbot.waitUntil(lambda: "a" in view.latest and view.latest["a"].profile is not None, timeout=60_000)
    path = tmp_path / "session.csv"
    assert window.start_recording(path)
    qtbot.wait(500)
    window.stop_recording()
    profile = read_profile(path)
    assert profile is not None and profile.used == "cpu" and len(profile.ops) > 50
    view.set_profiling(False)
    other = tmp_path / "off.csv"
    assert window.start_recording(other)
    qtbot.wait(300)
    window.stop_recording()
    assert read_profile(other) is None  # profiling off: nothing beside the recording


def _rows_in_view(table, area, rows: int) -> bool:
    """The table's header and first `rows` rows lie inside its own viewport and the dock's, as scrolled now,
    and the table's right edge inside the dock's width."""
    from PySide6.QtCore import QPoint

    if not table.isVisible() or table.rowCount() < rows:
        return False
    last = table.visualRect(table.model().index(rows - 1, 0))  # in the table's viewport
    top = table.horizontalHeader().mapTo(area.viewport(), QPoint(0, 0)).y()
    bottom = table.viewport().mapTo(area.viewport(), last.bottomLeft()).y()
    right = table.mapTo(area.viewport(), QPoint(table.width(), 0)).x()
    return (
        top >= 0
        and last.bottom() < table.viewport().height()
        and bottom < area.viewport().height()
        and right <= area.viewport().width()
    )


def _in_view(widget, area) -> bool:
    from PySide6.QtCore import QPoint

    top = widget.mapTo(area.viewport(), QPoint(0, 0)).y()
    return widget.isVisible() and top >= 0 and top + widget.height() <= area.viewport().height()


@pytest.mark.timeout(240)
def test_at_1280x860_the_ops_are_in_view_without_scrolling_the_dock(make_window, qtbot):
    """At 1280×860 in the default layout the Ops tab in A/B showed the two summaries wrapped in narrow
    columns, the op tables below the fold and the dock scrolling both ways: a user who clicked Ops saw no
    ops. Each side's first rows, and the contention warning, are now in the dock's view as it opens."""
    from dataclasses import replace

    from PySide6.QtCore import Qt

    window = make_window(throttle_ms=THROTTLE_MS)
    window.resize(1280, 860)
    window.set_compare(("efficientnet_lite0_int8", "cpu"))
    window.ops_dock.raise_()  # A/B raised its own tab
    view, area = window.ops_view, window.ops_dock.widget()
    sides = (view.side_a, view.side_b)
    view.set_profiling(True)
    qtbot.waitUntil(lambda: all(s.table.rowCount() > 50 for s in sides), timeout=90_000)
    view.set_profiling(False)

    def fits(rows: int) -> bool:
        return (
            area.horizontalScrollBar().maximum() == 0
            and area.verticalScrollBar().maximum() == 0
            and all(_rows_in_view(s.table, area, rows) for s in sides if s.isVisibleTo(view))
        )

    qtbot.waitUntil(lambda: fits(3), timeout=10_000)
    assert view.sides.orientation() == Qt.Orientation.Vertical  # a narrow dock: B under A
    for side in sides:
        assert side.table.isColumnHidden(KERNEL)  # no room: the kernel is in each row's tooltip
        op = side.table.item(0, 2)
        assert op.text() in op.toolTip() and side.table.item(0, KERNEL).text() in op.toolTip()
        assert side.summary.shown().startswith(side.side.upper() + " ops ")
        assert view.latest[side.side].profile.model in side.summary.toolTip()  # the whole summary

    # A busy machine's profiles (here their CPU share set to one): the warning is one line in view.
    latest = {
        side: replace(entry, profile=replace(entry.profile, cpu_share=0.25)) for side, entry in view.latest.items()
    }
    view.show_latest(latest, comparing=True)
    qtbot.waitUntil(lambda: fits(3) and _in_view(view.warning, area), timeout=5_000)
    assert view.warning.shown() == "under contention: CPU 25% (A), 25% (B) of wall time", view.warning.shown()
    assert "the runs had the CPU 25% of their wall time" in view.side_a.summary.toolTip()

    # ▸ opens the whole summary (the least-disturbed statistic said), closing it gives the rows back.
    view.side_a.more.click()
    assert view.side_a.details.isVisible() and "least-disturbed" in view.side_a.details.text()
    view.side_a.more.click()
    qtbot.waitUntil(lambda: fits(3), timeout=5_000)

    # Not A/B: A's table alone, taller.
    window.set_compare(None)
    window.ops_dock.raise_()
    view.show_latest({"a": view.latest["a"]}, comparing=False)
    qtbot.waitUntil(lambda: not view.side_b.isVisibleTo(view) and fits(10), timeout=10_000)
    assert not view.warning.isHidden()  # A's share alone
    assert view.warning.shown() == "under contention: CPU 25% of wall time", view.warning.shown()

    # Floated wide, A/B's tables stand side by side.
    view.show_latest(latest, comparing=True)
    window.ops_dock.setFloating(True)
    window.ops_dock.resize(1000, 500)
    qtbot.waitUntil(lambda: view.sides.orientation() == Qt.Orientation.Horizontal, timeout=5_000)
    assert view.side_a.geometry().right() < view.side_b.geometry().left()
    assert fits(10)
