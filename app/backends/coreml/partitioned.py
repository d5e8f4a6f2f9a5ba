"""Core ML for any float .tflite (macOS): the delegated partitions in Core ML, the rest in LiteRT, in order.

The TFLite Core ML delegate exists only in the iOS runtime, so this does what it does by hand: the
model is split where the delegate's rules put its partitions (app/coverage/coreml_rules.py,
app/coreml_mil/split.py), each delegated partition runs as an ML program translated from its nodes
(app/coreml_mil/translate.py, cached on disk by model sha256 and options), and the nodes the delegate
leaves run in LiteRT on the CPU, piece after piece, as TFLite's execution plan would run them.
Differences from the delegate, said in the report: the delegate builds a neural-network Core ML
model (coreml_version 2 or 3), this an ML program (macOS 13+), whose numerics and compute-unit
choices can differ.
"""

from __future__ import annotations

import time
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from app.backends.base import CoreMLMode, DelegationReport, first_line, time_first_inference
from app.backends.coreml.loading import coremltools_or_unavailable, warning_lines
from app.backends.options import ComputeUnits, GpuPrecision
from app.coreml_mil.cache import CachedPiece, ProgramCache
from app.coreml_mil.execute import LiteRTPiece, PieceRunner, PieceTiming, run_pieces
from app.coreml_mil.programs import Prepared, load_or_convert
from app.coreml_mil.split import CoreMLPieces, summarize_pieces
from app.coreml_mil.translate import Untranslatable
from app.errors import BackendUnavailable, ModelError
from app.model.spec import ModelSpec
from app.system.native_log import capture_stderr


class CoreMLPiece:
    """One delegated partition as a Core ML model; inputs and outputs NHWC float32, as in the .tflite."""

    def __init__(self, ct: Any, path: str, piece: CachedPiece, compute_units: Any) -> None:
        self.piece = piece
        self.model = ct.models.MLModel(path, compute_units=compute_units)
        if self.model.__proxy__ is None:
            text = str(getattr(self.model, "_framework_error", None) or "").strip()  # None off macOS
            detail = first_line(text) if text else "no Core ML runtime here (ML programs need macOS 13 or later)"
            raise BackendUnavailable(f"Core ML cannot load the program of piece {piece.piece}: {detail}")

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        feeds = {io.name: np.ascontiguousarray(x, np.float32) for io, x in zip(self.piece.inputs, inputs, strict=True)}
        try:
            out = self.model.predict(feeds)
        except Exception as exc:  # coremltools raises plain Exception
            raise ModelError(f"Core ML failed to run piece {self.piece.piece}: {first_line(exc)}") from None
        return [np.asarray(out[io.name], np.float32).reshape(io.shape) for io in self.piece.outputs]


@dataclass(frozen=True)
class _Opened:
    """What converting and loading the pieces gave, with what the runtimes said meanwhile."""

    prepared: Prepared
    prepare_ms: float  # converting or finding the cached programs
    native_log: list[str]
    caught: list[warnings.WarningMessage]


