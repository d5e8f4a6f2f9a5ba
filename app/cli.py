"""Command line: subcommands parse arguments and wire the core together; no logic lives here."""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path

from app import __version__
from app.backends import BACKENDS, SessionReport, get_backend
from app.backends.cpu import default_threads
from app.classify import ImageFailure, ImageResult, classify_images
from app.errors import DelegateScopeError
from app.model import DEFAULT_MODEL, ModelSpec, load_model_spec

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
    c.add_argument("--delegate", default="cpu", choices=sorted(BACKENDS), help="backend to run on (default cpu)")
    c.add_argument("--threads", type=_positive_int, help=f"CPU threads (default {default_threads()} here)")
    c.add_argument("--top-k", type=_positive_int, default=5, help="predictions per image (default 5)")
    c.add_argument("--mean", type=_floats, help="normalisation mean, one value or R,G,B (overrides the model's own)")
    c.add_argument("--std", type=_floats, help="normalisation std, one value or R,G,B")
    c.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    c.add_argument("images", nargs="+", type=Path, metavar="IMAGE")
    c.set_defaults(handler=cmd_classify)
    return parser


def _warn(message: str) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def _delegation_line(report: SessionReport) -> str:
    parts = [f"{report.requested} -> {report.used}", report.accelerator]
    if report.nodes_total is not None:
        plural = "s" if report.partitions != 1 else ""
        parts.append(
            f"{report.nodes_delegated} of {report.nodes_total} nodes delegated in {report.partitions} partition{plural}"
        )
    if report.cpu_ops:
        parts.append("left on CPU kernels: " + ", ".join(report.cpu_ops))
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
        print(f"{result.image}   preprocess {result.preprocess_ms:.2f} ms, inference {result.inference_ms:.2f} ms")
        for rank, p in enumerate(result.top, 1):
            print(f"  {rank:>2}. {p.index:>5}  {p.label[:48]:<48} {p.score:.4f}")


def cmd_classify(args: argparse.Namespace) -> int:
    spec = load_model_spec(args.model, labels_file=args.labels, mean=args.mean, std=args.std)
    backend = get_backend(args.delegate)
    session = backend.open(spec, {"threads": args.threads})
    for warning in spec.warnings + session.report.warnings:  # after open: a refused model gets one line
        _warn(warning)
    try:
        if args.debug:
            for line in session.report.native_log:
                print(f"[runtime] {line}", file=sys.stderr)
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
            "delegate": {"requested": session.report.requested, "used": session.report.used},
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
