"""Command line: subcommands parse arguments and wire the core together; no logic lives here."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

from app import __version__
from app.backends import BACKENDS, SessionReport, open_session
from app.backends.coreml import COMPUTE_UNITS
from app.backends.gpu import PRECISIONS
from app.backends.options import default_threads
from app.bench import BenchConfig, run_bench
from app.classify import ImageFailure, ImageResult, classify_images
from app.coverage.coreml_rules import DEFAULT_COREML_VERSION, CoreMLOptions
from app.coverage.text import left_on_cpu_lines
from app.cpu_affinity import CpuSplit
from app.delegates import delegate_statuses
from app.describe import coreml_prediction_sentence
from app.errors import BackendUnavailable, DelegateScopeError, UsageError
from app.metrics import MetricsSnapshot
from app.model import DEFAULT_MODEL, ModelSpec, load_model_spec
from app.native_log import NativeLogFile
from app.pipeline import InferenceConfig, Status
from app.redact import redact_credentials
from app.thread_cpu import started_by

PROG = "delegate-scope"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _floats(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected one number or three separated by commas, got '{text}'") from None
    if len(values) not in (1, 3):
        raise argparse.ArgumentTypeError(f"expected one number or three separated by commas, got '{text}'")
    return values


def _positive_float(text: str) -> float:
    value = _non_negative_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def _non_negative_int(text: str) -> int:
    return 0 if text.strip() == "0" else _positive_int(text)


def _add_model_options(p: argparse.ArgumentParser) -> None:
    """Options shared by every command that opens a model on a backend."""
    p.add_argument(
        "--model", default=DEFAULT_MODEL, help=f"bundled model name or .tflite path (default {DEFAULT_MODEL})"
    )
    p.add_argument("--labels", type=Path, help="labels file, one label per line (overrides the model's own)")
    p.add_argument("--delegate", default="cpu", choices=list(BACKENDS), help="backend to run on (default cpu)")
    p.add_argument("--no-fallback", action="store_true", help="exit 5 instead of falling back to CPU")
    p.add_argument("--threads", type=_positive_int, help=f"CPU threads (default {default_threads()} here)")
    p.add_argument(
        "--gpu-precision", choices=PRECISIONS, default="fp16", help="GPU: allow fp16 (default) or enforce fp32"
    )
    p.add_argument(
        "--allow-software-gpu", action="store_true", help="GPU: run even on a software renderer (llvmpipe, SwiftShader)"
    )
    p.add_argument(
        "--coreml-units",
        choices=list(COMPUTE_UNITS),
        default="all",
        help="Core ML compute units (default all; the TFLite Core ML delegate hard-codes all)",
    )


def _backend_options(args: argparse.Namespace) -> dict:
    return {
        "threads": args.threads,
        "precision": args.gpu_precision,
        "allow_software": args.allow_software_gpu,
        "compute_units": args.coreml_units,
    }


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="See where and how fast a TFLite model really runs.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show tracebacks and native runtime logs")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    c = sub.add_parser("classify", parents=[common], help="classify image files", description="Classify image files.")
    _add_model_options(c)
    c.add_argument("--top-k", type=_positive_int, default=5, help="predictions per image (default 5)")
    c.add_argument("--mean", type=_floats, help="normalisation mean, one value or R,G,B (overrides the model's own)")
    c.add_argument("--std", type=_floats, help="normalisation std, one value or R,G,B")
    c.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    c.add_argument("images", nargs="+", type=Path, metavar="IMAGE")
    c.set_defaults(handler=cmd_classify)

    i = sub.add_parser(
        "inspect",
        parents=[common],
        help="what each backend would take of a model, node by node",
        description="Show what each backend takes of a model without running a source: CPU (XNNPACK, measured), "
        "GPU (measured where a GPU adapter exists, software renderers flagged) and Core ML (predicted on every OS "
        "from the TFLite Core ML delegate's rules): nodes delegated, partitions, and why each node left on the CPU "
        "stays there.",
    )
    i.add_argument(
        "--model", default=DEFAULT_MODEL, help=f"bundled model name or .tflite path (default {DEFAULT_MODEL})"
    )
    i.add_argument("--labels", type=Path, help="labels file, one label per line (overrides the model's own)")
    i.add_argument(
        "--coreml-version",
        type=int,
        choices=(2, 3),
        default=DEFAULT_COREML_VERSION,
        help=f"the Core ML delegate's coreml_version option (default {DEFAULT_COREML_VERSION}, as the delegate's)",
    )
    i.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    i.set_defaults(handler=cmd_inspect)

    d = sub.add_parser(
        "delegates",
        parents=[common],
        help="list backends and whether they can run here",
        description="List every backend with whether it can run on this machine, and why not.",
    )
    d.add_argument("--json", action="store_true", help="print JSON on stdout")
    d.set_defaults(handler=cmd_delegates)

    b = sub.add_parser(
        "bench",
        parents=[common],
        help="run the live pipeline headless and summarise it",
        description="Run the live pipeline (capture thread, throttled inference thread) on a source and summarise "
        "throughput, latency per stage, CPU and delegation, as the window would show them.",
    )
    _add_model_options(b)
    b.add_argument("--source", default="demo", help="camera:N, video:PATH, images:PATH, demo (default), synthetic")
    limit = b.add_mutually_exclusive_group()
    limit.add_argument("--frames", type=_positive_int, help="inferences to measure (default 300)")
    limit.add_argument("--seconds", type=_positive_float, help="measure for this long instead")
    b.add_argument("--throttle-ms", type=_non_negative_float, default=0.0, help="delay between inference starts")
    b.add_argument("--warmup", type=_non_negative_int, default=10, help="inferences left out of the figures")
    b.add_argument("--no-pace", action="store_true", help="read video files as fast as possible")
    b.add_argument(
        "--no-pin",
        action="store_true",
        help="let every thread run on any CPU (default on Linux: the inference thread gets CPUs of its own, "
        "the capture and other threads the rest, when there are more CPUs than --threads; A/B runs never pin)",
    )
    b.add_argument("--csv", type=Path, help="record one row per inference (docs/csv-format.md)")
    b.add_argument("--json", type=Path, dest="json_file", help="write the summary as JSON to this file")
    b.add_argument(
        "--compare-with",
        choices=list(BACKENDS),
        help="A/B: run the same frames through a second session on this delegate (B)",
    )
    b.add_argument("--compare-model", help="A/B: B's model (default: A's); fp32 vs int8, for instance")
    b.add_argument(
        "--compare-alone-seconds",
        type=_non_negative_float,
        default=5.0,
        help="A/B: first run each side alone this long, to show what sharing the machine costs (default 5)",
    )
    b.set_defaults(handler=cmd_bench)

    g = sub.add_parser(
        "gui",
        parents=[common],
        help="open the window (the default command)",
        description="Open the window: live video with labels, plots, delegate switching, recording. "
        "Without --source: camera 0 if it opens, else the bundled demo clip.",
    )
    g.add_argument("--source", help="camera:N, video:PATH, images:PATH, demo, synthetic")
    g.add_argument("--model", help="bundled model name or .tflite path")
    g.add_argument("--delegate", choices=list(BACKENDS), help="backend to start on")
    g.add_argument("--threads", type=_positive_int, help="CPU threads")
    g.add_argument("--throttle-ms", type=_non_negative_float, help="delay between inference starts")
    g.add_argument("--settings", type=Path, dest="settings_file", help="settings file (INI) instead of the user's")
    g.add_argument("--record", type=Path, help="start recording to this CSV at once")
    g.add_argument("--exit-after", type=_positive_float, help="close the window after this many seconds")
    g.add_argument("--screenshot", type=Path, help="grab the window to this PNG just before --exit-after closes it")
    g.add_argument("--stats", type=Path, dest="stats_file", help="write display/GUI-cost figures as JSON at exit")
    g.add_argument(
        "--save-settings",
        action="store_true",
        default=None,
        help="remember this run's choices at exit (default: yes, except in --exit-after runs)",
    )
    g.set_defaults(handler=cmd_gui)

    r = sub.add_parser(
        "report",
        parents=[common],
        help="plots and a summary of recorded sessions (HTML or PNG)",
        description="Turn recordings (bench --csv, the window's Record) into one self-contained HTML page or one "
        "PNG: latency over time with events, latency histogram, stages, fps, CPU, and a summary table. With several "
        "sessions: overlaid and side by side, and compared with the first (docs/report.md).",
    )
    r.add_argument(
        "sessions", nargs="+", type=Path, metavar="SESSION.csv", help="recordings; the first is the baseline"
    )
    r.add_argument("--out", type=Path, required=True, metavar="FILE", help="FILE.html (one page) or FILE.png")
    r.set_defaults(handler=cmd_report)
    return parser


def _warn(message: str) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def _delegation_line(report: SessionReport) -> str:
    parts = [f"{report.requested} -> {report.used}", report.accelerator]
    if report.adapter:
        parts.append(f"adapter {report.adapter}" + (" [SOFTWARE RENDERER]" if report.software else ""))
    if report.nodes_total is not None:
        delegated = "?" if report.nodes_delegated is None else report.nodes_delegated
        if report.partitions is None:
            where = "(partitions not reported by the runtime)"
        else:
            where = f"in {report.partitions} partition{'s' if report.partitions != 1 else ''}"
        parts.append(f"{delegated} of {report.nodes_total} nodes delegated {where}")
    elif report.fully_accelerated is not None:
        parts.append("fully accelerated" if report.fully_accelerated else "NOT fully accelerated")
    if report.cpu_ops:
        parts.append("left on CPU kernels: " + ", ".join(report.cpu_ops))
    if report.fallback_reason:
        parts.append(f"FALLBACK: {report.fallback_reason}")
    return ", ".join(parts)


def _print_prediction(report: SessionReport) -> None:
    """Core ML requested: what the TFLite Core ML delegate would take (predicted on any OS)."""
    sentence = coreml_prediction_sentence(report)
    if sentence and report.predicted is not None:
        print(f"coreml    {sentence} {report.predicted.log or ''}".rstrip())
        for line in left_on_cpu_lines(report.predicted, limit=6):
            print(f"          left on the CPU: {line}")


def _print_table(spec: ModelSpec, report: SessionReport, results: list[ImageResult]) -> None:
    inp = spec.input
    print(f"model     {spec.display_name}  ({spec.path})")
    print(
        f"          input {'x'.join(str(d) for d in inp.shape)} {inp.dtype}, {spec.classes} classes, "
        f"sha256 {spec.sha256[:12]}"
    )
    print(f"          labels: {spec.labels.source}; normalisation: {spec.normalization.describe()}")
    print(f"delegate  {_delegation_line(report)}")
    print(f"          init {report.init_ms:.1f} ms, first inference {report.first_inference_ms:.1f} ms")
    _print_prediction(report)
    for result in results:
        print()
        cpu = result.cpu
        runtime = "n/a" if cpu.runtime_threads_ms is None else f"{cpu.runtime_threads_ms:.2f}"
        print(
            f"{result.image}   preprocess {result.preprocess_ms:.2f} ms, inference {result.inference_ms:.2f} ms "
            f"(CPU {result.inference_cpu_ms:.2f} ms, {result.cpu_per_wall:.2f}x wall: its thread "
            f"{cpu.inference_thread_ms:.2f}, the runtime's threads {runtime}; rest of the process "
            f"{cpu.rest_of_process_ms:.2f} ms)"
        )
        for rank, p in enumerate(result.top, 1):
            print(f"  {rank:>2}. {p.index:>5}  {p.label[:48]:<48} {p.score:.4f}")


def _delegate_json(report: SessionReport, results: list[ImageResult]) -> dict:
    out = {k: v for k, v in report.to_dict().items() if k != "native_log"}
    for key in ("init_ms", "first_inference_ms"):
        out[key] = round(out[key], 3)
    ratios = sorted(r.cpu_per_wall for r in results)
    # Offload evidence: process CPU time per inference over wall time (median over the images).
    out["cpu_per_wall"] = round(ratios[len(ratios) // 2], 3) if ratios else None
    return out


def cmd_delegates(args: argparse.Namespace) -> int:
    statuses = delegate_statuses()
    if args.json:
        json.dump(statuses, sys.stdout, indent=2)
        print()
        return 0
    for st in statuses:
        state = "available" if st["available"] else "not available"
        print(f"{st['name']:<7} {st['label']:<16} {state}" + (f": {st['reason']}" if st.get("reason") else ""))
        for key in ("adapter", "devices", "threads"):
            if st.get(key):
                value = "; ".join(st[key]) if isinstance(st[key], list) else str(st[key])
                print(f"        {key}: {value}")
    return 0


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


def _print_bench(summary: dict) -> None:
    m, d = summary["metrics"], summary["delegate"] or {}
    src = summary["source"]
    opened = [e["model"] for e in summary["events"] if isinstance(e.get("model"), dict)]
    if opened:  # the model that ran last (a switch can change it)
        print(f"model     {opened[-1]['name']}  ({opened[-1]['path']})")
    print(f"source    {src['spec']}  {src.get('width', '?')}x{src.get('height', '?')} @ {src.get('fps', 0):.1f} fps")
    if d:
        report = SessionReport.from_dict(d)
        print(f"delegate  {_delegation_line(report)}")
        _print_prediction(report)
    print(
        f"measured  {m['inferences_total']} inferences in {m['window_s']:.1f} s; "
        f"{m['frames_total']} frames captured, {m['dropped_total']} not inferred (overwritten in the slot)"
    )
    print(f"rate      capture {m['capture_fps']:.1f} fps, inference {m['inference_fps']:.1f} fps")
    split = summary.get("cpu_affinity")
    print("cpus      " + (CpuSplit(**split).describe() if split else "not pinned (every thread on any CPU)"))
    print(f"{'stage':<12}{'mean':>9}{'p50':>9}{'p95':>9}{'max':>9}  ms")
    for stage, st in m["latency"].items():
        print(f"{stage:<12}{st['mean']:>9.2f}{st['p50']:>9.2f}{st['p95']:>9.2f}{st['max']:>9.2f}")
    cpu = m.get("process_cpu_pct_machine")
    cores = m.get("process_cpu_pct_cores")
    print(
        f"cpu       {m['cpu_ms_per_inference']:.2f} ms CPU per inference ({m['cpu_per_wall']:.2f}x its wall time); "
        + (f"process {cpu:.0f}% of the machine ({cores:.0f}% summed over cores)" if cpu is not None else "process n/a")
        + (f", system {m['system_cpu_pct']:.0f}%" if m.get("system_cpu_pct") is not None else "")
    )
    if m.get("rss_mb") is not None:
        print(
            f"memory    RSS {m['rss_mb']:.0f} MB" + (f", GPU {m['gpu_util_pct']:.0f}%" if m.get("gpu_util_pct") else "")
        )
    if summary.get("first_result_s") is not None:
        print(f"start-up  first result {summary['first_result_s']:.2f} s after the process started")
    if "csv" in summary:
        c = summary["csv"]
        print(
            f"csv       {c['path']}: {c['rows']} rows, {c['lost_rows']} lost"
            + (f"; {c['error']}" if c["error"] else "")
        )


def cmd_bench(args: argparse.Namespace) -> int:
    config = InferenceConfig(
        model=args.model,
        labels=args.labels,
        delegate=args.delegate,
        options=_backend_options(args),
        fallback=not args.no_fallback,
        throttle_ms=args.throttle_ms,
        top_k=5,
    )
    if args.csv and args.json_file and args.csv.with_suffix(".json").resolve() == args.json_file.resolve():
        raise UsageError(f"--json {args.json_file} would overwrite the recording's own sidecar; pick another name")
    if args.csv and args.csv.exists():
        raise UsageError(f"{args.csv} exists; recordings are never overwritten")
    load_model_spec(args.model, labels_file=args.labels)  # a bad model is exit 3 before anything starts
    frames = args.frames if args.frames or args.seconds else 300
    bench = BenchConfig(args.source, frames, args.seconds, args.warmup, not args.no_pace, args.csv, not args.no_pin)
    if args.compare_with or args.compare_model:
        return _compare_bench(args, bench, config)
    summary = run_bench(bench, config, progress=_progress if sys.stderr.isatty() else None)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    if args.json_file:
        text = redact_credentials(json.dumps(summary, indent=2, default=str))
        args.json_file.write_text(text + "\n", encoding="utf-8")
    status = summary["status"]
    error = Status(status["state"], status["message"], exit_code=status["exit_code"]).error()
    if error is not None:  # the cause is the one line to show, with its own exit code
        raise error
    for event in summary["events"]:
        if event["kind"] in ("fallback", "switch_failed", "source_lost", "error", "bad_frame"):
            _warn(f"{event['kind']}: {event['message']}")
    _print_bench(summary)
    if args.no_fallback and summary["delegate"] and summary["delegate"]["fallback_reason"]:
        raise BackendUnavailable(
            f"the {args.delegate} delegate is not available: {summary['delegate']['fallback_reason']}"
        )
    return 0


def _compare_bench(args: argparse.Namespace, bench: BenchConfig, a: InferenceConfig) -> int:
    from dataclasses import replace

    from app.compare_bench import run_compare_bench

    b = replace(a, delegate=args.compare_with or a.delegate, model=args.compare_model or a.model)
    if args.csv:
        from app.compare_bench import side_recording

        for side in ("a", "b"):
            if side_recording(args.csv, side).exists():
                raise UsageError(f"{side_recording(args.csv, side)} exists; recordings are never overwritten")
    if args.compare_model:
        load_model_spec(args.compare_model)  # exit 3 before anything starts
    summary = run_compare_bench(bench, a, b, args.compare_alone_seconds)  # a side's error: its own typed error
    if args.json_file:
        text = redact_credentials(json.dumps(summary, indent=2, default=str))
        args.json_file.write_text(text + "\n", encoding="utf-8")
    _print_compare(summary)
    fell_back = [s for s in ("a", "b") if summary[s]["delegate"] and summary[s]["delegate"]["fallback_reason"]]
    for side in fell_back:
        _warn(f"side {side.upper()} fell back: {summary[side]['delegate']['fallback_reason']}")
    if args.no_fallback and fell_back:
        raise BackendUnavailable(f"side {fell_back[0].upper()} could not run on its delegate")
    return 0


def _print_compare(summary: dict) -> None:
    def side_line(name: str) -> str:
        s = summary[name]
        d, t = s["delegate"] or {}, s["together"]
        used = d.get("used", "?") + (f" (requested {d['requested']})" if d.get("fallback_reason") else "")
        alone = s["alone"]
        alone_text = f", alone {alone['inference_fps']:.1f}/s" if alone else ""
        median = s["inference_ms_median"]
        return (
            f"{name.upper()}  {Path(s['config']['model']).name} on {used}: inference median "
            f"{median:.2f} ms, {t['inference_fps']:.1f}/s together{alone_text}, "
            f"CPU {t['cpu_ms_per_inference']:.2f} ms per inference (its own thread"
            + ("; TensorFlow works in a child process" if d.get("used") == "reference" else "")
            + ")"
            if median is not None
            else f"{name.upper()}  no inference measured"
        )

    print(side_line("a"))
    print(side_line("b"))
    g = summary["agreement"]
    if g["frames"]:
        line = f"agreement  top-1 agrees on {g['top1_agreement']:.1%} of {g['frames']:,} frames"
        line += f"; top-5 overlap {g['top5_overlap']:.1%}"
        if g["scores_comparable"]:
            line += f"; max score difference {g['max_abs_diff']:.3g}; mean total variation {g['mean_tv_distance']:.3g}"
        else:
            line += "; scores not comparable (different class sets): labels only"
        print(line)
    else:
        print("agreement  no frame was inferred by both sides")
    print(f"speed      {summary['speed']['sentence']}")
    if "csv" in summary:
        c = summary["csv"]
        print(f"csv        {c['path']}: {c['rows']} compared frames; each side's recording: "
              f"{c['sessions']['a']}, {c['sessions']['b']} (delegate-scope report renders the pair)")  # fmt: skip


def cmd_classify(args: argparse.Namespace) -> int:
    spec = load_model_spec(args.model, labels_file=args.labels, mean=args.mean, std=args.std)
    session, runtime_threads = started_by(
        lambda: open_session(spec, args.delegate, _backend_options(args), fallback=not args.no_fallback)
    )
    for warning in spec.warnings + session.report.warnings:  # after open: a refused model gets one line
        _warn(warning)
    try:
        if args.debug:
            for line in session.report.native_log:
                print(f"[runtime, opening] {line}", file=sys.stderr)
        results: list[ImageResult] = []
        failures: list[ImageFailure] = []
        for outcome in classify_images(spec, session, args.images, args.top_k, runtime_threads):
            if isinstance(outcome, ImageFailure):
                failures.append(outcome)
                print(f"{PROG}: error: {outcome.error}", file=sys.stderr)
            else:
                results.append(outcome)
    finally:
        session.close()
    if args.json:
        out = {
            "model": spec.summary(),
            "delegate": _delegate_json(session.report, results),
            "results": [r.to_dict() for r in results],
            "errors": [{"image": str(f.image), "error": str(f.error)} for f in failures],
            "warnings": spec.warnings + session.report.warnings,
        }
        json.dump(out, sys.stdout, indent=2)
        print()
    else:
        _print_table(spec, session.report, results)
    return failures[0].error.exit_code if failures else 0


def cmd_inspect(args: argparse.Namespace) -> int:
    from app.coverage.inspect import inspect_model
    from app.coverage.text import render

    spec = load_model_spec(args.model, labels_file=args.labels)
    result = inspect_model(spec, CoreMLOptions(coreml_version=args.coreml_version))
    for warning in spec.warnings:
        _warn(warning)
    if args.json:
        out = {
            "model": spec.summary(),
            "coverage": result.to_dict(),
            "gpu_adapter": {"name": result.gpu_adapter, "software": result.gpu_software}
            if result.gpu_adapter
            else None,
        }
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0
    inp = spec.input
    print(f"model     {spec.display_name}  ({spec.path})")
    print(f"          input {'x'.join(str(d) for d in inp.shape)} {inp.dtype}, {len(spec.op_types)} nodes")
    if result.gpu_adapter:
        print(f"          GPU adapter {result.gpu_adapter}" + (" [SOFTWARE RENDERER]" if result.gpu_software else ""))
    print()
    for line in render(result.by_delegate()):
        print(line)
    return 0


def cmd_gui(args: argparse.Namespace) -> int:
    from app.ui.app import run_gui  # Qt is imported only for the window
    from app.ui.main_window import GuiOptions

    if args.screenshot is not None and args.exit_after is None:
        raise UsageError("--screenshot is taken just before --exit-after closes the window: give both")
    options = GuiOptions(
        source=args.source,
        model=args.model,
        delegate=args.delegate,
        threads=args.threads,
        throttle_ms=args.throttle_ms,
        settings_file=args.settings_file,
        record=args.record,
        exit_after=args.exit_after,
        screenshot=args.screenshot,
        stats_file=args.stats_file,
        save_settings=args.save_settings,
    )
    return run_gui(options)


def cmd_report(args: argparse.Namespace) -> int:
    from app.report import build_report  # matplotlib is imported only when a report is drawn

    written = build_report(args.sessions, args.out)
    n = written["sessions"]
    print(f"report    {written['out']} ({n} session{'s' if n != 1 else ''}, {written['bytes'] / 1024:.0f} KiB)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv = ["gui", *argv]  # plain `delegate-scope [options]` opens the window
    args = parser.parse_args(argv)
    native = NativeLogFile()
    try:
        return args.handler(args)
    except DelegateScopeError as exc:
        if args.debug:
            traceback.print_exc()
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the last line of defence: no traceback unless asked
        if args.debug:
            traceback.print_exc()
        print(f"{PROG}: internal error: {type(exc).__name__}: {exc} (run with --debug for details)", file=sys.stderr)
        return 1
    finally:
        if args.debug:
            print(f"{PROG}: native runtime log ({native.path}):", file=sys.stderr)
            for line in native.read().splitlines():
                print(f"[native] {line}", file=sys.stderr)
        else:
            native.remove()
