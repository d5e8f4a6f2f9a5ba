"""Raw output tensor -> class scores -> top-k predictions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from app.errors import ModelError
from app.model.spec import ModelSpec
from app.model.task import ClassificationLayout


@dataclass(frozen=True)
class Prediction:
    index: int  # the model's own output index (1001-class models: 0 = background)
    label: str
    score: float
    # False: the score is the model's value, not a probability (a feature vector read as scores, values
    # outside [0, 1] or summing past 1): shown as a number, never as a percentage.
    probability: bool = True

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, object] = {"index": self.index, "label": self.label, "score": round(self.score, 6)}
        if not self.probability:  # said only when false: a classifier's JSON stays as it was
            out["probability"] = False
        return out

    def shown(self) -> str:
        """'72.4%' for a probability, '4.588' for a value."""
        return f"{self.score:.1%}" if self.probability else f"{self.score:.4g}"


def softmax(x: np.ndarray) -> np.ndarray:
    z = x - np.max(x)
    e = np.exp(z)
    return e / np.sum(e)


class Postprocessor:
    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        out = spec.output
        self._quantized = out.dtype in ("uint8", "int8")
        self._scale = float(out.scale) if self._quantized and out.scale else 1.0
        self._zero_point = float(out.zero_point or 0) if self._quantized else 0.0
        layout = spec.task.layout if spec.task else None
        classifier = layout if isinstance(layout, ClassificationLayout) else None
        # A feature vector read as scores on request (--task classification): its values, never softmaxed
        # into a distribution they are not.
        self._features = classifier is not None and classifier.features
        self._made_probabilities = spec.output_kind == "probabilities" or (
            classifier is not None and classifier.probabilities
        )
        # Quantization can push a sum of probabilities past 1 by half a step per class.
        self._sum_slack = 0.01 + (0.5 * self._scale * _out_size(spec) if self._quantized else 0.0)

    def scores(self, raw: np.ndarray) -> np.ndarray:
        """Dequantized class scores. Logits become probabilities so scores read the same for every model."""
        # Integer outputs are dequantized; a backend that already returns floats (Core ML runs
        # its own float/fp16 version of an int8 model) is taken as is.
        dequantize = self._quantized and np.issubdtype(raw.dtype, np.integer)
        values = raw.reshape(-1).astype(np.float32)
        if dequantize:
            values = (values - self._zero_point) * self._scale
        if not np.isfinite(values).all():  # never show NaN as a score: it is a broken model, say so
            bad = int((~np.isfinite(values)).sum())
            raise ModelError(f"the model produced {bad} non-finite scores (NaN or infinity) of {values.size}")
        if self._features:
            return values
        if self.spec.output_kind == "logits" or (
            self.spec.output_kind == "unknown"
            and not dequantize
            and (values.min() < -1e-3 or values.max() > 1.0 + 1e-3 or values.sum() > 1.01)
        ):
            values = softmax(values)
        return values

    def are_probabilities(self, scores: np.ndarray) -> bool:
        """Whether `scores` (from `scores`) read as probabilities: each in [0, 1], and summing to at most
        about 1 unless the graph's softmax or sigmoid made them (a sigmoid per class sums past 1)."""
        if self._features or scores.size == 0:
            return False
        if float(scores.min()) < -1e-3 or float(scores.max()) > 1.0 + 1e-3:
            return False
        return self._made_probabilities or float(scores.sum(dtype=np.float64)) <= 1.0 + self._sum_slack

    def top_k(self, scores: np.ndarray, k: int) -> list[Prediction]:
        """The k best, without padding: a score of exactly 0 (a quantized output's floor) says nothing,
        so it is not listed after the first ("background 0.0000" filled a 1001-class model's top-3)."""
        k = max(1, min(k, scores.size))
        probability = self.are_probabilities(scores)
        top = [Prediction(i, self.spec.label(i), float(scores[i]), probability) for i in top_indices(scores, k)]
        if not probability:  # a value of 0 is a value like any other
            return top
        return [p for n, p in enumerate(top) if n == 0 or p.score > 0]

    @staticmethod
    def flat_hint(scores: np.ndarray) -> str | None:
        """A hint when every class scores about the same (top-1 at most twice 1/N): such a model is
        usually fed wrongly (normalisation, channel order, input range) or was never trained."""
        if scores.size < 2 or float(scores.max()) > 2.0 / scores.size:
            return None
        return (
            f"the scores are flat (top-1 {float(scores.max()):.4f}, about 1/{scores.size} classes): check the "
            "input normalisation (--mean/--std) and channel order, or whether the model is trained"
        )


def _out_size(spec: ModelSpec) -> int:
    return max(1, int(np.prod(spec.output.shape or (1,))))


_ARGMAX_UP_TO = 16  # k at most this: k argmax passes; beyond, one stable sort


def top_indices(scores: np.ndarray, k: int) -> list[int]:
    """The k highest scores' indices, highest first, equal scores by index (reproducible).

    argmax passes, not np.argpartition: 4 us against 16 us for 1,000 scores here, and
    argpartition gives up the GIL, which on Python 3.11 beside a GIL-holding thread cost ~0.1-0.8
    ms a call to get back (`benchmarks/investigations/gil_release.py`). On the H200 host (Python 3.12) the
    pipeline's rate did not change measurably: there the results thread waits for the GIL
    wherever it is, LiteRT's GPU wrapper holding it through most of a run.
    """
    if k > _ARGMAX_UP_TO:
        return np.argsort(-scores, kind="stable")[:k].tolist()
    rest = np.array(scores, dtype=np.float64)  # a copy to mask; float64 so -inf is below any score
    picked = []
    for _ in range(k):
        i = int(rest.argmax())  # the first of equal maxima: the lowest index
        picked.append(i)
        rest[i] = -np.inf
    return picked
