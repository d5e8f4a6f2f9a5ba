"""bench --versus-litert (app/tasks/versus_litert.py): the pipeline's inference rate against LiteRT's own
benchmark_litert_model on the same model, threads and accelerator, in interleaved rounds.

The logic (reading the tool's result, the ratio, the median, the rounds' order, the refusals) runs on
recorded output; the real runs start the tool and the installed `delegate-scope` console script."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from app.cli.commands import bench as bench_command
from app.errors import BackendUnavailable, UsageError
from app.schemas import OutputKind, schema
from app.tasks import versus_litert as versus
from app.tasks.plan import RunPlan
from app.tasks.versus_litert import ToolRun, VersusLitert, VersusRound, median, tool_error
from tests.helpers.cli import assert_one_line_error, run_cli
from tests.helpers.paths import ROOT

INT8 = ROOT / "models" / "efficientnet_lite0_int8.tflite"

# benchmark_litert_model's --result_json, as ai-edge-litert 2.3.0 wrote it for the bundled int8 model
# (`--num_threads 1 --num_runs 50 --warmup_runs 5`, CPU).
RECORDED: dict[str, Any] = {
    "model": "models/efficientnet_lite0_int8.tflite",
    "model_size_mb": 5.04,
    "accelerators": ["CPU"],
    "signature": "serving_default",
    "fully_accelerated": False,
    "num_threads": 1,
    "latency": {
        "init_ms": 4.75, "warmup_first_ms": 2.28, "warmup_avg_ms": 2.21, "num_warmup_runs": 5, "avg_ms": 2.0,
        "min_ms": 1.89, "max_ms": 2.2, "median_ms": 1.98, "std_ms": 0.07, "p5_ms": 1.91, "p95_ms": 2.14,
        "num_runs": 50,
    },
    "throughput_mb_s": 71.61,
}  # fmt: skip

# Its standard error when the model is missing: the runtime's native log, then its own ERROR line.
RECORDED_FAILURE = """INFO: [accelerator_registry.cc:43] RegisterAccelerator: ptr=0x55bef0c9f640, name=CpuAccelerator
2026-12-07 17:55:58 INFO benchmark_litert_model: Model:           /nonexistent.tflite
2026-12-07 17:55:58 ERROR benchmark_litert_model: Model file not found: /nonexistent.tflite
"""


def _tool(avg_ms: float, median_ms: float | None = None) -> dict[str, Any]:
    return {**RECORDED, "latency": {**RECORDED["latency"], "avg_ms": avg_ms, "median_ms": median_ms or avg_ms}}


# --- the tool's output ------------------------------------------------------------------------------------


def test_the_tools_result_is_read_and_its_rate_is_1000_over_its_mean():
    run = ToolRun.of(RECORDED)
    assert (run.avg_ms, run.median_ms, run.runs, run.threads) == (2.0, 1.98, 50, 1)
    assert run.accelerators == ("CPU",) and run.fully_accelerated is False
    assert run.rate == pytest.approx(500.0)
    assert run.to_dict()["rate_per_s"] == pytest.approx(500.0)


@pytest.mark.parametrize(
    "broken, said",
    [
        ({k: v for k, v in RECORDED.items() if k != "latency"}, "KeyError"),
        ({**RECORDED, "accelerators": None}, "TypeError"),
        (_tool(0.0), "no timed runs"),
        ({**RECORDED, "latency": {**RECORDED["latency"], "num_runs": 0}}, "no timed runs"),
    ],
    ids=["no latency", "no accelerators", "mean 0", "no runs"],
)
def test_a_result_that_is_not_the_tools_is_a_value_error_saying_what(broken, said):
    with pytest.raises(ValueError, match=said):
        ToolRun.of(broken)


def test_the_tools_failure_is_its_error_line_without_the_log_prefix():
    assert tool_error(RECORDED_FAILURE) == "Model file not found: /nonexistent.tflite"
    assert tool_error("Traceback (most recent call last):\n  ...\nRuntimeError: no GPU\n") == "RuntimeError: no GPU"
    assert tool_error("") == "no output"


def test_the_tools_command_names_the_accelerator_threads_and_runs(tmp_path):
    cpu = versus.tool_command(INT8, "cpu", 3, 300, 10, tmp_path / "r.json")
    assert cpu[:3] == [sys.executable, "-m", "ai_edge_litert.tools.benchmark_litert_model"]
    assert "--use_gpu" not in cpu
    flags = dict(zip(cpu[3::2], cpu[4::2], strict=False))
    assert flags["--num_threads"] == "3" and flags["--num_runs"] == "300" and flags["--warmup_runs"] == "10"
    assert "--use_gpu" in versus.tool_command(INT8, "gpu", 3, 300, 10, tmp_path / "r.json")


# --- ratio, median and rounds -----------------------------------------------------------------------------


def test_median_of_odd_and_even_counts():
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([4.0, 1.0, 2.0, 3.0]) == 2.5
    with pytest.raises(ValueError):
        median([])


def _round(fps: float, tool_avg_ms: float, tool_first: bool = False, others: float | None = 0.1) -> VersusRound:
    return VersusRound(fps, 1000 / fps, "inference", ToolRun.of(_tool(tool_avg_ms)), tool_first, others)


def test_the_figure_is_the_median_of_the_rounds_ratios_not_the_ratio_of_medians():
    rounds = (_round(98.0, 10.0), _round(90.0, 9.0, True, 1.25), _round(99.0, 10.5))  # 0.98, 0.81, 1.0395
    result = VersusLitert("cpu", 1, 300, 10, rounds, cpus=2)
    assert [r.ratio for r in rounds] == pytest.approx([0.98, 0.81, 1.0395])
    assert result.ratio == pytest.approx(0.98)
    line = result.line()
    assert line.startswith("inference: 0.98 of LiteRT's benchmark_litert_model (median of 3 rounds, range 0.81-1.04;")
    assert "the pipeline's median inference rate over the rounds, 98.0/s" in line
    assert "model alone, median 100.0/s" in line
    assert line.endswith("CPU, 1 thread, 300 runs a leg; other processes took up to 1.25 of 2 cores)")
    unread = VersusLitert("gpu", 4, 300, 10, tuple(replace(r, others_cores=None) for r in rounds), cpus=2)
    assert unread.line().endswith("GPU, 4 threads, 300 runs a leg)")


def test_the_line_tells_its_median_rates_from_the_run_bench_printed_above_it():
    """bench prints round 1's run ("inference 148.3 fps") a few lines above: the line's rates are the
    rounds' medians and say so, with round 1's beside them; one round is "1 round", its rate the run's."""
    rounds = (_round(148.3, 8.0), _round(123.1, 8.0, True), _round(120.0, 8.0))
    line = VersusLitert("cpu", 1, 300, 10, rounds, cpus=2).line()
    assert "median inference rate over the rounds, 123.1/s (round 1, the run above: 148.3/s)" in line
    one = VersusLitert("cpu", 1, 300, 10, rounds[:1], cpus=2).line()
    assert one.startswith("inference: 1.19 of LiteRT's benchmark_litert_model (1 round; the pipeline's inference ")
    assert "rate, 148.3/s (the run above), against the tool's back-to-back runs of the model alone, 125.0/s;" in one
    assert "median" not in one and "rounds" not in one


