"""Command line: the parser of every subcommand and the dispatch that turns errors into one line
and an exit code. Each command's handler lives in its own module (app/cli_*.py); no logic lives here."""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from app import __version__
from app.backends import BACKENDS
from app.cli.commands.bench import cmd_bench
from app.cli.commands.classify import cmd_classify
from app.cli.commands.gui import cmd_gui
from app.cli.commands.inspect import cmd_delegates, cmd_inspect
from app.cli.commands.profile import cmd_profile
from app.cli.commands.report import cmd_report
from app.cli.commands.sweep import cmd_sweep
from app.cli.options import (
    add_model_options,
    non_negative_float,
    non_negative_int,
    one_or_three_floats,
    positive_float,
    positive_int,
)
from app.cli.output import PROG
from app.coverage.coreml_rules import DEFAULT_COREML_VERSION
from app.errors import DelegateScopeError
from app.model.spec import DEFAULT_MODEL
from app.system.native_log import NativeLogFile
from app.tasks.sweep import DEFAULT_FRAMES as SWEEP_FRAMES
from app.tasks.sweep import DEFAULT_WARMUP as SWEEP_WARMUP


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="See where and how fast a TFLite model really runs.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show tracebacks and native runtime logs")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    c = sub.add_parser("classify", parents=[common], help="classify image files", description="Classify image files.")
    add_model_options(c)
    c.add_argument("--top-k", type=positive_int, default=5, help="predictions per image (default 5)")
    c.add_argument(
        "--mean", type=one_or_three_floats, help="normalisation mean, one value or R,G,B (overrides the model's own)"
    )
    c.add_argument("--std", type=one_or_three_floats, help="normalisation std, one value or R,G,B")
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

    pr = sub.add_parser(
        "profile",
        parents=[common],
        help="which ops of a model cost what on a delegate",
        description="Profile a model op by op on a delegate: run order, top ops by time, totals by op type, the ops "
        "off the accelerator with their share of the time, and the partition boundaries. CPU times are LiteRT's own "
        "profiler events; on the GPU the runtime has no per-op profile, so the whole run is measured, the ops left "
        "on the CPU come from the CPU profile and the GPU partitions get the rest (docs/profile.md).",
    )
    add_model_options(pr)
    pr.add_argument("--runs", type=positive_int, default=20, help="profiled runs after a warm-up (default 20)")
    pr.add_argument("--top", type=positive_int, default=10, help="rows in the top-by-time table (default 10)")
    pr.add_argument(
        "--model-explorer",
        type=Path,
        metavar="OUT.json",
        help="also write the per-op times as Google AI Edge Model Explorer node data",
    )
    pr.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    pr.set_defaults(handler=cmd_profile)

    b = sub.add_parser(
        "bench",
        parents=[common],
        help="run the live pipeline headless and summarise it",
        description="Run the live pipeline (capture thread, throttled inference thread) on a source and summarise "
        "throughput, latency per stage, CPU and delegation, as the window would show them.",
    )
    add_model_options(b)
    b.add_argument("--source", default="demo", help="camera:N, video:PATH, images:PATH, demo (default), synthetic")
    limit = b.add_mutually_exclusive_group()
    limit.add_argument("--frames", type=positive_int, help="inferences to measure (default 300)")
    limit.add_argument("--seconds", type=positive_float, help="measure for this long instead")
    b.add_argument("--throttle-ms", type=non_negative_float, default=0.0, help="delay between inference starts")
    b.add_argument("--warmup", type=non_negative_int, default=10, help="inferences left out of the figures")
    b.add_argument("--no-pace", action="store_true", help="read video files as fast as possible")
    b.add_argument(
        "--no-pin",
        action="store_true",
        help="let every thread run on any CPU (default on Linux: the inference thread gets CPUs of its own, "
        "the capture and other threads the rest, when there are more CPUs than --threads; A/B runs never pin)",
    )
    b.add_argument(
        "--inference-cpus",
        type=positive_int,
        help="CPUs pinned for the inference thread (default by backend: --threads on the CPU, 1 for an accelerator)",
    )
    b.add_argument(
        "--decode-threads",
        type=non_negative_int,
        default=None,
        help="FFmpeg threads decoding a video file (default: 1 on machines of up to 4 CPUs, else 2; 0: one per core)",
    )
    b.add_argument(
        "--gpu-wait-hint",
        action="store_true",
        help="GPU: LiteRT's hint_waiting_for_completion (measured: no sleep instead of the spin; docs/benchmarks.md)",
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
        type=non_negative_float,
        default=5.0,
        help="A/B: first run each side alone this long, to show what sharing the machine costs (default 5)",
    )
    b.set_defaults(handler=cmd_bench)

    s = sub.add_parser(
        "sweep",
        parents=[common],
        help="the same frames through every delegate configuration, side by side",
        description="Capture frames once from a source and replay them, unpaced, through every configuration this "
        "machine offers (CPU at 1, 2 and all-cores threads; GPU fp16 and fp32; Core ML compute units) for each "
        "model: throughput, latency p50/p95, CPU per inference, init and first-inference time, and top-1 agreement "
        "with the first configuration. Configurations that cannot run here are listed with the reason.",
    )
    s.add_argument(
        "--model",
        action="append",
        dest="models",
        metavar="M",
        help="bundled model name or .tflite path; repeat for several (default: every bundled model)",
    )
    s.add_argument("--source", default="demo", help="where the frames come from (default: the demo clip)")
    s.add_argument(
        "--frames", type=positive_int, default=SWEEP_FRAMES, help=f"frames replayed to each (default {SWEEP_FRAMES})"
    )
    s.add_argument(
        "--warmup",
        type=non_negative_int,
        default=SWEEP_WARMUP,
        help=f"inferences of each configuration left out of its figures (default {SWEEP_WARMUP})",
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
    s.add_argument("--json", type=Path, dest="json_file", help="write the sweep as JSON to this file")
    s.add_argument("--html", type=Path, help="write the table and plots as one HTML page")
    s.set_defaults(handler=cmd_sweep)

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
    g.add_argument("--threads", type=positive_int, help="CPU threads")
    g.add_argument("--throttle-ms", type=non_negative_float, help="delay between inference starts")
    g.add_argument("--settings", type=Path, dest="settings_file", help="settings file (INI) instead of the user's")
    g.add_argument("--record", type=Path, help="start recording to this CSV at once")
    g.add_argument("--exit-after", type=positive_float, help="close the window after this many seconds")
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
