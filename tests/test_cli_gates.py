"""Gates on the command line: bench and sweep with --baseline/--budget, compare on stored
summaries, the exit code 7 and the one-line errors; real runs, real files (tests/data/gates: summaries
written by this version's bench, sweep and inspect --json on this machine). The refusals and `compare`
on stored files run in processes forked from one that imported the app (tests/helpers/forked_cli.py),
the gated runs in a fresh interpreter each."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.model.spec import load_model_spec
from tests.helpers.cli import assert_one_line_error, run_cli
from tests.helpers.forked_cli import ForkedCli
from tests.helpers.paths import ROOT

GATES = ROOT / "tests" / "data" / "gates"
QUICK = ("--source", "synthetic", "--no-pace", "--frames", "60", "--warmup", "5")


def _scaled_baseline(tmp_path: Path, factor: float) -> Path:
    """The stored 2-thread summary with every timing figure (whole span and rounds) times `factor`:
    a baseline from a machine `1/factor` times faster, so that the gate's outcome does not hang on this
    machine's load."""
    data = json.loads((GATES / "bench_2threads.json").read_text())
    for stats in data["metrics"]["latency"].values():
        for key in ("mean", "p50", "p95", "max"):
            stats[key] *= factor
    for name, spread in data["rounds"]["figures"].items():
        if "." in name:  # latencies (rate and CPU figures stay)
            spread["values"] = [v * factor for v in spread["values"]]
            for key in ("median", "min", "max"):
                spread[key] *= factor
    path = tmp_path / "base.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.slow
def test_a_run_at_one_thread_against_a_faster_two_thread_baseline_fails_naming_inference_p50(tmp_path: Path):
    base = _scaled_baseline(tmp_path, 0.25)
    run = run_cli("bench", *QUICK, "--threads", "1", "--baseline", base, "--json", tmp_path / "run.json", fresh=True)
    assert_one_line_error(run, 7, "inference.p50<=+10%")
    assert "differs   threads 2 there, 1 here" in run.stdout  # a setting: shown, not refused
    (row,) = [line for line in run.stdout.splitlines() if line.startswith("inference.p50")]
    assert "FAIL" in row and "<=+10%" in row, row
    gates = json.loads((tmp_path / "run.json").read_text())["gates"]
    assert gates["failed"] >= 1 and not gates["passed"] and gates["budgets"] == ["inference.p50<=+10%", "rate>=-10%"]
    failed = [r for r in gates["rows"] if r["verdict"] == "FAIL"]
    assert failed[0]["figure"] == "inference.p50" and failed[0]["baseline"]["rounds"] == 5


def test_a_generous_budget_passes_and_the_table_follows_the_summary(tmp_path: Path):
    base = _scaled_baseline(tmp_path, 1.0)
    run = run_cli("bench", *QUICK, "--threads", "2", "--baseline", base, "--budget", "inference.p50<=+500%",
                  "--budget", "end_to_end.p95<=10000ms", "--rounds", "3", fresh=True)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.index("start-up") < run.stdout.index("gate      bench baseline")
    assert "differs" not in run.stdout  # same model, source, delegate, threads
    assert "(baseline 5, this run 3)" in run.stdout
    assert "verdict   pass: 2 budget checks held" in run.stdout


@pytest.mark.parametrize(
    "argv,words",
    [
        (["--model", "efficientnet_lite0_int8", "--threads", "2"], "model sha256 268a0e7b6900"),
        (["--source", "demo", "--threads", "2"], "source synthetic there, demo here"),
        (["--source", "synthetic", "--threads", "1", "--strict-config"], "threads 2 there, 1 here"),
    ],
)
def test_a_baseline_of_another_workload_is_a_usage_error_naming_the_difference(
    argv: list[str], words: str, forked_cli: ForkedCli
):
    run = forked_cli.run("bench", "--baseline", GATES / "bench_2threads.json", "--frames", "5", *argv)
    assert_one_line_error(run, 2, f"--baseline {GATES / 'bench_2threads.json'}: ", words)


@pytest.mark.parametrize(
    "argv,words",
    [
        (["--budget", "rate>=-5%"], "--budget 'rate>=-5%' is relative to a baseline"),
        (["--budget", "fps>=30"], "fps is no figure of a bench summary; known: queue.mean"),
        (["--baseline", str(GATES / "sweep.json")], "it holds a sweep summary, and this is bench"),
        (
            ["--compare-model", "efficientnet_lite0_int8", "--baseline", str(GATES / "bench_2threads.json")],
            "it holds a bench summary, and this is bench A/B",
        ),
        (["--budget", "agreement.top1>=0.9"], "agreement.top1 is no figure of a bench summary"),
    ],
)
def test_bad_gates_are_usage_errors_before_anything_runs(argv: list[str], words: str, forked_cli: ForkedCli):
    assert_one_line_error(forked_cli.run("bench", "--frames", "5", *argv, timeout=30), 2, words)


