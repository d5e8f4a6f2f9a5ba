"""A/B comparison on real backends: one source, two inference threads, shared preprocessing."""

from __future__ import annotations

import pytest

from app.pipeline import InferenceConfig
from app.pipeline.compare import ComparePipeline
from app.pipeline.plan import FeedPlan
from tests.helpers.wait import wait_until


def run_compare(a: InferenceConfig, b: InferenceConfig, frames: int, source: str = "demo") -> ComparePipeline:
    cp = ComparePipeline(FeedPlan(source, pace=False), a, b)
    cp.start()
    try:
        compared = wait_until(lambda: len(cp.comparator.comparisons) >= frames or cp.status().state == "error", 120)
        assert cp.status().state != "error", cp.status().message
        assert compared, "timed out waiting for compared frames"
    finally:
        assert cp.stop()
    assert not any(t.is_alive() for t in cp.threads())
    return cp


def cpu(model: str = "efficientnet_lite0", **kw: object) -> InferenceConfig:
    return InferenceConfig(model=model, options={"threads": 1}, **kw)  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_model_against_itself_agrees_exactly():
    cp = run_compare(cpu(), cpu(), 40)
    s = cp.comparator.summary()
    assert s.frames >= 40
    assert s.top1_agreement == 1.0 and s.top5_overlap == 1.0
    assert s.max_abs_diff == 0.0 and s.mean_tv_distance == 0.0  # same pixels, same model, same kernels
    # One preprocessing per frame, shared: every compared frame's pixels were computed once
    # and reused by the other side.
    assert cp.rgb_cache.reused >= s.frames


@pytest.mark.slow
def test_fp32_against_int8_agrees_mostly_and_says_where_not():
    cp = run_compare(cpu(), cpu("efficientnet_lite0_int8"), 150)
    s = cp.comparator.summary()
    rows = list(cp.comparator.comparisons)
    # The figures are what the rows say (recomputed here), not constants.
    agree = sum(r.top1_agree for r in rows) / len(rows)
    assert s.top1_agreement == pytest.approx(agree)
    assert s.max_abs_diff == pytest.approx(max(r.max_abs_diff for r in rows))
    assert 0.5 < s.top1_agreement <= 1.0  # quantization moves some scores, rarely the winner
    assert 0 < s.max_abs_diff < 1 and 0 < s.mean_tv_distance < 0.5
    assert all(r.top1_agree == (r.a_top1 == r.b_top1) for r in rows)
    assert {d.frame_index for d in s.disagreements} <= {r.frame_index for r in rows if not r.top1_agree}
    # Each side has its own figures.
    snaps = cp.snapshots()
    assert snaps["a"].inferences_total >= 150 and snaps["b"].inferences_total >= 150
    assert all(r.a_cpu_ms > 0 and r.b_cpu_ms > 0 for r in rows[-20:])


@pytest.mark.slow
def test_an_unavailable_side_falls_back_visibly():
    cp = run_compare(cpu(), cpu(delegate="coreml"), 20)
    report = cp.workers["b"].delegation_report()
    assert report is not None and report.requested == "coreml" and report.used == "cpu"
    assert "macOS" in (report.fallback_reason or "")
    assert any(e.kind == "fallback" for e in cp.workers["b"].log.events())
    assert cp.comparator.summary().top1_agreement == 1.0  # both really ran the same model on CPU


