"""`delegate-scope numerics`: each node's error on a delegate against a reference, and the first node
that breaks the output (docs/numerics.md)."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from app.backends.describe import delegation_line
from app.backends.options import BackendOptions, Delegate
from app.cli.command import Command
from app.cli.options import (
    a_number,
    add_delegate_tuning,
    add_model_options,
    model_options,
    non_negative_int,
    positive_int,
)
from app.cli.output import check_writable, warn, write_json_file
from app.model.spec import load_model_spec
from app.numerics.metrics import DEFAULT_MIN_COSINE, DEFAULT_MIN_SNR_DB, ErrorStats, Threshold
from app.numerics.runners import Against
from app.numerics.scan import DEFAULT_GROWTH, DEFAULT_WINDOW, Mode, NodeError
from app.numerics.table import text_lines
from app.schemas import versioned
from app.tasks.numerics import DELEGATES, NumericsOptions, NumericsResult, run_numerics


def _cosine(text: str) -> float:
    value = a_number(text)
    if not -1 <= value <= 1:
        raise argparse.ArgumentTypeError(f"a cosine lies in [-1, 1], got {text}")
    return value


def _decibels(text: str) -> float:
    value = a_number(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number of dB, got {text}")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_model_options(p)
    p.add_argument(
        "--delegate",
        default=Delegate.GPU,
        choices=list(DELEGATES),
        help="the delegate whose numbers are checked (default gpu); never falls back",
    )
    p.add_argument(
        "--against",
        default=Against.CPU,
        choices=list(Against),
        help="the reference: cpu (XNNPACK, fp32; default) or reference (LiteRT's reference kernels, no XNNPACK)",
    )
    p.add_argument("--threads", type=positive_int, help="CPU threads (the reference's, the GPU's CPU kernels)")
    add_delegate_tuning(p)
    p.add_argument(
        "--min-cosine",
        type=_cosine,
        default=DEFAULT_MIN_COSINE,
        help=f"a node breaks below this cosine similarity (default {DEFAULT_MIN_COSINE})",
    )
    p.add_argument(
        "--min-snr-db",
        type=_decibels,
        default=DEFAULT_MIN_SNR_DB,
        help=f"... or below this SNR in dB (default {DEFAULT_MIN_SNR_DB:g})",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="cut after every node (one compile each) instead of bisecting for the first that breaks",
    )
    p.add_argument(
        "--window",
        type=non_negative_int,
        default=DEFAULT_WINDOW,
        help=f"nodes shown each side of the first breaking one (default {DEFAULT_WINDOW})",
    )
    p.add_argument(
        "--growth",
        type=positive_int,
        default=DEFAULT_GROWTH,
        help=f"cuts from the first breaking node to the outputs (default {DEFAULT_GROWTH})",
    )
    p.add_argument("--source", help="frames of this source as inputs (camera:0, video:FILE, demo, synthetic)")
    p.add_argument(
        "--frames",
        type=positive_int,
        default=1,
        help="frames of --source, or generated input sets without images or a source (default 1)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument(
        "--model-explorer",
        type=Path,
        metavar="OUT.json",
        help="also write each node's SNR as Google AI Edge Model Explorer node data",
    )
    p.add_argument("images", nargs="*", type=Path, metavar="IMAGE", help="image files as inputs")


def run(args: argparse.Namespace) -> int:
    spec = load_model_spec(args.model, labels_file=args.labels, options=model_options(args))
    options = NumericsOptions(
        delegate=Delegate(args.delegate),
        against=Against(args.against),
        backend=BackendOptions(
            threads=args.threads,
            precision=args.gpu_precision,
            allow_software=args.allow_software_gpu,
            compute_units=args.coreml_units,
        ),
        threshold=Threshold(args.min_cosine, args.min_snr_db),
        mode=Mode.ALL if args.all else Mode.SEARCH,
        window=args.window,
        growth=args.growth,
        images=tuple(args.images),
        source=args.source,
        frames=args.frames,
    )
    for warning in spec.warnings:
        warn(warning)
    if args.model_explorer is not None:
        check_writable(args.model_explorer, "--model-explorer")
    progress = None if args.json else _progress
    result = run_numerics(spec, options, on_row=progress)
    for warning in result.report.warnings:
        warn(warning)
    if args.model_explorer is not None:
        from app.numerics.model_explorer import node_data

        title = f"{spec.name}: {options.delegate.value} {result.precision} against {options.against.value}"
        write_json_file(args.model_explorer, node_data(result.scan, title).data, "--model-explorer")
    if args.json:
        json.dump(versioned(result.to_dict()), sys.stdout, indent=2)
        print()
    else:
        for line in lines(result):
            print(line)
    return 0


def _nodes(nodes: list[int], limit: int = 6) -> str:
    shown = ", ".join(map(str, nodes[:limit]))
    return shown + (f", … {len(nodes) - limit} more" if len(nodes) > limit else "")


def _progress(row: NodeError) -> None:
    print(
        f"  cut after node {row.node} ({row.op}): {'not run' if row.stats is None else 'measured'}",
        file=sys.stderr,
        flush=True,
    )


def _stats_line(stats: ErrorStats) -> str:
    max_abs, mean_abs, cosine, snr = stats.cells()
    text = f"max abs {max_abs}, mean abs {mean_abs}, cosine {cosine}, SNR {snr} dB"
    return text + (f", {stats.nonfinite} values inf or NaN" if stats.nonfinite else "")


def lines(result: NumericsResult) -> list[str]:
    """The text output: what was compared on what, the end-to-end difference, the first breaking node, the table."""
    spec, scan, options = result.spec, result.scan, result.options
    out = [
        f"model      {spec.display_name}  ({spec.path}), {scan.nodes} nodes, {scan.cuttable} can be cut",
        f"delegate   {delegation_line(result.report)}",
        f"precision  {result.precision}; against {options.against.value}: {result.reference}",
        f"inputs     {result.inputs.description}",
        f"threshold  a node breaks at {options.threshold.describe()}, or at a value inf/NaN where the reference's "
        "is finite",
        f"end to end {_stats_line(result.end_to_end)} (both whole models, every output)",
    ]
    first = result.first_row
    if first is not None and first.stats is not None:
        out.append(f"first breaking node {first.node} ({first.op}, '{first.tensors[0]}'): {first.why}")
    else:
        out.append("first breaking node: none" + (" measured" if scan.output_breaks else ""))
    if scan.uncut:
        reasons: dict[str, list[int]] = {}
        for u in scan.uncut:
            reasons.setdefault(f"{u.op}: {u.reason}", []).append(u.node)
        said = "; ".join(
            f"{len(nodes)} {why} (node{'s' if len(nodes) > 1 else ''} {_nodes(nodes)})"
            for why, nodes in reasons.items()
        )
        out.append(f"not cut    {said}")
    out.append("")
    sets = result.inputs.count
    out.extend(text_lines(scan.rows, f"{result.precision}, {sets} input set{'s' if sets != 1 else ''}"))
    for note in scan.notes:
        out.append(f"note: {note}")
    cost = scan.cost
    out.append(
        f"cost       {cost.cuts_compiled} cuts compiled on {options.delegate.value} ({cost.cuts_refused} refused): "
        f"compile {cost.compile_s:.1f} s, run {cost.run_s:.1f} s; reference {result.reference_s:.1f} s, "
        f"whole models {result.end_to_end_s:.1f} s; {result.seconds:.1f} s in all ({scan.mode.value}"
        + (", --all for every node)" if scan.mode == Mode.SEARCH else ")")
    )
    return out


COMMAND = Command(
    name="numerics",
    help="each node's error on a delegate against a reference, and the first node that breaks the output",
    description="Cut the model after its nodes and run each prefix on the delegate (gpu, coreml or cpu): the "
    "error of each node's tensor against the reference's (XNNPACK at fp32, or LiteRT's reference kernels): max "
    "and mean absolute difference, cosine similarity, SNR in dB, dequantized for integer tensors. By default a "
    "bisection finds the first node whose error crosses the threshold and the table shows the nodes around it and "
    "the error's growth to the outputs; --all cuts after every node. Inputs: image files, --source frames, or "
    "the seeded generator (docs/numerics.md).",
    add_arguments=add_arguments,
    run=run,
)
