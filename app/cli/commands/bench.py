"""`delegate-scope bench`: the live pipeline run headless and summarised; with --compare-with, A
against B on the same frames."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from app.backends import BACKENDS
from app.backends.describe import delegation_line
from app.cli.command import Command
from app.cli.options import (
    add_backend_options,
    add_gate_options,
    add_model_options,
    add_score_threshold,
    backend_options,
    model_options,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
)
from app.cli.output import check_writable, finish_gate, print_prediction, warn
from app.errors import UsageError
from app.gates.baseline import load_baseline
from app.gates.budget import Budget, parse_budgets
from app.gates.figures import SummaryKind
from app.gates.stored import StoredSummary, ab_identity, bench_identity, summary_of
from app.gates.verdict import GateReport, evaluate
from app.metrics.end_to_end import end_to_end_parts
from app.metrics.energy import paced_clock_sentence, power_lines
from app.metrics.rounds import DEFAULT_ROUNDS
from app.metrics.window import MetricsSnapshot
from app.model.spec import ModelSpec, load_model_spec
from app.pipeline import InferenceConfig
from app.pipeline.frame_slot import NOT_INFERRED, OVERWRITTEN
from app.pipeline.plan import FeedPlan
from app.recording.trace import TraceFacts
from app.recording.writer import sidecar_path
from app.schemas import versioned
from app.system.redact import redact_credentials
from app.tasks.bench import IDLE_S, BenchSummary, gpu_process_pays, run_bench
from app.tasks.plan import DEFAULT_ALONE_S, DEFAULT_FRAMES, RunPlan, RunState
from app.tasks.versus_litert import DEFAULT_VERSUS_ROUNDS, VersusLitert, VersusRound, versus_litert
from app.tasks.versus_litert import check as check_versus

if TYPE_CHECKING:
    from app.tasks.bench_compare import CompareSummary


def add_arguments(b: argparse.ArgumentParser) -> None:
    add_model_options(b)
    add_backend_options(b)
    add_score_threshold(b)
    _add_source_options(b.add_argument_group("the source and what is measured"))
    _add_thread_options(b.add_argument_group("threads and CPUs"))
    _add_gpu_options(b.add_argument_group("GPU"))
    _add_output_options(b.add_argument_group("output and gates"))
    _add_compare_options(b.add_argument_group("A/B: the same frames through side B's own backend session"))


def _add_source_options(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--source", default="demo", help="camera:N, video:PATH, images:PATH, demo (default), synthetic")
    limit = g.add_mutually_exclusive_group()
    limit.add_argument("--frames", type=positive_int, help=f"inferences to measure (default {DEFAULT_FRAMES})")
    limit.add_argument("--seconds", type=positive_float, help="measure for this long instead")
    g.add_argument("--throttle-ms", type=non_negative_float, default=0.0, help="delay between inference starts")
    g.add_argument("--warmup", type=non_negative_int, default=10, help="inferences left out of the figures")
    g.add_argument(
        "--warm-seconds",
        type=non_negative_float,
        default=0.0,
        help="let the warm-up last at least this long before measuring, at the run's pace: with --no-pace the "
        "device is held busy and its clocks up (a GPU's first seconds may run at its idle clock); default 0",
    )
    g.add_argument("--no-pace", action="store_true", help="read video files as fast as possible")
    g.add_argument(
        "--rounds",
        type=positive_int,
        default=DEFAULT_ROUNDS,
        help=f"cut the measured span into this many rounds of equal time: each figure's median over them and their "
        f"spread go in --json and gates (default {DEFAULT_ROUNDS})",
    )
    g.add_argument(
        "--idle-seconds",
        type=non_negative_float,
        help=f"idle the machine this long before the run, reading its power (what 'above idle' takes off); "
        f"default {IDLE_S:g} where an energy counter is readable (NVML, RAPL), else 0",
    )


def _add_thread_options(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--no-pin",
        action="store_true",
        help="let every thread run on any CPU (default on Linux: the inference thread gets CPUs of its own, "
        "the capture and other threads the rest, when there are more CPUs than --threads; A/B runs never pin)",
    )
    g.add_argument(
        "--inference-cpus",
        type=positive_int,
        help="CPUs pinned for the inference thread (default by backend: --threads on the CPU, 1 for an "
        "accelerator; not in A/B, which never pins)",
    )
    g.add_argument(
        "--decode-threads",
        type=non_negative_int,
        default=None,
        help="FFmpeg threads decoding a video file (default: 1 on machines of up to 4 CPUs, else 2; 0: one per core)",
    )
    g.add_argument(
        "--preprocess-thread",
        choices=("auto", "on", "off"),
        default="auto",
        help="preprocess frames on a thread of their own, beside decoding (auto, the default: where the process "
        "has a CPU for each besides the model's inference, both sides' in A/B; bench's 'preproc' line says which "
        "and why)",
    )


def _add_gpu_options(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--gpu-wait-hint",
        action="store_true",
        help="GPU: ask LiteRT to let the inference thread sleep, not spin, while the GPU works "
        "(hint_waiting_for_completion); off by default, as with NVIDIA's driver it measured no lower CPU per "
        "inference: compare bench's CPU per inference with and without it (docs/pipeline.md)",
    )
    g.add_argument(
        "--gpu-process",
        choices=("auto", "on", "off"),
        default="auto",
        help="run the session in a process of its own, two frames queued, so the pipeline's Python never "
        "stands between two runs (auto, the default: where nothing paces the runs, a file or the synthetic source with "
        "--no-pace and no throttle, and the model is a classifier of one image; not in A/B; docs/guide.md)",
    )


def _add_output_options(g: argparse._ArgumentGroup) -> None:
    g.add_argument("--csv", type=Path, help="record one row per inference (docs/csv-format.md)")
    g.add_argument("--json", type=Path, dest="json_file", help="write the summary as JSON to this file")
    g.add_argument(
        "--trace",
        type=Path,
        metavar="FILE.json",
        help="write the run's timeline (every frame's stages on every thread, CPU, memory and GPU counters) as "
        "Chrome's trace event JSON: open it in ui.perfetto.dev or chrome://tracing (docs/guide.md)",
    )
    g.add_argument(
        "--versus-litert",
        nargs="?",
        type=positive_int,
        const=DEFAULT_VERSUS_ROUNDS,
        metavar="ROUNDS",
        help="after the run, LiteRT's own benchmark_litert_model on the same model, threads and accelerator, in "
        f"ROUNDS rounds interleaved with the pipeline (default {DEFAULT_VERSUS_ROUNDS}): the pipeline's inference "
        "rate as a share of the model's alone; CPU or GPU, with --no-pace and no throttle (docs/howto-overhead.md)",
    )
    add_gate_options(g)


def _add_compare_options(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--compare-with",
        choices=list(BACKENDS),
        help="run the same frames through side B's own backend session on this delegate",
    )
    g.add_argument("--compare-model", help="B's model (default: A's); fp32 vs int8, for instance")
    # --compare-labels: B's labels (agreement compares class indices, never label text: app/model/agreement.py).
    g.add_argument(
        "--compare-labels",
        type=Path,
        help="B's labels file, one label per line (default: A's --labels, else B's model's own)",
    )
    g.add_argument(
        "--compare-alone-seconds",
        type=non_negative_float,
        default=DEFAULT_ALONE_S,
        help=f"first run each side alone this long, to show what sharing the machine costs "
        f"(default {DEFAULT_ALONE_S:g})",
    )


# Options that an A/B run cannot honour, and why: refused by name (exit 2) rather than dropped.
_NOT_IN_AB = {
    "inference_cpus": "--inference-cpus pins the inference thread, and an A/B run has two, never pinned "
    "(one inference thread per process may be: app/system/cpu_affinity.py)",
    "versus_litert": "LiteRT's benchmark_litert_model runs one model on one accelerator: compare each side in a "
    "run of its own",
}


def plan_of(args: argparse.Namespace) -> RunPlan:
    """Every setting of the run, from the command line, checked: the one place options become a plan.
    A bad model is exit 3 and a setting A/B cannot honour exit 2, before anything starts."""
    return _plan_and_model(args)[0]


def _plan_and_model(args: argparse.Namespace) -> tuple[RunPlan, ModelSpec]:
    """The plan, and side A's model as read to check it (its sha256 names the workload a baseline must share)."""
    config = InferenceConfig(
        model=args.model,
        labels=args.labels,
        delegate=args.delegate,
        options=backend_options(args),
        fallback=not args.no_fallback,  # refused: the open itself fails (exit 5), so nothing can fall back later
        throttle_ms=args.throttle_ms,
        top_k=5,
        model_options=model_options(args),
        score_threshold=args.score_threshold,
    )
    spec = load_model_spec(args.model, labels_file=args.labels, options=model_options(args))
    compare = bool(args.compare_with or args.compare_model or args.compare_labels)
    if compare:
        for dest, why in _NOT_IN_AB.items():
            if getattr(args, dest) is not None:
                raise UsageError(f"--{dest.replace('_', '-')} does not apply to A/B: {why}")
    elif args.compare_alone_seconds != DEFAULT_ALONE_S:
        raise UsageError("--compare-alone-seconds applies to A/B only: add --compare-with or --compare-model")
    # auto: one run's own choice (an A/B keeps both sides in this process, on equal terms)
    pace = not args.no_pace
    auto = args.gpu_process == "auto" and not compare and gpu_process_pays(config, spec, args.source, pace=pace)
    config = replace(config, options=replace(config.options, own_process=args.gpu_process == "on" or auto))
    b = _side_b(args, config) if compare else None
    if b is not None and (args.compare_model or args.compare_labels):  # B's model and labels: exit 3 now
        load_model_spec(b.model, labels_file=b.labels, options=b.model_options)
    feed = FeedPlan(
        source=args.source,
        pace=pace,
        decode_threads=args.decode_threads,
        pin_cpus=not args.no_pin and not compare,  # A/B never pins
        inference_cpus=args.inference_cpus,
        preprocess_thread={"auto": None, "on": True, "off": False}[args.preprocess_thread],
    )
    plan = RunPlan(
        config=config,
        feed=feed,
        compare=b,
        alone_s=args.compare_alone_seconds,
        frames=args.frames if args.frames or args.seconds else DEFAULT_FRAMES,
        seconds=args.seconds,
        warmup=args.warmup,
        warm_s=args.warm_seconds,
        rounds=args.rounds,
        idle_s=args.idle_seconds,
        csv=args.csv,
        gpu_process=args.gpu_process,
        trace=args.trace,
        versus_litert=args.versus_litert,
    )
    check_versus(plan)  # a run the tool cannot repeat: exit 2, before anything starts
    return plan, spec


