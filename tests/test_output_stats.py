"""OutputStats read in place (the results thread's fast path) give what the dequantized copy gives."""

from __future__ import annotations

import numpy as np
import pytest

from app.model.decode import OutputStats, dequantized
from app.tflite.file import TensorInfo


def info(dtype: str, shape: tuple[int, ...], scale: float | None = None, zero: int | None = None) -> TensorInfo:
    return TensorInfo("out", shape, shape, dtype, scale, zero)


RNG = np.random.default_rng(0)
CASES = [
    (info("float32", (1, 33, 33, 21)), RNG.random((1, 33, 33, 21)).astype(np.float32)),
    (info("uint8", (1, 10), 0.00390625, 3), RNG.integers(0, 256, (1, 10)).astype(np.uint8)),
    (info("int8", (1, 10), 0.5, -2), RNG.integers(-128, 128, (1, 10)).astype(np.int8)),
    (info("int64", (1, 4)), np.array([[5, 9, 0, 2]])),
    (info("float32", (3,)), np.array([1.0, np.nan, 3.0], np.float32)),  # the slow path: NaN counted
    (info("float32", (2,)), np.array([np.inf, -1.0], np.float32)),
]


@pytest.mark.parametrize(("tensor", "array"), CASES)
def test_in_place_figures_equal_the_dequantized_ones(tensor: TensorInfo, array: np.ndarray) -> None:
    fast = OutputStats.of(tensor, array)
    slow = OutputStats.of(tensor, array, dequantized(tensor, array))  # given values: the original path
    assert fast.to_dict() == slow.to_dict()
    assert fast.non_finite == int(np.size(array) - np.isfinite(array).sum())
