"""The Numerics view in the real window: off by default, a run on demand for side A on the
window's frame in a thread of its own while the inference thread goes on, the table filled, the first
breaking node's row highlighted."""

from __future__ import annotations

import threading

import pytest

from app.backends.options import BackendOptions, Delegate
from app.live.numerics import NumericsOutcome, disagreement_side, plan
from app.model.spec import load_model_spec
from app.numerics.metrics import Threshold
from app.numerics.runners import Against
from app.tasks.numerics import NumericsOptions, run_numerics
from app.ui.views.numerics import BREAK_COLOUR


@pytest.mark.slow
def test_off_by_default_then_runs_on_demand_beside_the_inference(make_window, qtbot):
    window = make_window()
    view = window.numerics_view
    assert not window.numerics_dock.isVisible()  # off by default: View → Numerics shows it
    assert view.table.rowCount() == 0
    qtbot.waitUntil(lambda: window.live.latest_result() is not None, timeout=30_000)
    window.numerics_dock.show()
    before = window.live.latest_result()
    view.run_button.click()
    assert not view.run_button.isEnabled()  # one run at a time
    assert any(t.name == "numerics" for t in threading.enumerate())  # its own thread, not the inference one
    qtbot.waitUntil(lambda: view.table.rowCount() > 0, timeout=120_000)
    assert window.live.latest_result() is not before  # the live session kept inferring meanwhile
    outcome = view._runs.latest()
    assert outcome.error is None and outcome.result is not None
    result = outcome.result
    # the window runs the CPU: checked against LiteRT's reference kernels, on the frame the window showed
    assert result.options.delegate == Delegate.CPU and result.options.against == Against.REFERENCE
    assert result.inputs.kind == "window" and result.inputs.count == 1
    assert view.table.rowCount() == len(result.scan.rows)
    assert "frame of the window's source" in view.status.text()
    assert view.run_button.isEnabled()


@pytest.mark.slow
def test_the_first_breaking_node_is_highlighted_in_the_table_and_the_node_strip(make_window, qtbot):
    window = make_window()
    qtbot.waitUntil(lambda: window.delegation.strip.rows != [], timeout=30_000)
    spec = load_model_spec("efficientnet_lite0")
    # a threshold XNNPACK misses against the reference kernels (SNR 112-139 dB measured): a node breaks
    options = NumericsOptions(Delegate.CPU, Against.REFERENCE, BackendOptions(threads=1), Threshold(min_snr_db=125))
    result = run_numerics(spec, options)
    first = result.scan.first_breaking
    assert first is not None
    view, strip = window.numerics_view, window.delegation.strip
    view.show_result(NumericsOutcome("efficientnet_lite0 on cpu", 0.0, result=result, seconds=1.0))
    rows = [r.node for r in result.scan.rows]
    assert view.row_colour(rows.index(first)) == BREAK_COLOUR
    assert all(view.row_colour(i) != BREAK_COLOUR for i, node in enumerate(rows) if node != first)
    assert f"first breaking node {first}" in view.status.text()
    # the node strip frames the same node in every row: its cell's top-left corner is drawn black
    assert strip.marked == first
    strip.resize(max(strip.width(), 800), strip.height())
    image = strip.grab().toImage()
    cell = strip._cell_rect(0, first, len(strip.rows[0][1].nodes))
    assert image.pixelColor(cell.left() - 1, cell.top()).name() == "#000000"
    assert image.pixelColor(cell.center()).name() != "#000000"


def test_a_delegate_without_numerics_is_said():
    assert isinstance(plan("reference"), str) and "side A runs reference" in str(plan("reference"))
    assert plan("gpu") == (Delegate.GPU, Against.CPU) and plan("cpu") == (Delegate.CPU, Against.REFERENCE)


@pytest.mark.slow
def test_an_ab_disagreement_links_to_the_numerics_of_its_frame(make_window, qtbot):
    """In A/B a disagreement's thumbnail, double-clicked, checks that frame node by node on the side that runs
    an accelerator (both sides on the CPU here: side B, XNNPACK against LiteRT's reference kernels)."""
    window = make_window()
    qtbot.waitUntil(lambda: window.live.snapshot().inferences_total >= 3, timeout=30_000)
    window.set_compare(("efficientnet_lite0_int8", "cpu"))  # int8 against float disagree on some frames
    thumbs = window.compare_panel.thumbs
    qtbot.waitUntil(lambda: thumbs.count() > 0, timeout=90_000)
    comparison, _ = window.compare_panel._items[0]
    thumbs.itemActivated.emit(thumbs.item(0))
    assert window.numerics_dock.isVisible()
    view = window.numerics_view
    qtbot.waitUntil(lambda: view.table.rowCount() > 0, timeout=120_000)
    outcome = view._runs.latest()
    assert outcome.error is None and outcome.result is not None, outcome.error
    assert outcome.asked.startswith("side B: efficientnet_lite0_int8 on cpu")
    assert outcome.result.spec.name == load_model_spec("efficientnet_lite0_int8").name
    assert outcome.result.inputs.kind == "window" and outcome.result.inputs.count == 1
    assert f"frame {comparison.frame_index}" in view.status.text()


def test_a_disagreement_is_checked_on_the_side_that_runs_an_accelerator():
    assert disagreement_side("cpu", "gpu") == "b" and disagreement_side("gpu", "cpu") == "a"
    assert disagreement_side("coreml", "gpu") == "b" and disagreement_side("cpu", "cpu") == "b"
    assert disagreement_side("gpu", "reference") == "a"