def run(args: argparse.Namespace) -> int:
    if args.csv and args.json_file and sidecar_path(args.csv).resolve() == args.json_file.resolve():
        raise UsageError(f"--json {args.json_file} would overwrite the recording's own sidecar; pick another name")
    if args.csv and args.csv.exists():
        raise UsageError(f"{args.csv} exists; recordings are never overwritten")
    if args.trace:
        check_writable(args.trace, "--trace")  # said before the run, not after it
    plan, spec = _plan_and_model(args)  # the model read once: its sha256 names the workload
    sha256 = spec.sha256
    gate = _gate_plan(args, plan, sha256)  # a bad baseline or budget: exit 2 before anything runs
    if plan.compares:
        return _compare_bench(args, plan, gate)
    summary = run_bench(plan, RunState(progress=_progress if sys.stderr.isatty() else None))
    if sys.stderr.isatty():
        print(file=sys.stderr)
    out = summary.to_dict()
    versus = _versus(plan, summary, spec)
    if versus is not None:
        out["versus_litert"] = versus.to_dict()
    report = _gate(gate, out, SummaryKind.BENCH) if summary.error() is None else None
    if report is not None:
        out["gates"] = report.to_dict()
    if args.json_file:
        text = redact_credentials(json.dumps(versioned(out), indent=2, default=str))
        args.json_file.write_text(text + "\n", encoding="utf-8")
    error = summary.error()
    if error is not None:  # the cause is the one line to show, with its own exit code
        raise error
    for event in summary.events:
        if event.kind in ("fallback", "switch_failed", "source_lost", "error", "bad_frame"):
            warn(f"{event.kind}: {event.message}")
    _print_bench(summary, paced=plan.feed.pace)
    if versus is not None:
        print(versus.line())
    if report is not None:
        finish_gate(report)
    return 0