def test_other_processes_cpu_is_the_machines_busy_share_less_this_processs():
    assert versus.others_cores(75.0, 100.0, 2) == pytest.approx(0.5)  # 1.5 cores busy, 1.0 of them ours
    assert versus.others_cores(40.0, 100.0, 2) == 0.0  # tick rounding can read ours above the machine's


def test_the_json_holds_to_the_bench_schemas_versus_litert():
    doc = VersusLitert("gpu", 4, 300, 10, (_round(98.0, 10.0), _round(97.0, 10.0, True, None)), cpus=16).to_dict()
    assert doc["ratio"] == pytest.approx(0.975) and (doc["ratio_min"], doc["ratio_max"]) == pytest.approx((0.97, 0.98))
    assert [r["order"] for r in doc["rounds"]] == ["pipeline, tool", "tool, pipeline"]
    part = schema(OutputKind.BENCH)["properties"]["versus_litert"]  # type: ignore[index]
    Draft202012Validator(part).validate(json.loads(json.dumps(doc)))
    with pytest.raises(Exception, match="rounds"):
        Draft202012Validator(part).validate({**doc, "rounds": []})


def _summary(fps: float, used: str = "cpu", inferences: int = 120) -> SimpleNamespace:
    """A bench summary's figures that the comparison reads, as a run recorded them."""
    latency = {"inference": SimpleNamespace(p50=1000 / fps)}
    return SimpleNamespace(
        delegate=SimpleNamespace(used=used),
        metrics=SimpleNamespace(inference_fps=fps, inferences_total=inferences, latency=latency),
        bottleneck=SimpleNamespace(stage="inference"),
        measured_cpu=SimpleNamespace(seconds=1.2, system_cpu_pct=90.0, process_cpu_pct_cores=100.0),
    )


