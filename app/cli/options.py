"""Command-line options shared by the commands: argument types that give one-line errors, the model
options of every command that reads a model, and the backend options of those that open it on one."""

from __future__ import annotations

import argparse
from pathlib import Path

from app.backends import BACKENDS
from app.backends.options import BackendOptions, ComputeUnits, GpuPrecision, default_threads
from app.model.decode import DETECTION_THRESHOLD
from app.model.spec import DEFAULT_MODEL, ModelOptions, parse_input_shape
from app.model.task import Task


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def one_or_three_floats(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected one number or three separated by commas, got '{text}'") from None
    if len(values) not in (1, 3):
        raise argparse.ArgumentTypeError(f"expected one number or three separated by commas, got '{text}'")
    return values


def positive_float(text: str) -> float:
    value = non_negative_float(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def a_number(text: str) -> float:
    """An option's value as a float, or argparse's one-line error."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None


def non_negative_float(text: str) -> float:
    value = a_number(text)
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text}")
    return value


def a_fraction(text: str) -> float:
    """A number from 0 to 1, or argparse's one-line error."""
    value = a_number(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be from 0 to 1, got {text}")
    return value


def add_score_threshold(p: argparse.ArgumentParser, default: float | None = DETECTION_THRESHOLD) -> None:
    """--score-threshold: the score a detection needs to be kept (those below are counted, not listed).
    `default=None`: a command where something else decides when it is not given (the window's setting)."""
    shown = f"default {default:g}" if default is not None else "default: the window's saved setting"
    p.add_argument(
        "--score-threshold",
        type=a_fraction,
        default=default,
        metavar="0..1",
        help=f"detection: the score a detection needs to be kept ({shown}); those below are counted, not listed",
    )


def non_negative_int(text: str) -> int:
    return 0 if text.strip() == "0" else positive_int(text)


def input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    try:
        return parse_input_shape(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_model_options(p: argparse.ArgumentParser, model: bool = True) -> None:
    """The model and how to read it, for every command that reads one (`model=False`: a command that
    names its models its own way, and takes only how to read them)."""
    if model:
        p.add_argument(
            "--model", default=DEFAULT_MODEL, help=f"bundled model name or .tflite path (default {DEFAULT_MODEL})"
        )
        p.add_argument("--labels", type=Path, help="labels file, one label per line (overrides the model's own)")
    add_reading_options(p)


def add_reading_options(p: argparse.ArgumentParser) -> None:
    """--task, --input-shape and --inputs: how to read a model beyond its file (ModelOptions)."""
    p.add_argument(
        "--task",
        choices=[t.value for t in Task],
        help="what the model does, instead of what its metadata or structure says (it must fit the model)",
    )
    p.add_argument(
        "--input-shape",
        type=input_shape,
        action="append",
        default=[],
        metavar="NAME=1x224x224x3",
        help="fix the dynamic dimensions of an input (by name or index; repeat for several inputs)",
    )
    p.add_argument(
        "--inputs",
        type=Path,
        metavar="FILE.npz",
        help="values for the inputs that are not the image (by input name, else arr_0, arr_1... in model order)",
    )


def model_options(args: argparse.Namespace) -> ModelOptions:
    """The ModelOptions of a command's --task, --input-shape and --inputs (load_model_spec's `options`)."""
    return ModelOptions(
        task=Task(args.task) if getattr(args, "task", None) else None,
        input_shapes=tuple(getattr(args, "input_shape", None) or ()),
        inputs_file=getattr(args, "inputs", None),
    )


def add_backend_options(p: argparse.ArgumentParser) -> None:
    """The backend and its options, for every command that opens a model on one (see backend_options)."""
    p.add_argument("--delegate", default="cpu", choices=list(BACKENDS), help="backend to run on (default cpu)")
    p.add_argument("--no-fallback", action="store_true", help="exit 5 instead of falling back to CPU")
    p.add_argument("--threads", type=positive_int, help=f"CPU threads (default {default_threads()} here)")
    add_delegate_tuning(p)


def add_delegate_tuning(p: argparse.ArgumentParser) -> None:
    """How the GPU and Core ML delegates run (backend_options reads them), for every command that opens one."""
    p.add_argument(
        "--gpu-precision",
        choices=list(GpuPrecision),
        default=GpuPrecision.FP16,
        help="GPU: allow fp16 (default) or enforce fp32",
    )
    p.add_argument(
        "--allow-software-gpu", action="store_true", help="GPU: run even on a software renderer (llvmpipe, SwiftShader)"
    )
    p.add_argument(
        "--coreml-units",
        choices=list(ComputeUnits),
        default=ComputeUnits.ALL,
        help="Core ML compute units (default all; the TFLite Core ML delegate hard-codes all)",
    )


def backend_options(args: argparse.Namespace) -> BackendOptions:
    return BackendOptions(
        threads=args.threads,
        precision=args.gpu_precision,
        allow_software=args.allow_software_gpu,
        wait_hint=getattr(args, "gpu_wait_hint", False),
        own_process=getattr(args, "gpu_process", "off") == "on",  # bench decides "auto" (gpu_process_pays)
        compute_units=args.coreml_units,
    )


def add_image_arguments(p: argparse.ArgumentParser, top_k_help: str) -> None:
    """The options of the commands that run image files through one model (classify, predict)."""
    add_model_options(p)
    add_backend_options(p)
    p.add_argument("--top-k", type=positive_int, default=5, help=top_k_help)
    p.add_argument(
        "--mean",
        type=one_or_three_floats,
        help="the model's input is (pixel - mean) / std, pixels 0-255 in RGB: the mean, one value or R,G,B "
        "(default: the model's sidecar, else its TFLite metadata, else 127.5 for a float input and raw pixels "
        "for an integer one; docs/howto-models.md)",
    )
    p.add_argument(
        "--std",
        type=one_or_three_floats,
        help="the std of (pixel - mean) / std, one value or R,G,B, not 0 (default as --mean; 127.5 when only "
        "--mean is given)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    p.add_argument("images", nargs="+", type=Path, metavar="IMAGE", help="image files (any format OpenCV reads)")


def add_gate_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup, baseline: bool = True) -> None:
    """--baseline, --budget and --strict-config (bench, sweep); compare takes --budget only (docs/gates.md)."""
    if baseline:
        parser.add_argument(
            "--baseline",
            type=Path,
            metavar="FILE.json",
            help="gate this run against a summary written earlier by the same command's --json (same model by "
            "sha256, delegate, source; default budgets inference.p50<=+10%% and rate>=-10%%)",
        )
        parser.add_argument(
            "--strict-config",
            action="store_true",
            help="with --baseline: a differing setting (threads, precision, ...) is a usage error, not a difference",
        )
    parser.add_argument(
        "--budget",
        action="append",
        metavar="EXPR",
        help="a budget, repeatable: inference.p50<=+10%%, end_to_end.p95<=20ms, rate>=-5%%, agreement.top1>=0.98 "
        "(signed: against the baseline; exit 7 when one fails; the figures: docs/gates.md)",
    )