def _versus(plan: RunPlan, summary: BenchSummary, spec: ModelSpec) -> VersusLitert | None:
    """--versus-litert: the tool's rounds after a run that ended well; None when not asked for."""
    if not plan.versus_litert or summary.error() is not None:
        return None
    tty = sys.stderr.isatty()
    versus = versus_litert(plan, summary, spec.path, _versus_progress if tty else None)
    if tty:
        print(file=sys.stderr)
    return versus


def _versus_progress(done: int, total: int, last: VersusRound) -> None:
    print(f"\rversus LiteRT: round {done} of {total}, {last.ratio:.2f}", end="", file=sys.stderr, flush=True)


_Gate = tuple[StoredSummary | None, list[Budget]]


def _gate_plan(args: argparse.Namespace, plan: RunPlan, sha256: str) -> _Gate | None:
    """The baseline (checked: same workload) and the budgets, or None when no gate was asked for."""
    if not args.baseline and not args.budget:
        return None
    config, b = plan.config, plan.compare
    kind = SummaryKind.BENCH_AB if b is not None else SummaryKind.BENCH
    base = None
    if args.baseline:
        # As the baseline's JSON spells the source: a stream's password never reaches a file.
        source = redact_credentials(args.source)
        if b is not None:
            b_sha = load_model_spec(b.model, options=b.model_options).sha256 if b.model != config.model else sha256
            identity, settings = ab_identity({"A": (config.to_dict(), sha256), "B": (b.to_dict(), b_sha)}, source)
        else:
            identity, settings = bench_identity(config.to_dict(), source, sha256)
        base = load_baseline(args.baseline, kind, identity, settings, strict=args.strict_config)
    return base, parse_budgets(args.budget, kind, baseline=base is not None)