def _plan(rounds: int) -> RunPlan:
    plan = bench_command.plan_of(_parser().parse_args(["--no-pace", "--threads", "2", "--warmup", "7"]))
    return RunPlan(plan.config, plan.feed, warmup=plan.warmup, versus_litert=rounds)


def test_rounds_interleave_the_run_made_first_then_alternate_the_order():
    calls: list[tuple] = []
    rates = iter([100.0, 101.0, 102.0])

    def tool(model, accelerator, threads, runs, warmup):
        calls.append(("tool", accelerator, threads, runs, warmup))
        return _tool(10.0)

    def pipeline(plan):
        calls.append(("pipeline", plan.versus_litert))
        return _summary(next(rates))

    result = versus.versus_litert(_plan(4), _summary(99.0), INT8, tool=tool, pipeline=pipeline)  # type: ignore[arg-type]
    # Round 1's pipeline leg is the run already made; then tool first, pipeline first, tool first.
    assert [c[0] for c in calls] == ["tool", "tool", "pipeline", "pipeline", "tool", "tool", "pipeline"]
    assert {c[1:] for c in calls if c[0] == "tool"} == {("cpu", 2, 120, 7)}  # threads, runs = measured, warm-up
    assert [r.pipeline_fps for r in result.rounds] == [99.0, 100.0, 101.0, 102.0]
    assert [r.tool_first for r in result.rounds] == [False, True, False, True]
    assert result.ratio == pytest.approx(1.005) and (result.threads, result.runs) == (2, 120)
    # The pipeline's span read 90% of the machine busy, 100% of a core this process's: others took the rest.
    cpus = os.cpu_count() or 1
    assert all(r.others_cores is not None and r.others_cores >= (90.0 * cpus - 100.0) / 100 for r in result.rounds)


def test_a_rounds_pipeline_run_records_traces_idles_and_compares_nothing(tmp_path):
    plan = replace(_plan(3), csv=tmp_path / "run.csv", trace=tmp_path / "t.json", idle_s=2.0)
    again = versus.plan_again(plan)
    assert (again.csv, again.trace, again.idle_readings, again.versus_litert) == (None, None, (), None)
    assert (again.config, again.feed, again.frames, again.warmup) == (plan.config, plan.feed, plan.frames, plan.warmup)


def test_the_tool_runs_on_the_delegate_the_pipeline_used():
    seen: list[str] = []

    def tool(model: Path, accelerator: str, *rest: int) -> dict[str, Any]:
        seen.append(accelerator)
        return _tool(10.0)

    fell_back = _summary(50.0, used="cpu")
    plan = _plan(1)
    plan = replace(plan, config=replace(plan.config, delegate="gpu"))
    versus.versus_litert(plan, fell_back, INT8, tool=tool)  # type: ignore[arg-type]
    assert seen == ["cpu"]
    with pytest.raises(UsageError, match="ran on coreml"):
        versus.versus_litert(plan, _summary(50.0, used="coreml"), INT8, tool=lambda *a: _tool(10.0))  # type: ignore[arg-type]


# --- what cannot be compared: exit 2, the option named ------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    bench_command.add_arguments(p)
    return p


def _plan_of(*argv: str) -> RunPlan:
    return bench_command.plan_of(_parser().parse_args(list(argv)))


@pytest.mark.parametrize(
    "argv, named",
    [
        (["--versus-litert"], "--source demo is read at its own pace (add --no-pace)"),
        (["--versus-litert", "--no-pace", "--source", "camera:0"], "--source camera:0 is read at its own pace"),
        (["--versus-litert", "--no-pace", "--throttle-ms", "5"], "--throttle-ms 5"),
        (["--versus-litert", "--no-pace", "--delegate", "coreml"], "--delegate coreml"),
        (["--versus-litert", "--no-pace", "--delegate", "reference"], "--delegate reference"),
        (["--versus-litert", "--no-pace", "--input-shape", "0=1x224x224x3"], "--input-shape"),
        (["--versus-litert", "--no-pace", "--delegate", "gpu", "--gpu-precision", "fp32"], "--gpu-precision fp32"),
        (["--versus-litert", "--no-pace", "--delegate", "gpu", "--gpu-wait-hint"], "--gpu-wait-hint"),
        (["--versus-litert", "--no-pace", "--compare-with", "cpu"], "--versus-litert does not apply to A/B"),
    ],
    ids=["paced", "camera", "throttle", "coreml", "reference", "input-shape", "fp32", "wait-hint", "a-b"],
)
def test_a_run_the_tool_cannot_repeat_is_refused_naming_the_option(argv, named):
    with pytest.raises(UsageError) as caught:
        _plan_of(*argv)
    assert named in str(caught.value) and caught.value.exit_code == 2


