"""The Ops view in the real window: off by default, profiles the running session while on, colours rows by
where each op ran, and shows side B's table next to A's in A/B."""

from __future__ import annotations

from app.profile.types import Placement
from app.ui.views.ops import CPU_COLOUR, PARTITION_COLOURS


def test_off_by_default_then_profiles_the_running_session(make_window, qtbot):
    window = make_window()
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
    window = make_window()
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


def test_a_recording_stopped_while_profiling_carries_the_profile(make_window, qtbot, tmp_path):
    from app.profile.sidecar import read_profile

    window = make_window()
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
