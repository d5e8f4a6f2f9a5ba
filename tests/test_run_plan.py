"""The run plan (app/tasks/plan.py, app/pipeline/plan.py): every `bench` option reaches the run it sets, and
in A/B both sides, or is refused by name (exit 2); none is dropped on the way."""

from __future__ import annotations

import time

import pytest

from app.errors import UsageError
from app.pipeline.plan import FeedPlan
from tests.helpers.plans import LABELS, plan_for
from tests.helpers.plans import bench_parser as parser


def both(check):
    """A check that must hold of side A's config and, in A/B, side B's."""
    return lambda plan: check(plan.config) and (plan.compare is None or check(plan.compare))


# dest -> (argv giving a value other than the default, where that value must show in the plan). A new option
# without a row here fails test_every_option_has_a_row: say where it goes, or refuse it in A/B.
ROWS = {
    "model": (["--model", "efficientnet_lite0_int8"], both(lambda c: c.model == "efficientnet_lite0_int8")),
    "labels": (["--labels", "LABELS"], both(lambda c: c.labels == LABELS)),
    "task": (["--task", "classification"], both(lambda c: c.model_options.task == "classification")),
    "input_shape": (["--input-shape", "0=1x224x224x3"], both(lambda c: c.model_options.input_shapes != ())),
    "inputs": (None, None),  # an .npz for inputs that take no frame: exercised by tests/test_any_model_bench.py
    "delegate": (["--delegate", "reference"], lambda p: p.config.delegate == "reference"),
    "no_fallback": (["--no-fallback"], both(lambda c: c.fallback is False)),
    "threads": (["--threads", "1"], both(lambda c: c.options.threads == 1)),
    "gpu_precision": (["--gpu-precision", "fp32"], both(lambda c: c.options.precision == "fp32")),
    "allow_software_gpu": (["--allow-software-gpu"], both(lambda c: c.options.allow_software is True)),
    "coreml_units": (["--coreml-units", "cpu_only"], both(lambda c: c.options.compute_units == "cpu_only")),
    "source": (["--source", "synthetic"], lambda p: p.feed.source == "synthetic"),
    "frames": (["--frames", "7"], lambda p: p.frames == 7),
    "seconds": (["--seconds", "3"], lambda p: p.seconds == 3 and p.frames is None),
    "throttle_ms": (["--throttle-ms", "20"], both(lambda c: c.throttle_ms == 20)),
    "warmup": (["--warmup", "3"], lambda p: p.warmup == 3),
    "no_pace": (["--no-pace"], lambda p: p.feed.pace is False),
    "no_pin": (["--no-pin"], lambda p: p.feed.pin_cpus is False),
    "inference_cpus": (["--inference-cpus", "1"], lambda p: p.feed.inference_cpus == 1),
    "decode_threads": (["--decode-threads", "3"], lambda p: p.feed.decode_threads == 3),
    "preprocess_thread": (["--preprocess-thread", "on"], lambda p: p.feed.preprocess_thread is True),
    "gpu_wait_hint": (["--gpu-wait-hint"], both(lambda c: c.options.wait_hint is True)),
    "gpu_process": (["--gpu-process", "on"],
                    lambda p: p.gpu_process == "on" and both(lambda c: c.options.own_process)(p)),
    "rounds": (["--rounds", "3"], lambda p: p.rounds == 3),
    "idle_seconds": (["--idle-seconds", "1"], lambda p: p.idle_s == 1),
    "warm_seconds": (["--warm-seconds", "5"], lambda p: p.warm_s == 5),
    "baseline": (None, None),  # the gate: read by _gate_plan beside the plan (tests/test_cli_gates.py)
    "strict_config": (None, None),  # likewise
    "budget": (None, None),  # likewise
    "score_threshold": (["--score-threshold", "0.2"], both(lambda c: c.score_threshold == 0.2)),
    "csv": (["--csv", "CSV"], lambda p: p.csv is not None),
    "json_file": (None, None),  # where the summary is written, not how the run runs
    "trace": (["--trace", "TRACE"], lambda p: p.trace is not None and p.trace.name == "run.trace.json"),
    "versus_litert": (["--versus-litert", "3", "--no-pace"], lambda p: p.versus_litert == 3),
    "compare_with": (["--compare-with", "cpu"], lambda p: p.compare is not None and p.compare.delegate == "cpu"),
    "compare_model": (["--compare-model", "efficientnet_lite0_int8"],
                      lambda p: p.compare is not None and p.compare.model == "efficientnet_lite0_int8"),
    "compare_labels": (["--compare-labels", "LABELS"], lambda p: p.compare is not None and p.compare.labels == LABELS),
    "compare_alone_seconds": (["--compare-alone-seconds", "2"], lambda p: p.alone_s == 2),
}  # fmt: skip