@pytest.mark.slow
def test_bench_compare_with_writes_both_sides_and_agreement(tmp_path):
    import csv
    import json

    from tests.helpers.cli import run_cli

    summary, table = tmp_path / "s.json", tmp_path / "frames.csv"
    run = run_cli(
        "bench", "--frames", "30", "--threads", "1", "--compare-with", "coreml", "--compare-alone-seconds", "1",
        "--json", summary, "--csv", table,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "side B fell back" in run.stderr and "macOS" in run.stderr  # visible, never silent
    assert "top-1 agrees on 100.0% of" in run.stdout
    s = json.loads(summary.read_text())
    assert s["mode"] == "compare" and s["b"]["delegate"]["requested"] == "coreml"
    assert s["b"]["delegate"]["used"] == "cpu" and s["a"]["alone"]["inference_fps"] > 0
    assert s["agreement"]["frames"] == 30 and s["agreement"]["top1_agreement"] == 1.0
    rows = list(csv.DictReader(table.open(encoding="utf-8")))
    assert len(rows) == s["agreement"]["frames"] and all(r["top1_agree"] == "1" for r in rows)
    # Each side's full recording, which `report` renders as a pair.
    html = tmp_path / "pair.html"
    sides = [tmp_path / "frames-a.csv", tmp_path / "frames-b.csv"]
    rendered = run_cli("report", *sides, "--out", html)
    assert rendered.returncode == 0, rendered.stderr
    assert "coreml" in html.read_text(encoding="utf-8")
    # The report of each side counts the inferences and gives the p95 its side's summary gave: the rows
    # between `measure` and `measure_end` (it counted rows that ran while the bench stopped: 362 for 361).
    from app.report.data import load_session

    for side, recording in zip(("a", "b"), sides, strict=True):
        data = load_session(recording, 0)
        together = s[side]["together"]
        assert data.summary.inferences == together["inferences_total"] == together["latency"]["inference"]["count"]
        assert data.summary.stages["inference"].p95 == pytest.approx(together["latency"]["inference"]["p95"], abs=1e-3)
    # The per-frame file itself is not a recording: report says so and names the files to pass.
    wrong = run_cli("report", table, "--out", tmp_path / "wrong.html")
    assert wrong.returncode == 2 and "A/B comparison's per-frame file" in wrong.stderr
    assert "report frames-a.csv frames-b.csv" in wrong.stderr
    strict = run_cli("bench", "--frames", "5", "--threads", "1", "--compare-with", "coreml",
                     "--compare-alone-seconds", "0", "--no-fallback")  # fmt: skip
    assert strict.returncode == 5


@pytest.mark.slow
def test_tensorflow_reference_as_side_b(tmp_path):
    """The framework's own float32 result (convert extra): LiteRT's float32 CPU result must
    match it closely, and the int8 model drifts measurably further from it."""
    import json

    from app.backends import BACKENDS
    from tests.helpers.cli import run_cli

    reason = BACKENDS["reference"].availability()
    if reason:
        pytest.skip(reason)
    float_json, int8_json = tmp_path / "f.json", tmp_path / "i.json"
    common = ["bench", "--frames", "20", "--threads", "1", "--compare-alone-seconds", "0", "--warmup", "2"]
    run = run_cli(*common, "--compare-with", "reference", "--json", float_json, timeout=300)
    assert run.returncode == 0, run.stderr
    f = json.loads(float_json.read_text())
    assert f["b"]["delegate"]["used"] == "reference" and f["agreement"]["top1_agreement"] == 1.0
    assert f["agreement"]["max_abs_diff"] < 1e-3
    # B's CPU is TensorFlow's, in its child process: read from the child's clock (it read ~0.1 ms,
    # the parent's thread blocked on the pipe, before), so B is not taken for offloaded work.
    b_cpu = f["b"]["together"]["cpu_ms_per_inference"]
    assert b_cpu > 1.0, f["b"]["together"]
    run = run_cli(*common, "--model", "efficientnet_lite0_int8", "--compare-model", "efficientnet_lite0",
                  "--compare-with", "reference", "--json", int8_json, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    i = json.loads(int8_json.read_text())
    assert i["agreement"]["max_abs_diff"] > 10 * f["agreement"]["max_abs_diff"]


def test_speed_sentence_names_a_tie_instead_of_one_point_oh_times_slower():
    from app.backends.describe import speed_sentence

    assert speed_sentence(10.0, 10.1, 10.0, 10.0).startswith("same speed (B within 1.0% of A)")
    assert speed_sentence(10.0, 12.0, 0.0, 0.0).startswith("B is 1.20× slower than A")
    assert speed_sentence(12.0, 10.0, 0.0, 0.0).startswith("B is 1.20× faster than A")


def test_the_first_n_comparisons_are_the_span_of_n_frames():
    """`bench --frames N` counts the first N compared frames: frames compared before its span closes (it
    looks every 50 ms) are neither in its agreement nor in its comparison CSV."""
    from app.pipeline.compare import Comparator, FrameComparison

    comparator = Comparator()
    for i in range(8):  # frames 0-7, compared at t=10..17; frames 1 and 6 disagree
        agree = i not in (1, 6)
        comparator.comparisons.append(
            FrameComparison(i, 10.0 + i, "a", "a" if agree else "b", agree, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0)
        )
        if not agree:
            comparator._disagreements.append(comparator.comparisons[-1])
    assert [c.frame_index for c in comparator.measured(20.0, first=5)] == [0, 1, 2, 3, 4]
    summary = comparator.summary(until=20.0, first=5)
    assert summary.frames == 5 and summary.top1_agreement == 0.8
    assert [d.frame_index for d in summary.disagreements] == [1]  # frame 6 is past the span
    assert comparator.summary(until=20.0).frames == len(comparator.measured(20.0)) == 8  # no N: all


@pytest.mark.slow
def test_an_ab_bench_of_n_frames_counts_n_in_its_summary_and_csv(tmp_path):
    """Unpaced, both sides compare a frame every few milliseconds: the span still counts exactly N (it
    counted 101-108 for --frames 100, the frames compared until the next look)."""
    import csv

    from app.tasks.bench_compare import run_compare_bench
    from tests.helpers.plans import plan_for

    argv = ["--compare-with", "cpu", "--compare-model", "efficientnet_lite0_int8", "--threads", "1", "--frames",
            "40", "--warmup", "2", "--no-pace", "--compare-alone-seconds", "0", "--csv", "CSV"]  # fmt: skip
    summary = run_compare_bench(plan_for(argv, tmp_path))
    assert summary.agreement.frames == 40 and summary.csv is not None and summary.csv.rows == 40
    assert len(list(csv.DictReader(summary.csv.path.open(encoding="utf-8")))) == 40
    assert "of 40 frames" in summary.agreement.describe()
