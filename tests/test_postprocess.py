"""Top-k: highest first, equal scores by index, for every k the window and commands offer."""

import numpy as np
import pytest

from app.model.postprocess import top_indices


def reference(scores: np.ndarray, k: int) -> list[int]:
    return sorted(range(scores.size), key=lambda i: (-float(scores[i]), i))[:k]


@pytest.mark.parametrize("k", [1, 2, 5, 10, 16, 17, 40, 1000])
def test_top_indices_match_a_full_sort_with_ties_broken_by_index(k):
    rng = np.random.default_rng(k)
    for dtype in (np.float32, np.float64):
        scores = rng.integers(0, 50, 1000).astype(dtype) / 50  # many equal scores
        assert top_indices(scores, k) == reference(scores, k)
    tiny = np.array([0.0, -1e-30, 0.0, -3.4e38], np.float32)  # the float32 floor still ranks above "taken"
    assert top_indices(tiny, 4) == [0, 2, 1, 3]