@pytest.mark.slow
def test_an_ab_run_takes_absolute_budgets_on_agreement(tmp_path: Path):
    ab = ("bench", "--source", "synthetic", "--compare-model", "efficientnet_lite0_int8", "--frames", "20",
          "--compare-alone-seconds", "0")  # fmt: skip
    run = run_cli(*ab, "--budget", "agreement.top1>=1.01", "--json", tmp_path / "ab.json", fresh=True)  # never holds
    assert_one_line_error(run, 7, "agreement.top1>=1.01")
    assert json.loads((tmp_path / "ab.json").read_text())["gates"]["kind"] == "bench A/B"
    assert run_cli(*ab, "--budget", "agreement.top1>=0", fresh=True).returncode == 0


@pytest.mark.slow
def test_an_ab_run_is_gated_side_by_side_against_an_ab_baseline(tmp_path: Path):
    ab = ("bench", "--source", "synthetic", "--no-pace", "--compare-model", "efficientnet_lite0_int8",
          "--frames", "20", "--compare-alone-seconds", "0")  # fmt: skip
    base, out = tmp_path / "ab-base.json", tmp_path / "ab-run.json"
    assert run_cli(*ab, "--json", base, fresh=True).returncode == 0
    stored = json.loads(base.read_text())
    int8_sha = load_model_spec("efficientnet_lite0_int8").sha256
    assert stored["b"]["model_sha256"] == int8_sha and stored["b"]["rounds"]["count"] == 5
    # A budget on one side's figure, one on the pair's; loose enough to hold on a loaded machine.
    run = run_cli(*ab, "--baseline", base, "--budget", "B.inference.p50<=+900%", "--budget", "agreement.top1>=0.5",
                  "--json", out, fresh=True)  # fmt: skip
    assert run.returncode == 0, run.stderr
    rows = json.loads(out.read_text())["gates"]["rows"]
    judged = {(r["group"], r["figure"]): r["verdict"] for r in rows if r["budget"]}
    assert judged == {("B", "inference.p50"): "pass", ("A/B", "agreement.top1"): "pass"}
    assert {r["group"] for r in rows} == {"A", "B", "A/B"}
    # Another model on side B is another workload: refused, naming the side's model.
    other = run_cli(*ab[:-4], "--compare-model", "efficientnet_lite0", "--frames", "5", "--baseline", base, fresh=True)
    assert_one_line_error(other, 2, f"--baseline {base}: B model sha256 {int8_sha} there")


@pytest.mark.slow
def test_sweep_rows_are_matched_and_one_missing_on_either_side_is_said(tmp_path: Path):
    base = json.loads((GATES / "sweep.json").read_text())
    two_threads = base["rows"].pop(1)  # only in this run
    base["rows"].append({**two_threads, "model_sha256": "0" * 64, "label": "another model"})  # only in the baseline
    base["rows"][0]["rounds"]["figures"]["inference.p50"]["values"] = [0.01] * 5  # "1 thread": far faster there
    path = tmp_path / "sweep-base.json"
    path.write_text(json.dumps(base))
    run = run_cli("sweep", "--model", "efficientnet_lite0", "--source", "synthetic", "--frames", "10",
                  "--baseline", path, "--budget", "inference.p50<=+10%", "--budget", "agreement.top1>=0.5",
                  "--json", tmp_path / "sweep.json", timeout=300, fresh=True)  # fmt: skip
    assert_one_line_error(run, 7, "CPU 1 thread: inference.p50<=+10%")
    assert "differs   frames 20 there, 10 here" in run.stdout
    assert "unmatched EfficientNet-Lite0 (float32) · CPU 2 threads (all cores): only in this run" in run.stdout
    assert f"unmatched another model: only in {path}" in run.stdout
    gates = json.loads((tmp_path / "sweep.json").read_text())["gates"]
    verdicts = {(r["group"].split(" · ")[-1], r["figure"]): r["verdict"] for r in gates["rows"]}
    assert verdicts[("CPU 1 thread", "inference.p50")] == "FAIL"
    assert verdicts[("CPU 1 thread", "agreement.top1")] == "pass"  # the first configuration agrees with itself
    assert verdicts[("GPU fp16 / fp32", "")] is None  # not measured on either side: said, not failed


@pytest.mark.slow
def test_compare_shows_two_stored_summaries_and_gates_them():
    pair = (GATES / "bench_2threads.json", GATES / "bench_1thread.json")
    shown = run_cli("compare", *pair)
    assert shown.returncode == 0, shown.stderr
    assert "differs   threads 2 there, 1 here" in shown.stdout and "verdict   no budget given" in shown.stdout
    gated = run_cli("compare", *pair, "--budget", "inference.p50<=+10%", "--budget", "rate>=-50%")
    assert_one_line_error(gated, 7, "1 budget failed: inference.p50<=+10%")
    as_json = run_cli("compare", *pair, "--budget", "inference.p50<=+10%", "--json")
    assert as_json.returncode == 7
    out = as_json.json()
    assert out["schema_version"] == 1 and out["gates"]["failed"] == 1