class PartitionedCoreMLSession:
    def __init__(
        self,
        spec: ModelSpec,
        units: ComputeUnits | str,
        precision: GpuPrecision | str,
        threads: int,
        cache: ProgramCache | None = None,
    ) -> None:
        self._spec_outputs = spec.outputs
        if spec.input.dtype != "float32":
            raise BackendUnavailable(
                "the TFLite Core ML delegate takes no integer-quantized model, and this one has no exported "
                ".mlpackage beside it"
            )
        ct = coremltools_or_unavailable()
        compute_units = getattr(ct.ComputeUnit, ComputeUnits(units).coremltools_name)
        started = time.perf_counter()
        opened, core_ml = self._open(ct, spec, precision, compute_units, threads, cache)
        init_ms = (time.perf_counter() - started) * 1000
        if not core_ml:
            # The delegate would not be applied at all: TFLite runs the whole model on the CPU.
            raise BackendUnavailable(
                "the TFLite Core ML delegate would take none of this model's nodes "
                f"({opened.prepared.split.coverage.log})"
            )
        devices, plan_warnings = _plan(core_ml, compute_units)
        self.last_timings: list[PieceTiming] = []
        first_inference_ms = time_first_inference(self, spec)
        self.report = _partitioned_report(
            opened, units, precision, threads, devices, plan_warnings, init_ms, first_inference_ms, self.last_timings
        )

    def _open(
        self,
        ct: Any,
        spec: ModelSpec,
        precision: GpuPrecision | str,
        compute_units: Any,
        threads: int,
        cache: ProgramCache | None,
    ) -> tuple[_Opened, list[CoreMLPiece]]:
        """The model split where the delegate would split it, its delegated pieces as loaded ML programs."""
        started = time.perf_counter()
        try:
            with capture_stderr() as log, warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                prepared = load_or_convert(spec.content, precision, cache=cache)
                prepare_ms = (time.perf_counter() - started) * 1000
                self._prepared = prepared
                self._runners_list, core_ml = self._runners(ct, prepared, compute_units, threads)
        except Untranslatable as exc:  # the delegate would take it, the translator cannot: say so, run on the CPU
            raise BackendUnavailable(f"a delegated node has no Core ML translation here: {exc}") from None
        except (BackendUnavailable, ModelError):
            raise
        except Exception as exc:  # coremltools' converter and loader raise many kinds
            raise BackendUnavailable(f"the model could not be made into Core ML programs: {first_line(exc)}") from None
        return _Opened(prepared, prepare_ms, log.lines(), caught), core_ml

    @staticmethod
    def _runners(
        ct: Any, prepared: Prepared, compute_units: Any, threads: int
    ) -> tuple[list[PieceRunner], list[CoreMLPiece]]:
        by_piece = {p.piece: p for p in prepared.entry.pieces}
        runners: list[PieceRunner] = []
        core_ml: list[CoreMLPiece] = []
        for piece, content in zip(prepared.split.pieces, prepared.split.piece_bytes, strict=True):
            if piece.delegated:
                cached = by_piece[piece.index]
                runner = CoreMLPiece(ct, str(prepared.entry.path / cached.package), cached, compute_units)
                core_ml.append(runner)
                runners.append(runner)
            else:
                runners.append(LiteRTPiece(content, threads))
        return runners, core_ml

    def run_all(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Every input and output: the same pieces, fed every graph input and asked for every output."""
        graph = self._prepared.split.graph
        feeds = {t: np.ascontiguousarray(x, np.float32 if x.dtype.kind == "f" else x.dtype)
                 for t, x in zip(graph.inputs, inputs, strict=True)}  # fmt: skip
        outputs, self.last_timings = run_pieces(self._prepared.split.pieces, self._runners_list, feeds, graph.outputs)
        return [np.asarray(o).reshape(info.shape) if info.shape else np.asarray(o)
                for o, info in zip(outputs, self._spec_outputs, strict=True)]  # fmt: skip

    def run(self, input_tensor: np.ndarray) -> np.ndarray:
        graph = self._prepared.split.graph
        outputs, self.last_timings = run_pieces(
            self._prepared.split.pieces,
            self._runners_list,
            {graph.inputs[0]: np.ascontiguousarray(input_tensor, np.float32)},
            graph.outputs[:1],
        )
        return outputs[0].reshape(-1)

    def close(self) -> None:
        self._runners_list = []


def _plan(core_ml: list[CoreMLPiece], compute_units: Any) -> tuple[Counter[str], list[str]]:
    """MLComputePlan's MIL ops per preferred device over every piece; why there is none, where macOS has none."""
    from app.backends.coreml.plan import compute_plan

    devices: Counter[str] = Counter()
    for piece in core_ml:
        plan, no_plan = compute_plan(piece.model, compute_units)
        if plan is None:
            return devices, [no_plan or "no per-op device plan"]
        devices.update(plan.devices)
    return devices, []


def _partitioned_report(
    opened: _Opened,
    units: ComputeUnits | str,
    precision: GpuPrecision | str,
    threads: int,
    devices: Counter[str],
    plan_warnings: list[str],
    init_ms: float,
    first_inference_ms: float,
    first_timings: list[PieceTiming],
) -> DelegationReport:
    prepared = opened.prepared
    split = prepared.split
    coverage = split.coverage
    options: dict[str, object] = {
        "compute_units": units,
        "precision": precision,
        "threads": threads,  # the LiteRT pieces
        "pieces": [{"piece": p.index, "where": p.where, "nodes": len(p.nodes)} for p in split.pieces],
        "programs": "cache hit" if prepared.entry.hit else "converted now",
        "prepare_ms": round(opened.prepare_ms, 1),
    }
    if devices:
        options["compute_plan"] = dict(sorted(devices.items()))  # MIL ops per preferred device, all pieces
    options["first_inference_pieces_ms"] = [round(t.ms, 3) for t in first_timings]
    report_warnings = warning_lines(opened.caught) + plan_warnings
    if prepared.entry.rebuilt_because:
        report_warnings.append(f"cached Core ML programs rebuilt: {prepared.entry.rebuilt_because}")
    report_warnings.append(
        "runs ML programs translated from the delegate's partitions; the TFLite Core ML delegate itself "
        "builds neural-network models, whose numerics and device choices can differ"
    )
    left = [n for n in coverage.nodes if not n.delegated]
    return DelegationReport(
        requested="coreml",
        used="coreml",
        accelerator=f"Core ML (compute units: {units})",
        init_ms=init_ms,
        first_inference_ms=first_inference_ms,
        nodes_total=coverage.nodes_total,
        nodes_delegated=coverage.nodes_delegated,
        partitions=coverage.delegated_partitions,
        cpu_ops=tuple(sorted({n.op for n in left})),
        fully_accelerated=not left,
        options=options,
        coreml_mode=CoreMLMode.PARTITIONED,
        warnings=tuple(report_warnings),
        native_log=tuple(opened.native_log),
        coverage=coverage,
        # What the window shows: the pieces this session runs, with the first inference's time of each.
        coreml_pieces=CoreMLPieces(
            summarize_pieces(split.graph, split.pieces),
            first_inference_ms=tuple(t.ms for t in first_timings) if first_timings else None,
        ),
    )
