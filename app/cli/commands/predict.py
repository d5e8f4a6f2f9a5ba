"""`delegate-scope predict`: image files through any image model on one backend: what its task reads
(top classes, detections, class shares, keypoints) and every output's statistics, a line or JSON."""

from __future__ import annotations

import argparse
import json
import sys

from app.backends import DelegationReport, continue_on_cpu, open_session
from app.backends.describe import delegation_line
from app.cli.command import Command
from app.cli.commands.classify import delegate_json
from app.cli.options import add_image_arguments, add_score_threshold, backend_options, model_options
from app.cli.output import PROG, print_prediction, warn
from app.errors import RunFailed
from app.model.feed import InputFeeder
from app.model.spec import ModelSpec, load_model_spec
from app.schemas import versioned
from app.system.thread_cpu import started_by
from app.tasks.predict import ImageFailure, PredictResult, predict_images, refuse_without_image


def add_arguments(c: argparse.ArgumentParser) -> None:
    add_image_arguments(c, "classification: predictions per image (default 5)")
    add_score_threshold(c)


def run(args: argparse.Namespace) -> int:
    spec = load_model_spec(args.model, labels_file=args.labels, mean=args.mean, std=args.std,
                           options=model_options(args))  # fmt: skip
    refuse_without_image(spec)  # before a backend opens: the reason is the model, not the machine
    feeder = InputFeeder(spec)  # a bad --inputs file is exit 4 before anything runs
    session, runtime_threads = started_by(
        lambda: open_session(spec, args.delegate, backend_options(args), fallback=not args.no_fallback)
    )
    for warning in (*spec.warnings, *session.report.warnings):
        warn(warning)
    results: list[PredictResult] = []
    failures: list[ImageFailure] = []
    try:
        if args.debug:
            for line in session.report.native_log:
                print(f"[runtime, opening] {line}", file=sys.stderr)
        pending = list(args.images)
        while pending:
            try:
                images = predict_images(spec, session, list(pending), args.top_k, runtime_threads, feeder,
                                        args.score_threshold)  # fmt: skip
                for outcome in images:
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
            "inputs": feeder.facts.to_dict() if feeder.needed else None,
            "results": [r.to_dict() for r in results],
            "errors": [{"image": str(f.image), "error": str(f.error)} for f in failures],
            "warnings": [*spec.warnings, *session.report.warnings],
        }
        json.dump(versioned(out), sys.stdout, indent=2)
        print()
    else:
        _print_lines(spec, session.report, results, feeder)
    return failures[0].error.exit_code if failures else 0


def _print_lines(spec: ModelSpec, report: DelegationReport, results: list[PredictResult], feeder: InputFeeder) -> None:
    inp = spec.input
    task = spec.task
    print(f"model     {spec.display_name}  ({spec.path})")
    framing = "centre crop" if spec.crops else "whole frame, letterboxed" if spec.letterboxes else "whole frame"
    print(
        f"          input {'x'.join(str(d) for d in inp.shape)} {inp.dtype}, sha256 {spec.sha256[:12]}; "
        f"{framing}, {spec.normalization.describe()}"
    )
    print(f"          task {spec.kind.value}" + (f" ({task.evidence})" if task else ""))
    print(f"          labels: {spec.labels.source}")
    if feeder.needed:
        print(f"          other inputs: {feeder.facts.describe()}")
    print(f"delegate  {delegation_line(report)}")
    print(f"          init {report.init_ms:.1f} ms, first inference {report.first_inference_ms:.1f} ms")
    print_prediction(report)
    for result in results:
        values = " (values, not probabilities)" if result.top and not result.top[0].probability else ""
        print(
            f"{result.image}   {result.task.value}: {result.summary()}{values}   "
            f"(preprocess {result.preprocess_ms:.2f} ms, "
            f"inference {result.inference_ms:.2f} ms, CPU {result.cpu.inference_ms:.2f} ms, "
            f"{result.cpu_per_wall:.2f}x wall)"
        )


COMMAND = Command(
    name="predict",
    help="what any image model says of image files",
    description="Run image files through any image model (classifier, detector, segmenter, pose or landmark "
    "model, or one read as raw) and print what its task reads: top classes, detections with boxes, the share of "
    "each class's pixels, keypoints; and every output's statistics. Detectors, segmenters and keypoint models see "
    "the whole image resized, classifiers a centre crop (docs/guide.md).",
    add_arguments=add_arguments,
    run=run,
)
