"""`delegate-scope gui`: the window's options checked and handed over (Qt is imported only when it runs)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from app.backends import BACKENDS
from app.cli.command import Command
from app.cli.options import (
    add_delegate_tuning,
    add_reading_options,
    add_score_threshold,
    model_options,
    non_negative_float,
    positive_float,
    positive_int,
)
from app.cli.output import check_writable
from app.errors import UsageError
from app.live.trace import DEFAULT_SECONDS as DEFAULT_TRACE_SECONDS


def add_arguments(g: argparse.ArgumentParser) -> None:
    # Each option's dest is the name of a GuiOptions field (tests/test_cli_commands.py holds them together).
    g.add_argument("--source", help="camera:N, video:PATH, images:PATH, demo, synthetic")
    g.add_argument("--model", help="bundled model name or .tflite path")
    add_reading_options(g)  # --task, --input-shape, --inputs: one ModelOptions (`model_options` below)
    g.add_argument("--delegate", choices=list(BACKENDS), help="backend to start on")
    g.add_argument("--threads", type=positive_int, help="CPU threads")
    g.add_argument("--throttle-ms", type=non_negative_float, help="delay between inference starts")
    add_score_threshold(g, default=None)  # the window's "Score threshold", for detections
    add_delegate_tuning(g)  # --gpu-precision, --allow-software-gpu, --coreml-units, as bench's
    # Not given: the saved settings' choice (the Controls' GPU precision, software GPU, compute units).
    g.set_defaults(gpu_precision=None, allow_software_gpu=None, coreml_units=None)
    g.add_argument(
        "--compare-with", choices=list(BACKENDS), help="A/B: start with side B on this delegate (default: A's)"
    )
    g.add_argument("--compare-model", help="A/B: start with side B on this model (default: A's)")
    g.add_argument(
        "--compare-labels", type=Path, help="A/B: B's labels file, one label per line (default: its model's own)"
    )
    g.add_argument("--settings", type=Path, dest="settings_file", help="settings file (INI) instead of the user's")
    g.add_argument("--record", type=Path, help="start recording to this CSV at once")
    g.add_argument("--exit-after", type=positive_float, help="close the window after this many seconds")
    g.add_argument("--screenshot", type=Path, help="grab the window to this PNG just before --exit-after closes it")
    g.add_argument("--stats", type=Path, dest="stats_file", help="write display/GUI-cost figures as JSON at exit")
    g.add_argument(
        "--trace",
        type=Path,
        help="take a trace of the pipeline's threads and the window's paints from the start, written to this "
        "JSON file at exit (Chrome's trace event format: ui.perfetto.dev); Record → Trace… starts one later",
    )
    g.add_argument(
        "--trace-seconds",
        type=positive_float,
        default=DEFAULT_TRACE_SECONDS,
        help=f"the trace keeps the last this many seconds (default {DEFAULT_TRACE_SECONDS:g})",
    )
    g.add_argument(
        "--save-settings",
        action="store_true",
        default=None,
        help="remember this run's choices at exit (default: yes, except in --exit-after runs)",
    )


def run(args: argparse.Namespace) -> int:
    from app.ui.app import run_gui  # Qt is imported only for the window
    from app.ui.window_config import GuiOptions

    if args.screenshot is not None and args.exit_after is None:
        raise UsageError("--screenshot is taken just before --exit-after closes the window: give both")
    if args.trace is not None:
        check_writable(args.trace, "--trace")  # said now, not when the window closes
    given = vars(args)
    # A field the command line has no option for (`dialogs`) keeps its default.
    given = {**given, "model_options": model_options(args)}  # GuiOptions' field for --task/--input-shape/--inputs
    options = GuiOptions(**{f.name: given[f.name] for f in dataclasses.fields(GuiOptions) if f.name in given})
    return run_gui(options)


COMMAND = Command(
    name="gui",
    help="open the window (the default command)",
    description="Open the window: live video with labels, plots, delegate switching, recording. "
    "Without --source: camera 0 if it opens, else the bundled demo clip.",
    add_arguments=add_arguments,
    run=run,
)
