"""`delegate-scope classify`: image files through one model on one backend, a table or JSON."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from app.backends import DelegationReport, continue_on_cpu, open_session
from app.backends.describe import delegation_line
from app.cli.command import Command
from app.cli.options import add_image_arguments, backend_options, model_options
from app.cli.output import PROG, print_prediction, warn
from app.errors import ModelError, RunFailed
from app.model.spec import ModelSpec, load_model_spec
from app.model.task import Task
from app.schemas import versioned
from app.system.thread_cpu import started_by
from app.tasks.classify import ImageFailure, ImageResult, classify_images


def add_arguments(c: argparse.ArgumentParser) -> None:
    add_image_arguments(c, "predictions per image (default 5)")


def run(args: argparse.Namespace) -> int:
    spec = load_model_spec(args.model, labels_file=args.labels, mean=args.mean, std=args.std,
                           options=model_options(args))  # fmt: skip
    refuse_non_classifier(spec)
    session, runtime_threads = started_by(
        lambda: open_session(spec, args.delegate, backend_options(args), fallback=not args.no_fallback)
    )
    for warning in (*spec.warnings, *session.report.warnings):  # after open: a refused model gets one line
        warn(warning)
    try:
        if args.debug:
            for line in session.report.native_log:
                print(f"[runtime, opening] {line}", file=sys.stderr)
        results: list[ImageResult] = []
        failures: list[ImageFailure] = []
        pending = list(args.images)
        while pending:
            try:
                for outcome in classify_images(spec, session, list(pending), args.top_k, runtime_threads):
                    pending.pop(0)
                    if isinstance(outcome, ImageFailure):
                        failures.append(outcome)
                        print(f"{PROG}: error: {outcome.error}", file=sys.stderr)
                    else:
                        results.append(outcome)
            except RunFailed as exc:  # the rest on the CPU, the image that failed included
                session, runtime_threads = continue_on_cpu(
                    session, exc, spec, args.delegate, backend_options(args), fallback=not args.no_fallback
                )
                warn(f"fell back to CPU: {session.report.fallback_reason}")
    finally:
        session.close()
    if args.json:
        out = {
            "model": spec.as_json(),
            "delegate": delegate_json(session.report, [r.cpu_per_wall for r in results]),
            "results": [r.to_dict() for r in results],
            "errors": [{"image": str(f.image), "error": str(f.error)} for f in failures],
            "warnings": [*spec.warnings, *session.report.warnings],
        }
        json.dump(versioned(out), sys.stdout, indent=2)
        print()
    else:
        _print_table(spec, session.report, results)
    return failures[0].error.exit_code if failures else 0


VALUES_NOTE = "the scores are the model's values, not probabilities (outside [0, 1] or summing past 1)"


def refuse_non_classifier(spec: ModelSpec) -> None:
    """classify reads class scores only; any other model is exit 3 naming its task and `predict`."""
    if spec.is_image_classifier:
        return
    task = spec.task
    evidence = f" ({task.evidence})" if task else ""
    if spec.kind == Task.CLASSIFICATION:  # class scores, but more than the image to feed
        evidence += f", with {len(spec.inputs)} inputs"
    raise ModelError(
        f"{spec.path.name}: classify reads image classifiers; this model reads as {spec.kind.value}{evidence}: "
        f"use `predict` for any image model (or `bench`/`profile` for one that takes no image)"
    )


def _print_table(spec: ModelSpec, report: DelegationReport, results: list[ImageResult]) -> None:
    inp = spec.input
    print(f"model     {spec.display_name}  ({spec.path})")
    print(
        f"          input {'x'.join(str(d) for d in inp.shape)} {inp.dtype}, {spec.classes} classes, "
        f"sha256 {spec.sha256[:12]}"
    )
    print(f"          labels: {spec.labels.source}; normalisation: {spec.normalization.describe()}")
    print(f"delegate  {delegation_line(report)}")
    print(f"          init {report.init_ms:.1f} ms, first inference {report.first_inference_ms:.1f} ms")
    print_prediction(report)
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
        if result.top and not result.top[0].probability:
            print(f"  note: {VALUES_NOTE}")
        if result.hint:
            print(f"  note: {result.hint}")


def delegate_json(report: DelegationReport, cpu_per_wall: list[float]) -> dict[str, Any]:
    """The report as JSON, with the images' median CPU time per wall time (`predict` prints it alike)."""
    out = {k: v for k, v in report.to_dict().items() if k != "native_log"}
    for key in ("init_ms", "first_inference_ms"):
        out[key] = round(out[key], 3)
    ratios = sorted(cpu_per_wall)
    # Offload evidence: process CPU time per inference over wall time (median over the images).
    out["cpu_per_wall"] = round(ratios[len(ratios) // 2], 3) if ratios else None
    return out


COMMAND = Command(
    name="classify",
    help="classify image files",
    description="Classify image files.",
    add_arguments=add_arguments,
    run=run,
)