def _gate(gate: _Gate | None, out: dict[str, object], kind: SummaryKind) -> GateReport | None:
    if gate is None:
        return None
    # Read back as its JSON file would be: one reader for a baseline and for this run.
    run = summary_of(json.loads(json.dumps(out, default=str)), "this run")
    assert run.kind == kind
    return evaluate(run, gate[0], gate[1])


def _progress(done: int, total: int | None, snap: MetricsSnapshot) -> None:
    bar = ""
    if total:
        filled = int(30 * min(done, total) / total)
        bar = "[" + "#" * filled + "." * (30 - filled) + f"] {done}/{total} "
    print(
        f"\r{bar}{snap.inference_fps:6.1f} inf/s, inference p50 {snap.latency['inference'].p50:.2f} ms",
        end="",
        file=sys.stderr,
        flush=True,
    )


def _print_bench(summary: BenchSummary, paced: bool = False) -> None:
    _print_what_ran(summary)
    _print_rates(summary)
    _print_costs(summary, paced)


def _print_what_ran(summary: BenchSummary) -> None:
    """The model, source, delegate and task lines."""
    d, src = summary.delegate, summary.source
    opened = [e.model for e in summary.events if e.model is not None]
    if opened:  # the model that ran last (a switch can change it)
        print(f"model     {opened[-1].name}  ({opened[-1].path})")
    size = f"{src.width}x{src.height} @ {src.fps:.1f} fps" if src else f"?x? @ {0:.1f} fps"
    print(f"source    {src.spec if src else summary.source_spec}  {size}")
    if d:
        print(f"delegate  {delegation_line(d)}")
        print_prediction(d)
    if summary.feed is not None:  # inputs that are not the frame: which feeder gave them
        feed = summary.feed
        print("inputs    " + (feed.describe() if feed.source != "none" else "the frame only (no other input)"))
    if summary.task is not None:
        print(f"task      {summary.task.task}: {summary.task.describe()}")