# Refused in A/B (exit 2, named): an A/B run has two inference threads, and only one per process is pinned;
# LiteRT's benchmark_litert_model runs one model on one accelerator.
REFUSED_IN_AB = {"inference_cpus", "versus_litert"}
# Options of A/B alone: refused in a single run rather than ignored.
AB_ONLY = {"compare_alone_seconds"}
# Honoured by A/B without a value to pass on: it never pins.
TRIVIAL_IN_AB = {"no_pin"}


def test_every_option_has_a_row():
    dests = {a.dest for a in parser()._actions if a.dest != "help"}
    assert dests == set(ROWS), f"options without a row: {dests - set(ROWS)}; rows of no option: {set(ROWS) - dests}"


@pytest.mark.parametrize("ab", [False, True], ids=["single", "a-b"])
@pytest.mark.parametrize("dest", [d for d, (argv, _) in ROWS.items() if argv is not None])
def test_an_option_reaches_the_plan_and_both_sides_or_is_refused_by_name(dest, ab, tmp_path):
    argv, check = ROWS[dest]
    if ab and not dest.startswith("compare_"):
        argv = [*argv, "--compare-with", "cpu"]
    if not ab and dest in AB_ONLY:
        with pytest.raises(UsageError, match=f"--{dest.replace('_', '-')} applies to A/B only"):
            plan_for(argv, tmp_path)
        return
    if ab and dest in AB_ONLY:
        argv = [*argv, "--compare-with", "cpu"]
    if ab and dest in REFUSED_IN_AB:
        with pytest.raises(UsageError, match=f"--{dest.replace('_', '-')} does not apply to A/B"):
            plan_for(argv, tmp_path)
        return
    plan = plan_for(argv, tmp_path)
    assert plan.compares == (ab or dest.startswith("compare_"))
    if ab and dest in TRIVIAL_IN_AB:
        assert plan.feed.pin_cpus is False
        return
    assert check(plan), (dest, plan)


def test_a_b_never_pins_and_a_single_run_does_by_default(tmp_path):
    assert plan_for([], tmp_path).feed.pin_cpus is True
    assert plan_for(["--compare-with", "cpu"], tmp_path).feed.pin_cpus is False


def test_the_plan_is_recorded_as_it_ran(tmp_path):
    plan = plan_for(["--compare-with", "cpu", "--warm-seconds", "5", "--decode-threads", "3"], tmp_path)
    recorded = plan.to_dict()
    assert recorded["warm_s"] == 5 and recorded["decode_threads"] == 3 and recorded["alone_s"] == 5.0
    assert recorded["pin_cpus"] is False and recorded["source"] == "demo"


def test_a_feed_plan_gives_the_source_what_it_opens_with():
    assert FeedPlan("demo", pace=False, decode_threads=2).source_options() == {
        "pace": False, "loop": True, "decode_threads": 2}  # fmt: skip
    assert FeedPlan("synthetic", fps=5).source_options()["fps"] == 5
    assert FeedPlan.of("synthetic") == FeedPlan(source="synthetic")


@pytest.mark.slow
def test_a_b_takes_its_warm_up_seconds(tmp_path):
    """`bench --compare-with cpu --warm-seconds 3` holds both sides in warm-up for 3 s before measuring; the
    same run with 0 does not (both measure 5 frames, no alone phase)."""
    from app.tasks.bench_compare import run_compare_bench

    walls = {}
    for warm in (0, 3):
        argv = ["--compare-with", "cpu", "--threads", "1", "--frames", "5", "--warmup", "1", "--no-pace",
                "--compare-alone-seconds", "0", "--warm-seconds", str(warm)]  # fmt: skip
        plan = plan_for(argv, tmp_path)
        started = time.monotonic()
        summary = run_compare_bench(plan)
        walls[warm] = time.monotonic() - started
        assert summary.agreement.frames >= 5 and summary.plan is not None and summary.plan.warm_s == warm
    assert walls[3] >= walls[0] + 2.5, walls