def test_compare_inspect_summaries_per_delegate(forked_cli: ForkedCli):
    pair = (GATES / "inspect_efficientnet_lite0.json", GATES / "inspect_efficientnet_lite0_int8.json")
    run = forked_cli.run("compare", *pair, "--budget", "cpu.nodes>=50", "--budget", "coreml.fallback_nodes<=+0")
    assert_one_line_error(run, 7, "coreml.fallback_nodes<=+0")
    lines = run.stdout.splitlines()
    assert any(line.startswith("cpu (measured)") and "nodes" in line and "pass" in line for line in lines), run.stdout
    assert any(line.startswith("coreml (predicted)") and "FAIL" in line for line in lines), run.stdout


def test_compare_refuses_two_kinds(forked_cli: ForkedCli):
    run = forked_cli.run("compare", GATES / "bench_2threads.json", GATES / "inspect_efficientnet_lite0.json")
    assert_one_line_error(run, 2, "holds a bench summary", "one of inspect: compare needs two of one kind")


def _damaged(tmp_path: Path) -> list[Path]:
    """Each stored summary cut short at a few places, and plain garbage."""
    files = []
    for source in sorted(GATES.glob("*.json")):
        text = source.read_bytes()
        for cut in (1, len(text) // 3, len(text) - 2):
            path = tmp_path / f"{source.stem}-{cut}.json"
            path.write_bytes(text[:cut])
            files.append(path)
    for name, content in (("empty", b""), ("binary", bytes(range(256))), ("array", b"[]"), ("null", b"null"),
                          ("nested", b"[" * 50000 + b"]" * 50000), ("number", b"1e999")):  # fmt: skip
        path = tmp_path / f"{name}.json"
        path.write_bytes(content)
        files.append(path)
    return files


def test_damaged_and_garbage_files_are_one_line_each(tmp_path: Path, forked_cli: ForkedCli):
    from app.errors import UsageError
    from app.gates.stored import read_summary

    for path in _damaged(tmp_path):  # in process: every file
        with pytest.raises(UsageError) as caught:
            read_summary(path)
        assert str(caught.value).startswith(str(path)) and "\n" not in str(caught.value)
    good = GATES / "bench_1thread.json"
    for path in _damaged(tmp_path)[::4]:  # on the command line, as a user meets them: some of them
        assert_one_line_error(forked_cli.run("compare", good, path), 2, str(path))


def test_compare_says_when_two_benches_ran_at_different_gpu_clocks(tmp_path: Path, forked_cli: ForkedCli):
    """A paced bench beside an unpaced one (power sections from counter values recorded on an H200):
    compare says the GPU was at its idle clock in one, with the figures."""
    import json

    from app.metrics.energy import power_figures
    from tests.helpers.power_readings import IDLE, PACED, UNPACED

    stored = json.loads((GATES / "bench_1thread.json").read_text())
    paced, unpaced = tmp_path / "paced.json", tmp_path / "unpaced.json"
    paced.write_text(json.dumps({**stored, "power": power_figures(IDLE, PACED, 420, "gpu").to_dict()}))
    unpaced.write_text(json.dumps({**stored, "power": power_figures(IDLE, UNPACED, 10_780, "gpu").to_dict()}))
    shown = forked_cli.run("compare", paced, unpaced)
    assert shown.returncode == 0, shown.stderr
    assert "clocks    A (paced.json): SM clock 345 MHz, its idle clock; B (unpaced.json): SM clock 1980 MHz" in (
        shown.stdout
    )
    out = forked_cli.run("compare", paced, unpaced, "--json").json()
    assert len(out["clock_sentences"]) == 1 and "different power states" in out["clock_sentences"][0]
    same = forked_cli.run("compare", unpaced, unpaced, "--json").json()
    assert same["clock_sentences"] == []  # like clocks: nothing to say
    plain = forked_cli.run("compare", GATES / "bench_2threads.json", GATES / "bench_1thread.json", "--json").json()
    assert plain["clock_sentences"] == []  # no power section (or, here, no GPU): silent


def _paced_ab_and_unpaced_sweep(tmp_path: Path) -> tuple[Path, Path]:
    """An H200 host's case as stored files: a paced A/B (A: 16 CPU threads, B: the GPU, left at its idle
    clock) and an unpaced sweep of the same model (the GPU at 1980 MHz), from recorded counter values."""
    from app.metrics.energy import power_figures
    from tests.helpers.power_readings import IDLE, PACED, UNPACED

    ab, sweep = (json.loads((GATES / name).read_text()) for name in ("bench_ab.json", "sweep.json"))
    sha = sweep["rows"][0]["model_sha256"]
    cpu, gpu = "XNNPACK (CPU, 16 threads)", "LiteRT GPU (WebGPU, fp32)"
    for side, accelerator, used, ms in (("a", cpu, "cpu", 2.42), ("b", gpu, "gpu", 3.33)):
        ab[side] |= {"model_sha256": sha, "inference_ms_median": ms}
        ab[side]["delegate"] |= {"accelerator": accelerator, "used": used}
    ab["power"] = power_figures(IDLE, PACED, 420, "gpu").to_dict()
    ab["source"] = {"spec": "demo", "paced": True}
    rows = sweep["rows"]
    rows[0] |= {"accelerator": cpu, "latency_p50_ms": 2.06,
                "power": power_figures(IDLE, UNPACED, 7000, "cpu").to_dict()}  # fmt: skip
    rows[2] |= {"accelerator": gpu, "outcome": "measured", "latency_p50_ms": 1.29, "inference_fps": 760.0,
                "power": power_figures(IDLE, UNPACED, 10_780, "gpu").to_dict()}  # fmt: skip
    paths = tmp_path / "ab.json", tmp_path / "sweep.json"
    for path, data in zip(paths, (ab, sweep), strict=True):
        path.write_text(json.dumps(data))
    return paths


def test_compare_sets_a_paced_ab_beside_an_unpaced_sweep_with_each_clock(tmp_path: Path, forked_cli: ForkedCli):
    """The paced A/B says the GPU is slower, the sweep that it is faster; compare shows both
    speeds of each side beside the sweep row of the same accelerator, and why they differ (the clocks)."""
    from tests.helpers.schemas import OutputKind, validate

    ab, sweep = _paced_ab_and_unpaced_sweep(tmp_path)
    for first, second in ((ab, sweep), (sweep, ab)):  # either order
        shown = forked_cli.run("compare", first, second)
        assert shown.returncode == 0, shown.stderr
        out = shown.stdout
        assert "pace      A: XNNPACK (CPU, 16 threads)\n" in out
        assert "pace        the bench's median inference time is 1.17× the sweep's" in out  # 2.42 / 2.06
        assert "pace        the bench's median inference time is 2.58× the sweep's" in out  # 3.33 / 1.29
        assert (
            "speed     B against A: in the bench (source demo, paced) B is 1.38× slower than A; in the sweep "
            "(unpaced) B is 1.60× faster than A" in out
        )
        assert (
            "clocks    B in the bench (ab.json): SM clock 345 MHz, its idle clock; in the sweep (sweep.json): SM "
            "clock 1980 MHz: the two speeds were measured at different power states" in out
        )
        assert out.count("clocks") == 1  # the CPU side: the GPU's clock is not what its speed depends on
    data = forked_cli.run("compare", ab, sweep, "--json").json()
    validate(data, OutputKind.COMPARE, "compare BENCH SWEEP --json")
    b = data["bench_against_sweep"]["pairs"][1]
    assert b["sweep_row"] == "EfficientNet-Lite0 (float32) · GPU fp16 / fp32"
    assert (b["bench"]["sm_clock_mhz"], b["sweep"]["sm_clock_mhz"]) == (345, 1980)
    assert b["bench_over_sweep"] == pytest.approx(3.33 / 1.29)


def test_compare_matches_a_bench_to_a_sweep_row_only_on_the_same_model_and_never_judges(
    tmp_path: Path, forked_cli: ForkedCli
):
    ab, sweep = _paced_ab_and_unpaced_sweep(tmp_path)
    other = json.loads(ab.read_text())
    other["b"]["model_sha256"] = "0" * 64  # B ran another model: no row of the sweep is its configuration
    other["source"] = {"spec": "synthetic"}  # written before an A/B recorded its pace: the spec alone
    ab.write_text(json.dumps(other))
    out = forked_cli.run("compare", ab, sweep, "--json").json()["bench_against_sweep"]
    assert out["pairs"][0]["bench"]["pace"] == "source synthetic"
    assert out["pairs"][1]["sweep"] is None and out["ab_sentence"] is None
    assert out["pairs"][1]["unmatched"] == "no measured row ran LiteRT GPU (WebGPU, fp32) on the same model"
    assert out["pairs"][0]["sweep_row"] is not None  # A still stands beside its row
    judged = forked_cli.run("compare", ab, sweep, "--budget", "inference.p50<=+10%")
    assert_one_line_error(judged, 2, "--budget judges two summaries of one kind")
    inspect = GATES / "inspect_efficientnet_lite0.json"
    assert_one_line_error(forked_cli.run("compare", sweep, inspect), 2, "compare needs two of one kind, or a bench and")