def test_rounds_are_the_options_value_or_the_default():
    assert _plan_of("--no-pace", "--versus-litert").versus_litert == versus.DEFAULT_VERSUS_ROUNDS
    assert _plan_of("--no-pace", "--versus-litert", "3").versus_litert == 3
    assert _plan_of("--no-pace").versus_litert is None
    assert _plan_of("--no-pace", "--versus-litert", "3").to_dict()["versus_litert"] == 3
    assert "versus_litert" not in _plan_of("--no-pace").to_dict()  # the plan's JSON as it was without it
    assert _plan_of("--source", "synthetic", "--no-pace", "--delegate", "gpu", "--versus-litert").versus_litert


def test_an_install_without_the_tool_is_refused_by_name(monkeypatch):
    monkeypatch.setattr(versus, "TOOL_MODULE", "ai_edge_litert.tools.no_such_tool")
    with pytest.raises(UsageError, match=r"--versus-litert: ai_edge_litert\.tools\.no_such_tool is not in this"):
        _plan_of("--no-pace", "--versus-litert")


def test_the_refusal_is_one_line_and_exit_2_from_the_command():
    assert_one_line_error(run_cli("bench", "--versus-litert", "--frames", "5"), 2, "--versus-litert", "--no-pace")


# --- real runs ------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_real_tool_runs_and_its_result_reads():
    run = ToolRun.of(versus.run_tool(INT8, "cpu", 1, 5, 1))
    assert run.runs == 5 and run.threads == 1 and run.accelerators == ("CPU",) and run.rate > 0
    with pytest.raises(BackendUnavailable, match="Model file not found"):
        versus.run_tool(INT8.with_name("no_such_model.tflite"), "cpu", 1, 5, 1)


@pytest.mark.slow
def test_the_installed_console_script_prints_the_ratio_and_writes_it(tmp_path):
    """`delegate-scope bench --versus-litert 2` from outside the source tree: the line, and the JSON's
    `versus_litert` (checked against the schema by tests/conftest.py at teardown)."""
    script = Path(sys.executable).parent / "delegate-scope"
    if not script.exists():
        pytest.skip("no delegate-scope console script beside this interpreter (not installed)")
    out = tmp_path / "summary.json"
    argv = [str(script), "bench", "--model", "efficientnet_lite0_int8", "--source", "synthetic", "--no-pace",
            "--threads", "1", "--frames", "40", "--warmup", "3", "--versus-litert", "2",
            "--json", str(out)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    line = proc.stdout.strip().splitlines()[-1]
    shape = (r"inference: \d+\.\d\d of LiteRT's benchmark_litert_model \(median of 2 rounds, range [\d.]+-[\d.]+; "
             r".*CPU, 1 thread, \d+ runs a leg(; other processes took up to [\d.]+ of \d+ cores)?\)")  # fmt: skip
    assert re.fullmatch(shape, line), line
    doc = json.loads(out.read_text())["versus_litert"]
    assert len(doc["rounds"]) == 2 and doc["threads"] == 1 and doc["accelerator"] == "cpu"
    assert {r["tool"]["runs"] for r in doc["rounds"]} == {doc["runs"]} and doc["runs"] >= 40
    assert doc["ratio"] == pytest.approx(median([r["ratio"] for r in doc["rounds"]]))
    assert f"{doc['ratio']:.2f}" in line


@pytest.mark.slow
def test_a_tool_run_that_fails_is_exit_5_with_the_tools_own_reason(tmp_path):
    """The README's exit 5: LiteRT's tool refusing the file is the backend being unavailable, said in one line."""
    from app.errors import BackendUnavailable
    from app.tasks.versus_litert import run_tool

    not_a_model = tmp_path / "not_a_model.tflite"
    not_a_model.write_bytes(b"this is not a flatbuffer")
    with pytest.raises(BackendUnavailable) as caught:
        run_tool(not_a_model, "cpu", 1, 2, 1)
    assert caught.value.exit_code == 5 and "failed (exit" in str(caught.value) and "\n" not in str(caught.value)
