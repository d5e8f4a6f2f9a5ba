"""Command line: subcommands parse arguments and wire the core together; no logic lives here."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

from app import __version__
from app.backends import BACKENDS, SessionReport, open_session
from app.backends.cpu import default_threads
from app.backends.gpu import PRECISIONS
from app.classify import ImageFailure, ImageResult, classify_images
from app.delegates import delegate_statuses
from app.errors import DelegateScopeError
from app.model import DEFAULT_MODEL, ModelSpec, load_model_spec
from app.native_log import NativeLogFile

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="See where and how fast a TFLite model really runs.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show tracebacks and native runtime logs")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    c = sub.add_parser("classify", parents=[common], help="classify image files", description="Classify image files.")
    c.add_argument(
        "--model", default=DEFAULT_MODEL, help=f"bundled model name or .tflite path (default {DEFAULT_MODEL})"
    )
    c.add_argument("--labels", type=Path, help="labels file, one label per line (overrides the model's own)")
    c.add_argument("--delegate", default="cpu", choices=list(BACKENDS), help="backend to run on (default cpu)")
    c.add_argument("--no-fallback", action="store_true", help="exit 5 instead of falling back to CPU")
    c.add_argument(
        "--gpu-precision", choices=PRECISIONS, default="fp16", help="GPU: allow fp16 (default) or enforce fp32"
    )
    c.add_argument(
        "--allow-software-gpu", action="store_true", help="GPU: run even on a software renderer (llvmpipe, SwiftShader)"
    )
    c.add_argument("--threads", type=_positive_int, help=f"CPU threads (default {default_threads()} here)")
    c.add_argument("--top-k", type=_positive_int, default=5, help="predictions per image (default 5)")
    c.add_argument("--mean", type=_floats, help="normalisation mean, one value or R,G,B (overrides the model's own)")
    c.add_argument("--std", type=_floats, help="normalisation std, one value or R,G,B")
    c.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    c.add_argument("images", nargs="+", type=Path, metavar="IMAGE")
    c.set_defaults(handler=cmd_classify)

    d = sub.add_parser(
        "delegates",
        parents=[common],
        help="list backends and whether they can run here",
        description="List every backend with whether it can run on this machine, and why not.",
    )
    d.add_argument("--json", action="store_true", help="print JSON on stdout")
    d.set_defaults(handler=cmd_delegates)
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
    for result in results:
        print()
        print(
            f"{result.image}   preprocess {result.preprocess_ms:.2f} ms, inference {result.inference_ms:.2f} ms "
            f"(CPU {result.inference_cpu_ms:.2f} ms, {result.cpu_per_wall:.2f}x wall)"
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


def cmd_classify(args: argparse.Namespace) -> int:
    spec = load_model_spec(args.model, labels_file=args.labels, mean=args.mean, std=args.std)
    options = {"threads": args.threads, "precision": args.gpu_precision, "allow_software": args.allow_software_gpu}
    session = open_session(spec, args.delegate, options, fallback=not args.no_fallback)
    for warning in spec.warnings + session.report.warnings:  # after open: a refused model gets one line
        _warn(warning)
    try:
        if args.debug:
            for line in session.report.native_log:
                print(f"[runtime, opening] {line}", file=sys.stderr)
        results: list[ImageResult] = []
        failures: list[ImageFailure] = []
        for outcome in classify_images(spec, session, args.images, args.top_k):
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 0
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
