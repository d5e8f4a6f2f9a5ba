"""Run split pieces one after another, as TFLite runs a partly delegated model.

Each piece reads whole-graph tensors from the model's inputs or from earlier pieces and hands
its outputs on; a piece is anything with `run(list of arrays) -> list of arrays` in its own
input and output order: LiteRT on the CPU here, a Core ML model on macOS (app/backends/coreml/backend.py).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from ai_edge_litert.interpreter import Interpreter

from app.coreml_mil.split import Piece
from app.errors import ModelError


class PieceRunner(Protocol):
    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]: ...


class LiteRTPiece:
    """One piece's .tflite in LiteRT (XNNPACK applied, as the CPU backend does)."""

    def __init__(self, content: bytes, threads: int = 1) -> None:
        try:
            self._interpreter = Interpreter(model_content=content, num_threads=threads)
            self._interpreter.allocate_tensors()
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"the LiteRT runtime refused a piece of the split model: {exc}") from None
        self._inputs = [d["index"] for d in self._interpreter.get_input_details()]
        self._outputs = [d["index"] for d in self._interpreter.get_output_details()]

    def run(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        for index, value in zip(self._inputs, inputs, strict=True):
            self._interpreter.set_tensor(index, value)
        self._interpreter.invoke()
        return [self._interpreter.get_tensor(i).copy() for i in self._outputs]


@dataclass(frozen=True)
class PieceTiming:
    piece: int
    where: str  # "coreml" or "cpu"
    ms: float


def run_pieces(
    pieces: Sequence[Piece],
    runners: Sequence[PieceRunner],
    feeds: Mapping[int, np.ndarray],
    outputs: Sequence[int],
) -> tuple[list[np.ndarray], list[PieceTiming]]:
    """The model's outputs (whole-graph tensor indices `outputs`) from `feeds` (its inputs by tensor
    index), running every piece in order; with each piece's wall time."""
    values = dict(feeds)
    timings = []
    for piece, runner in zip(pieces, runners, strict=True):
        missing = [t for t in piece.inputs if t not in values]
        if missing:
            raise ModelError(f"piece {piece.index} reads tensors {missing} that nothing before it produced")
        started = time.perf_counter()
        produced = runner.run([values[t] for t in piece.inputs])
        timings.append(PieceTiming(piece.index, piece.where, (time.perf_counter() - started) * 1000))
        if len(produced) != len(piece.outputs):
            raise ModelError(f"piece {piece.index} gave {len(produced)} outputs, expected {len(piece.outputs)}")
        values.update(zip(piece.outputs, produced, strict=True))
    return [values[t] for t in outputs], timings
