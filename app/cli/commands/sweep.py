"""`delegate-scope sweep`: the same frames through every configuration this machine offers, side by
side (app/tasks/sweep.py), as a table, JSON and an HTML report (app/report/sweep.py)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from app.cli.command import Command
from app.cli.options import (
    add_gate_options,
    add_model_options,
    model_options,
    non_negative_float,
    non_negative_int,
    positive_int,
)
from app.cli.output import check_writable, finish_gate, warn
from app.errors import UsageError
from app.gates.baseline import load_baseline
from app.gates.budget import parse_budgets
from app.gates.figures import SummaryKind
from app.gates.stored import summary_of
from app.gates.verdict import evaluate
from app.model.spec import load_model_spec
from app.recording.trace import join_runs
from app.report.sweep import check_html_out, check_json_out, header_lines, text_table, write_html
from app.schemas import versioned
from app.sources import capture_frames
from app.system.redact import redact_credentials
from app.tasks.bench import IDLE_S
from app.tasks.sweep import (
    DEFAULT_FRAMES,
    DEFAULT_WARMUP,
    SweepPlan,
    SweepProgress,
    SweepResult,
    default_models,
    plan_sweep,
    run_sweep,
)


def add_arguments(s: argparse.ArgumentParser) -> None:
    s.add_argument(
        "--model",
        action="append",
        dest="models",
        metavar="M",
        help="bundled model name or .tflite path; repeat for several (default: every bundled model)",
    )
    add_model_options(s, model=False)
    s.add_argument("--source", default="demo", help="where the frames come from (default: the demo clip)")
    s.add_argument(
        "--frames",
        type=positive_int,
        default=DEFAULT_FRAMES,
        help=f"frames replayed to each (default {DEFAULT_FRAMES})",
    )
    s.add_argument(
        "--warmup",
        type=non_negative_int,
        default=DEFAULT_WARMUP,
        help=f"inferences of each configuration left out of its figures (default {DEFAULT_WARMUP})",
    )
    s.add_argument(
        "--allow-software-gpu",
        action="store_true",
        help="include the GPU even when its adapter is a software renderer (SwiftShader, llvmpipe), flagged as one",
    )
    s.add_argument(
        "--pin",
        action="store_true",
        help="pin the inference thread to CPUs of its own as bench does (off by default: bench pins only when "
        "there are more CPUs than threads, which would differ between thread counts)",
    )
    s.add_argument(
        "--idle-seconds",
        type=non_negative_float,
        help=f"idle the machine this long before the first configuration, reading its power (what 'above idle' "
        f"takes off); default {IDLE_S:g} where an energy counter is readable (NVML, RAPL), else 0",
    )
    s.add_argument(
        "--warm-seconds",
        type=non_negative_float,
        default=0.0,
        help="hold each configuration busy (unpaced) at least this long before measuring it, so that every "
        "configuration, the first too, is measured at its working clocks (default 0: --warmup inferences only)",
    )
    add_gate_options(s)
    s.add_argument("--json", type=Path, dest="json_file", help="write the sweep as JSON to this file")
    s.add_argument("--html", type=Path, help="write the table and plots as one HTML page")
    s.add_argument(
        "--trace",
        type=Path,
        help="write every configuration's timeline to this JSON file (Chrome's trace event format: "
        "ui.perfetto.dev), each configuration a track group of its own, named",
    )


def run(args: argparse.Namespace) -> int:
    models = args.models or default_models()
    for model in models:
        load_model_spec(model, options=model_options(args))  # a bad model is exit 3 before anything runs
    if args.json_file:
        check_json_out(args.json_file)
    if args.html:
        check_html_out(args.html)
    if args.trace:
        check_writable(args.trace, "--trace")  # said before the run, not after it
    # A bad baseline or budget is exit 2 before anything runs; rows are matched after the run.
    base = None
    if args.baseline:
        settings = {"frames": str(args.frames), "warmup": str(args.warmup), "pinned": str(args.pin).lower()}
        base = load_baseline(args.baseline, SummaryKind.SWEEP, {"source": redact_credentials(args.source)}, settings,
                             strict=args.strict_config)  # fmt: skip
    budgets = parse_budgets(args.budget, SummaryKind.SWEEP, baseline=base is not None)
    tty = sys.stderr.isatty()
    if tty:
        _progress(SweepProgress(0, 0, args.source, "capturing"))
    captured = capture_frames(args.source, args.frames)  # a source that fails is exit 6 before the GPU probe
    entries = plan_sweep(models, allow_software_gpu=args.allow_software_gpu)
    progress = _progress if tty else None
    plan = SweepPlan(captured, tuple(entries), warmup=args.warmup, pin_cpus=args.pin,
                     model_options=model_options(args), idle_s=args.idle_seconds, warm_s=args.warm_seconds)  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="delegate-scope-sweep-trace-") as parts:
        if args.trace:
            plan = replace(plan, trace_parts=Path(parts))
        result = run_sweep(plan, progress)
        trace_line = _join_trace(args.trace, plan, result) if args.trace else None
    if tty:
        print(file=sys.stderr)
    out = result.to_dict()
    report = None
    if args.baseline or args.budget:
        report = evaluate(summary_of(json.loads(json.dumps(out)), "this run"), base, budgets)
        out["gates"] = report.to_dict()
    if args.json_file:
        text = redact_credentials(json.dumps(versioned(out), indent=2))
        args.json_file.write_text(text + "\n", encoding="utf-8")
    for line in header_lines(result):
        print(redact_credentials(line))
    print(text_table(result))
    if args.html:
        size = write_html(result, args.html)
        print(f"report    {args.html} ({size / 1024:.0f} KiB)")
    if trace_line:
        print(f"trace     {trace_line}")
    for row in result.rows:
        if row.software:
            warn(f"{row.label} ran on a software GPU renderer ({row.adapter}): its 'GPU' figures are the CPU's")
    if report is not None:
        finish_gate(report)
    return 0


def _join_trace(path: Path, plan: SweepPlan, result: SweepResult) -> str:
    """Each configuration's timeline that was written (one that ran), as one file: a track group each."""
    assert plan.trace_parts is not None
    runs = []
    for k, row in enumerate(result.rows):
        part = plan.trace_parts / f"{k}.json"
        if part.exists():
            runs.append((row.label, json.loads(part.read_text(encoding="utf-8"))))
    text = json.dumps(join_runs(runs, "delegate-scope sweep"), separators=(",", ":"))
    try:
        path.write_text(text + "\n", encoding="utf-8")
    except OSError as exc:  # checked before the run; a disk that filled up meanwhile
        raise UsageError(f"--trace: cannot write {path} ({exc.strerror})") from None
    return f"{path}: {len(runs)} configurations, each a track group; open it in ui.perfetto.dev"


def _progress(p: SweepProgress) -> None:
    if p.phase == "capturing":
        text = f"capturing frames from {redact_credentials(p.label)}…"
    elif p.phase == "done":
        text = "done"
    else:
        text = f"[{p.index + 1}/{p.total}] {p.label}: {p.phase} {p.done}/{p.frames}"
    print(f"\r{text[:100]:<100}", end="", file=sys.stderr, flush=True)


COMMAND = Command(
    name="sweep",
    help="the same frames through every delegate configuration, side by side",
    description="Capture frames once from a source and replay them, unpaced, through every configuration this "
    "machine offers (CPU at 1, 2 and all-cores threads; GPU fp16 and fp32; Core ML compute units) for each "
    "model: throughput, latency p50/p95, CPU per inference, init and first-inference time, and top-1 agreement "
    "with the first configuration. Configurations that cannot run here are listed with the reason.",
    add_arguments=add_arguments,
    run=run,
)
