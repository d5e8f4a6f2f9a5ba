"""`numerics` as a use case: where a delegate's numbers part from the reference's, node by node
(app/numerics/: cutting, running, comparing, searching), on the inputs the user names (images, frames of
a source, or the seeded generator), with the end-to-end difference of the two whole models beside it."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from app.backends import DelegationReport, open_session
from app.backends.options import BackendOptions, Delegate
from app.errors import ModelError, SourceError, UsageError
from app.model.feed import SEED, InputFeeder, generated
from app.model.image_files import read_image
from app.model.preprocess import Preprocessor, as_bgr_uint8
from app.model.spec import ModelSpec
from app.numerics.cuts import CutModel
from app.numerics.metrics import ErrorStats, Threshold, dequantized, error_stats
from app.numerics.runners import Against, ReferenceTensors, delegate_cuts, reference_tensors
from app.numerics.scan import DEFAULT_GROWTH, DEFAULT_WINDOW, Mode, NodeError, Scan, scan
from app.sources.spec import open_source

DELEGATES = (Delegate.GPU, Delegate.COREML, Delegate.CPU)


@dataclass(frozen=True)
class NumericsOptions:
    delegate: Delegate = Delegate.GPU
    against: Against = Against.CPU
    backend: BackendOptions = field(default_factory=BackendOptions)
    threshold: Threshold = field(default_factory=Threshold)
    mode: Mode = Mode.SEARCH
    window: int = DEFAULT_WINDOW
    growth: int = DEFAULT_GROWTH
    images: tuple[Path, ...] = ()
    source: str | None = None
    frames: int = 1  # frames of the source, or generated input sets
    window_frames: tuple[np.ndarray, ...] = ()  # BGR frames handed over by the window (its current source's)


@dataclass(frozen=True)
class InputsUsed:
    """Which inputs produced the rows, said with them."""

    kind: str  # "images", "source", "window" or "generated"
    count: int  # input sets (images, frames, generated samples)
    description: str

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "count": self.count, "description": self.description}


@dataclass(frozen=True)
class NumericsResult:
    spec: ModelSpec
    options: NumericsOptions
    report: DelegationReport  # the whole model's session on the delegate
    reference: str  # the reference's kernels, in words
    inputs: InputsUsed
    end_to_end: ErrorStats  # the two whole models' outputs, every output
    scan: Scan
    reference_s: float
    end_to_end_s: float
    seconds: float

    @property
    def precision(self) -> str:
        """The delegate's arithmetic: the GPU's (and Core ML's) requested precision, the CPU's fp32."""
        return "fp32" if self.options.delegate == Delegate.CPU else str(self.options.backend.precision)

    @property
    def first_row(self) -> NodeError | None:
        return self.scan.row(self.scan.first_breaking) if self.scan.first_breaking is not None else None

    def to_dict(self) -> dict[str, object]:
        return {
            "model": self.spec.as_json(),
            "delegate": self.options.delegate.value,
            "precision": self.precision,
            "adapter": self.report.adapter,
            "software": self.report.software,
            "against": self.options.against.value,
            "reference": self.reference,
            "inputs": self.inputs.to_dict(),
            "threshold": self.options.threshold.to_dict(),
            "mode": self.scan.mode.value,
            "nodes": self.scan.nodes,
            "cuttable": self.scan.cuttable,
            "first_breaking": self.scan.first_breaking,
            "output_breaks": self.scan.output_breaks,
            "end_to_end": self.end_to_end.to_dict(),
            "rows": [r.to_dict() for r in self.scan.rows],
            "not_cut": [{"node": u.node, "op": u.op, "reason": u.reason} for u in self.scan.uncut],
            "notes": list(self.scan.notes),
            "cost": {
                **self.scan.cost.to_dict(),
                "reference_s": round(self.reference_s, 3),
                "end_to_end_s": round(self.end_to_end_s, 3),
                "total_s": round(self.seconds, 3),
            },
            "warnings": [*self.spec.warnings, *self.report.warnings],
        }


def input_sets(spec: ModelSpec, options: NumericsOptions) -> tuple[list[list[np.ndarray]], InputsUsed]:
    """Every input set (model order): the images, `frames` frames of the source, or `frames` seeded samples."""
    if options.images and options.source:
        raise UsageError("give images or --source, not both")
    if options.window_frames and spec.image_input is not None:
        preprocess, feeder = Preprocessor(spec), InputFeeder(spec)
        sets = [feeder.inputs(preprocess(frame).copy(), k) for k, frame in enumerate(options.window_frames)]
        what = f"{len(sets)} frame{'s' if len(sets) != 1 else ''} of the window's source"
        return sets, InputsUsed("window", len(sets), what)
    if options.images or options.source:
        if spec.image_input is None:
            raise ModelError(
                f"{spec.path.name} takes no image, so images and --source do not fit it; "
                "leave them out to run it on generated inputs (or yours with --inputs FILE.npz)"
            )
        preprocess, feeder = Preprocessor(spec), InputFeeder(spec)
        frames = _images(options.images) if options.images else _frames(options.source or "", options.frames)
        sets = [feeder.inputs(preprocess(frame).copy(), k) for k, frame in enumerate(frames)]
        what = (
            f"{len(sets)} image{'s' if len(sets) != 1 else ''}"
            if options.images
            else f"{len(sets)} frame{'s' if len(sets) != 1 else ''} of {options.source}"
        )
        if feeder.needed:
            what += f"; other inputs {feeder.facts.describe()}"
        return sets, InputsUsed("images" if options.images else "source", len(sets), what)
    # The seeded generator: the image input's values too (a float image in [-1, 1), pixels over their range),
    # the other inputs the feeder's (generated, or the user's --inputs file).
    rng, feeder = np.random.default_rng(SEED), InputFeeder(spec)
    image = spec.image_input
    sets = [
        feeder.inputs(generated(spec.inputs[image], rng) if image is not None else None, k)
        for k in range(options.frames)
    ]
    count = len(sets)
    what = f"{count} generated input set{'s' if count != 1 else ''} (seed {SEED})"
    if spec.options.inputs_file is not None and feeder.needed:
        what += f"; other inputs {feeder.facts.describe()}"
    return sets, InputsUsed("generated", count, what)


def _images(paths: Sequence[Path]) -> list[np.ndarray]:
    return [as_bgr_uint8(read_image(p)) for p in paths]  # ImageError (exit 4) names the one that fails


def _frames(source: str, count: int) -> list[np.ndarray]:
    opened = open_source(source, pace=False, loop=False)
    try:
        frames: list[np.ndarray] = []
        while len(frames) < count:
            frame = opened.read()
            if frame is None:
                break
            frames.append(frame.image)
    finally:
        opened.close()
    if not frames:
        raise SourceError(f"{source} gave no frame")
    return frames


def run_numerics(
    spec: ModelSpec, options: NumericsOptions, on_row: Callable[[NodeError], None] | None = None
) -> NumericsResult:
    """The error table of `options.delegate` against `options.against` on `spec` (see app/numerics/scan.py)."""
    if options.delegate not in DELEGATES:
        raise UsageError(f"numerics compares gpu, coreml or cpu against a reference, not {options.delegate}")
    if options.delegate == Delegate.CPU and options.against == Against.CPU:
        raise UsageError("--delegate cpu against --against cpu compares XNNPACK with itself: use --against reference")
    started = time.perf_counter()
    model = CutModel(spec.content)
    sets, used = input_sets(spec, options)
    shapes = [t.shape for t in spec.inputs]
    # The whole model on the delegate first: its availability (exit 5, never a fallback: a fallback's
    # numbers would be the CPU's), its software-renderer policy, and its own compile checks.
    e2e_started = time.perf_counter()
    session = open_session(spec, options.delegate, options.backend, fallback=False)
    try:
        theirs_whole = [session.run_all(inputs) for inputs in sets]
    finally:
        session.close()
    report = session.report
    e2e_s = time.perf_counter() - e2e_started
    ref_started = time.perf_counter()
    reference = reference_tensors(model, spec.content, options.against, shapes, sets, options.backend.cpu_threads)
    reference_s = time.perf_counter() - ref_started
    e2e_started = time.perf_counter()
    whole_reference = _whole_reference(spec, model, reference, options, sets)
    e2e_s += time.perf_counter() - e2e_started
    ours, theirs = [], []
    for produced, expected in zip(theirs_whole, whole_reference, strict=True):
        for t, a, b in zip(model.graph.outputs, produced, expected, strict=True):
            q = model.quantization(t)
            ours.append(dequantized(a, q))
            theirs.append(dequantized(b, q))
    end_to_end = error_stats(ours, theirs)
    runner = delegate_cuts(options.delegate, options.backend)
    try:
        result = scan(
            model, runner, reference, sets, shapes, options.threshold, options.mode, options.window, options.growth,
            on_row,
        )  # fmt: skip
    finally:
        runner.close()
    return NumericsResult(
        spec,
        options,
        report,
        reference.kernels,
        used,
        end_to_end,
        result,
        reference_s,
        e2e_s,
        time.perf_counter() - started,
    )


def _whole_reference(
    spec: ModelSpec,
    model: CutModel,
    reference: ReferenceTensors,
    options: NumericsOptions,
    sets: Sequence[Sequence[np.ndarray]],
) -> list[list[np.ndarray]]:
    """The reference's outputs of the whole model as it is: the CPU session's (XNNPACK), or the reference
    kernels' run of the whole model (which is what reference_tensors ran)."""
    if options.against == Against.REFERENCE:
        return [[tensors[t] for t in model.graph.outputs] for tensors in reference.tensors]
    session = open_session(spec, Delegate.CPU, options.backend)
    try:
        return [session.run_all(list(inputs)) for inputs in sets]
    finally:
        session.close()
