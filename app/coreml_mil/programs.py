"""A float .tflite made ready for Core ML: its pieces, and the delegated ones as cached ML programs.

`split_model` needs only LiteRT's schema (any OS); `load_or_convert` translates and converts the
delegated pieces with coremltools (imported without TensorFlow), or reads them from the cache.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.coreml_mil.cache import IO, CachedPiece, CacheEntry, CacheKey, ProgramCache
from app.coreml_mil.split import Piece, piece_models, plan_pieces
from app.coverage import Coverage
from app.coverage.coreml_rules import CoreMLOptions, predict
from app.system.names import GpuPrecision
from app.tflite.graph import Graph, read_graph


@dataclass(frozen=True)
class SplitModel:
    graph: Graph
    coverage: Coverage  # the Core ML delegate's selection (predicted from its rules)
    pieces: tuple[Piece, ...]
    piece_bytes: tuple[bytes, ...]  # each piece as a stand-alone .tflite (run in LiteRT when not delegated)


@dataclass(frozen=True)
class Prepared:
    split: SplitModel
    entry: CacheEntry
    seconds: float  # to read the cache or to translate and convert


def split_model(data: bytes, coreml_version: int = 3) -> SplitModel:
    graph = read_graph(data)
    coverage = predict(graph, CoreMLOptions(coreml_version=coreml_version))
    pieces = tuple(plan_pieces(graph, coverage))
    return SplitModel(graph, coverage, pieces, tuple(piece_models(data, list(pieces))))


def cache_key(data: bytes, precision: str, coreml_version: int) -> CacheKey:
    from app.coreml_mil.coremltools_import import import_coremltools
    from app.coreml_mil.translate import TRANSLATOR_VERSION

    ct = import_coremltools()
    return CacheKey(hashlib.sha256(data).hexdigest(), precision, coreml_version, TRANSLATOR_VERSION, ct.__version__)


def _build(data: bytes, split: SplitModel, precision: str) -> Callable[[Path], list[CachedPiece]]:
    from app.coreml_mil.translate import convert, translate

    def build(folder: Path) -> list[CachedPiece]:
        built = []
        for piece in split.pieces:
            if not piece.delegated:
                continue
            translation = translate(data, split.graph, piece)
            mlmodel = convert(translation, precision)
            package = f"piece{piece.index}.mlpackage"
            mlmodel.save(str(folder / package))
            built.append(
                CachedPiece(
                    piece.index,
                    package,
                    tuple(IO(io.name, io.tensor, io.shape) for io in translation.inputs),
                    tuple(IO(io.name, io.tensor, io.shape) for io in translation.outputs),
                )
            )
        return built

    return build


def load_or_convert(
    data: bytes,
    precision: GpuPrecision | str = GpuPrecision.FP16,
    coreml_version: int = 3,
    cache: ProgramCache | None = None,
) -> Prepared:
    """The model's pieces, with an ML program per delegated piece from the cache or converted now."""
    started = time.perf_counter()
    split = split_model(data, coreml_version)
    entry = (cache or ProgramCache()).load_or_build(
        cache_key(data, precision, coreml_version), _build(data, split, precision)
    )
    delegated = [p.index for p in split.pieces if p.delegated]
    if [p.piece for p in entry.pieces] != delegated:
        raise ValueError(f"the cached programs are for pieces {[p.piece for p in entry.pieces]}, not {delegated}")
    return Prepared(split, entry, time.perf_counter() - started)