def _print_rates(summary: BenchSummary) -> None:
    """What was measured, the rate and what bounds it, where preprocessing ran, the CPUs and each stage."""
    m = summary.metrics
    print(
        f"measured  {m.inferences_total} inferences in {m.window_s:.1f} s; "
        f"{m.frames_total} frames captured, {m.dropped_total} {NOT_INFERRED} ({OVERWRITTEN})"
        + (f", {m.results_dropped_total} inferred but not published (the results stage slower: the newest kept)"
           if m.results_dropped_total else "")
    )
    print(f"rate      capture {m.capture_fps:.1f} fps, inference {m.inference_fps:.1f} fps")
    if summary.bottleneck:
        print(f"bound     {summary.bottleneck.sentence}")
    if summary.placement is not None:
        print(f"preproc   {summary.placement.reason}")
    reused = summary.repeated_images_reused
    if reused:
        print(
            f"{'preproc' if summary.placement is None else '':<10}{reused} frames repeated an image already "
            "preprocessed (the synthetic cycle): not preprocessed again (their preprocess figure is the lookup)"
        )
    split = summary.cpu_affinity
    print("cpus      " + (split.describe() if split else "not pinned (every thread on any CPU)"))
    print(f"{'stage':<12}{'mean':>9}{'p50':>9}{'p95':>9}{'max':>9}  ms")
    for stage, st in m.latency.items():
        print(f"{stage:<12}{st.mean:>9.2f}{st.p50:>9.2f}{st.p95:>9.2f}{st.max:>9.2f}")
    parts = end_to_end_parts(m)
    if parts is not None:  # what the end to end is made of: means add up where percentiles do not
        print(f"e2e       {parts.describe()}")


def _print_costs(summary: BenchSummary, paced: bool) -> None:
    """CPU, memory, GPU and power per inference, start-up, and the recording."""
    m = summary.metrics
    cpu, cores = m.process_cpu_pct_machine, m.process_cpu_pct_cores
    print(
        f"cpu       {m.cpu_ms_per_inference:.2f} ms CPU per inference ({m.cpu_per_wall:.2f}x its wall time); "
        + (f"process {cpu:.0f}% of the machine ({cores:.0f}% summed over cores)" if cpu is not None else "process n/a")
        + (f", system {m.system_cpu_pct:.0f}%" if m.system_cpu_pct is not None else "")
    )
    if m.waited_ms_per_inference is not None and m.slept_ms_per_inference is not None:
        print(
            f"          the inference thread waited {m.waited_ms_per_inference:.2f} ms per inference for a core "
            f"and slept {m.slept_ms_per_inference:.2f} ms (on the device, a lock or the other side)"
        )
    if summary.memory is not None:
        print(f"memory    {summary.memory.describe()}")
    elif m.rss_mb is not None:
        print(f"memory    RSS {m.rss_mb:.0f} MB")
    if m.gpu_util_pct:
        print(f"gpu       {m.gpu_util_pct:.0f}% utilised (NVML)")
    if m.gpu_busy_ms_per_inference:  # the GPU's own evidence: its CPU thread spins, so CPU time says nothing
        print(f"gpu       busy {m.gpu_busy_ms_per_inference:.2f} ms per inference (NVML utilisation x interval)")
    if summary.power is not None:
        gpu_line, cpu_line = power_lines(summary.power)
        print(f"power     {gpu_line}\n          {cpu_line}")
        paced_rate = m.capture_fps if paced else None
        sentence = paced_clock_sentence(f"GPU at {paced_rate:.0f} fps", summary.power) if paced_rate else None
        if sentence:  # the speed above was measured at the GPU's idle clock
            print(f"          {sentence}")
    if summary.first_result_s is not None:
        print(f"start-up  first result {summary.first_result_s:.2f} s after the process started")
    if summary.csv:
        c = summary.csv
        print(f"csv       {c.path}: {c.rows} rows, {c.lost_rows} lost" + (f"; {c.error}" if c.error else ""))
    if summary.trace:
        print(f"trace     {_trace_line(summary.trace)}")


def _trace_line(t: TraceFacts) -> str:
    cut = "; the oldest records were pushed out (the log was full)" if t.truncated else ""
    return (f"{t.path}: {t.frames} inferred frames on {len(t.threads)} threads ({', '.join(t.threads)}), "
            f"{t.events} events; open it in ui.perfetto.dev{cut}")  # fmt: skip


