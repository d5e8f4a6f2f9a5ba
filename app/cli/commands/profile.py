"""`delegate-scope profile`: which ops of a model cost what on a delegate (app/profile)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.cli.command import Command
from app.cli.options import add_backend_options, add_model_options, backend_options, model_options, positive_int
from app.cli.output import check_writable, warn, write_json_file
from app.model.feed import InputFeeder
from app.model.spec import load_model_spec
from app.schemas import versioned


def add_arguments(pr: argparse.ArgumentParser) -> None:
    add_model_options(pr)
    add_backend_options(pr)
    pr.add_argument("--runs", type=positive_int, default=20, help="profiled runs after a warm-up (default 20)")
    pr.add_argument("--top", type=positive_int, default=10, help="rows in the top-by-time table (default 10)")
    pr.add_argument(
        "--model-explorer",
        type=Path,
        metavar="OUT.json",
        help="also write the per-op times as Google AI Edge Model Explorer node data",
    )
    pr.add_argument(
        "--trace",
        type=Path,
        metavar="FILE.json",
        help="also write the profiled runs as Chrome's trace event JSON (ui.perfetto.dev): each run a slice, its "
        "ops inside it in run order, laid out from their durations (docs/profile.md)",
    )
    pr.add_argument("--json", action="store_true", help="print one JSON object on stdout")


def run(args: argparse.Namespace) -> int:
    from app.profile.model_explorer import node_data
    from app.profile.run import profile_model
    from app.profile.text import render

    spec = load_model_spec(args.model, labels_file=args.labels, options=model_options(args))
    for warning in spec.warnings:
        warn(warning)
    export = args.model_explorer
    if export is not None:
        check_writable(export, "--model-explorer")
    if args.trace is not None:
        check_writable(args.trace, "--trace")
    profile = profile_model(spec, args.delegate, backend_options(args), runs=args.runs, fallback=not args.no_fallback)
    if profile.fallback_reason:
        warn(f"fell back to CPU: {profile.fallback_reason}")
    if export is not None:
        exported = node_data(profile)
        write_json_file(export, exported.data, "--model-explorer")
        if exported.skipped_rows:
            warn(
                f"{exported.skipped_rows} row(s) ({exported.skipped_ms:.3f} ms) stand for no single TFLite node "
                "(a GPU partition, an operator XNNPACK added) and are not in the Model Explorer data"
            )
    if args.trace is not None:
        from app.recording.trace import profile_trace

        write_json_file(args.trace, profile_trace(profile), "--trace")
    feeder = InputFeeder(spec)  # what fed the inputs that are not the image (the profile's runs used the same)
    fed = {"inputs": feeder.facts.to_dict()} if feeder.needed else {}  # said only where there are such inputs
    if args.json:
        json.dump(versioned({"model": spec.as_json(), "profile": profile.to_dict(), **fed}), sys.stdout, indent=2)
        print()
        return 0
    for line in render(profile, top=args.top):
        print(line)
    if feeder.needed:
        print(f"inputs: {feeder.facts.describe()}")
    return 0


COMMAND = Command(
    name="profile",
    help="which ops of a model cost what on a delegate",
    description="Profile a model op by op on a delegate: run order, top ops by time, totals by op type, the ops "
    "off the accelerator with their share of the time, and the partition boundaries. CPU times are LiteRT's own "
    "profiler events; on the GPU the runtime has no per-op profile, so the whole run is measured, the ops left "
    "on the CPU come from the CPU profile and the GPU partitions get the rest (docs/profile.md).",
    add_arguments=add_arguments,
    run=run,
)