def _side_b(args: argparse.Namespace, a: InferenceConfig) -> InferenceConfig:
    """A/B: B is A with the other delegate, model and/or labels."""
    return replace(a, delegate=args.compare_with or a.delegate, model=args.compare_model or a.model,
                   labels=args.compare_labels or a.labels)  # fmt: skip


def _compare_bench(args: argparse.Namespace, plan: RunPlan, gate: _Gate | None) -> int:
    from app.tasks.bench_compare import run_compare_bench, side_recording  # the A/B machinery only when asked for

    if plan.csv:
        for side in ("a", "b"):
            if side_recording(plan.csv, side).exists():
                raise UsageError(f"{side_recording(plan.csv, side)} exists; recordings are never overwritten")
    summary = run_compare_bench(plan)  # a side's error: its own typed error
    out = summary.to_dict()
    report = _gate(gate, out, SummaryKind.BENCH_AB)
    if report is not None:
        out["gates"] = report.to_dict()
    if args.json_file:
        text = redact_credentials(json.dumps(versioned(out), indent=2, default=str))
        args.json_file.write_text(text + "\n", encoding="utf-8")
    _print_compare(summary)
    for name in ("a", "b"):
        delegate = summary.side(name).delegate
        if delegate and delegate.fallback_reason:
            warn(f"side {name.upper()} fell back: {delegate.fallback_reason}")
    if report is not None:
        finish_gate(report)
    return 0


def _print_compare(summary: CompareSummary) -> None:
    def side_line(name: str) -> str:
        s = summary.side(name)
        d, t = s.delegate, s.together
        used = (d.used if d else "?") + (f" (requested {d.requested})" if d and d.fallback_reason else "")
        alone_text = f", alone {s.alone.inference_fps:.1f}/s" if s.alone else ""
        median = s.inference_ms_median
        return (
            f"{name.upper()}  {Path(str(s.config.model)).name} on {used}: inference median "
            f"{median:.2f} ms, {t.inference_fps:.1f}/s together{alone_text}, "
            f"CPU {t.cpu_ms_per_inference:.2f} ms per inference ("
            + (
                "TensorFlow's child process, from its own clock, + this side's thread"
                if d and d.used == "reference"
                else "its own thread and its runtime's"
            )
            + ")"
            if median is not None
            else f"{name.upper()}  no inference measured"
        )

    print(side_line("a"))
    print(side_line("b"))
    a_mem, b_mem = summary.a.memory, summary.b.memory
    if a_mem is not None and b_mem is not None:  # init is each side's open; the rest the shared process's
        print(f"memory     A {a_mem.describe_init()}; B {b_mem.describe_init()}")
        print(f"           the process, both sides: {a_mem.describe_run()}")
    print(f"agreement  {summary.agreement.describe()}")
    print(f"speed      {summary.speed_sentence}")
    if summary.clock_sentence:  # a paced GPU at its idle clock: the speeds above are not the GPU's flat out
        print(f"           {summary.clock_sentence}")
    if summary.power is not None:
        gpu_line, cpu_line = power_lines(summary.power)
        print(f"power      {gpu_line}\n           {cpu_line}")
    if summary.placement is not None:  # one preprocessing per frame, shared by both sides
        print(f"preproc    {summary.placement.reason}; shared by A and B")
    if summary.shared_computed_again:  # the sharing above failed for these frames: never silently
        print(f"           {summary.shared_computed_again} frames preprocessed again for the later side: their "
              "pixels had left the cache before it took them")  # fmt: skip
    if summary.csv:
        c = summary.csv
        print(f"csv        {c.path}: {c.rows} compared frames; each side's recording: "
              f"{c.sessions['a']}, {c.sessions['b']} (delegate-scope report renders the pair)")  # fmt: skip
    if summary.trace:
        print(f"trace      {_trace_line(summary.trace)}")


COMMAND = Command(
    name="bench",
    help="run the live pipeline headless and summarise it",
    description="Run the live pipeline (capture thread, throttled inference thread) on a source and summarise "
    "throughput, latency per stage, CPU and delegation, as the window would show them.",
    add_arguments=add_arguments,
    run=run,
)
