"""A segmenter's scores -> class map and class shares (app/model/segmentation.py): the same classes as
numpy's argmax wherever it is defined (ties, quantized scores, many classes split over threads, two
classes compared), uint8 where the classes fit, and shares from exact pixel counts."""

from __future__ import annotations

import numpy as np
import pytest

from app.model import segmentation


def _scores(h: int, w: int, classes: int, dtype: type = np.float32, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, 4, (h, w, classes)).astype(dtype)  # few values: many ties
    return rng.standard_normal((h, w, classes)).astype(dtype)


@pytest.mark.parametrize("classes", [2, 3, 21])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.uint8, np.int8])
def test_the_class_map_is_argmax_s(classes: int, dtype: type) -> None:
    scores = _scores(33, 17, classes, dtype)
    got = segmentation.class_map(scores, finite=True)
    assert got.dtype == np.uint8 and got.shape == (33, 17)
    np.testing.assert_array_equal(got, np.argmax(scores, axis=2))


def test_two_classes_tied_give_class_0_as_argmax_s_first_maximum() -> None:
    scores = np.zeros((4, 4, 2), np.float32)
    scores[0, 0, 1] = 1.0
    scores[1, 1, 0] = 1.0
    got = segmentation.class_map(scores, finite=True)
    assert got.sum() == 1 and got[0, 0] == 1


def test_a_nan_score_is_read_as_argmax_reads_it_when_the_caller_says_so() -> None:
    """Compared, a NaN in class 1 loses; argmax picks it. With `finite=False` argmax itself runs."""
    scores = np.zeros((2, 2, 2), np.float32)
    scores[0, 0, 1] = np.nan
    np.testing.assert_array_equal(segmentation.class_map(scores, finite=False), np.argmax(scores, axis=2))


@pytest.mark.parametrize("parts", [1, 2, 3, 4])
def test_many_classes_split_over_threads_match_one_pass(parts: int) -> None:
    scores = _scores(257, 257, 21)  # over the size from which it splits
    assert scores.size >= segmentation._SPLIT_FROM
    np.testing.assert_array_equal(segmentation.class_map(scores, True, parts=parts), np.argmax(scores, axis=2))


def test_more_classes_than_a_byte_holds_give_int32() -> None:
    scores = _scores(5, 6, 300)
    got = segmentation.class_map(scores, finite=True)
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, np.argmax(scores, axis=2))


def test_one_class_of_scores_is_all_class_0() -> None:
    assert not segmentation.class_map(_scores(4, 4, 1), finite=True).any()


@pytest.mark.parametrize("dtype", [np.uint8, np.int32, np.int64])
def test_shares_are_exact_pixel_counts_in_class_order(dtype: type) -> None:
    classes = np.zeros((10, 10), dtype)
    classes[:3] = 7  # 30 pixels
    classes[3, :5] = 2  # 5
    assert segmentation.class_shares(classes) == [(0, 0.65), (2, 0.05), (7, 0.3)]


def test_negative_classes_leave_the_count() -> None:
    classes = np.array([[-1, 0], [1, 1]], np.int32)
    assert segmentation.class_shares(classes) == [(0, 1 / 3), (1, 2 / 3)]


def test_a_binary_map_counts_its_ones() -> None:
    classes = np.zeros((8, 8), np.uint8)
    classes[:2] = 1
    assert (
        segmentation.class_shares(classes, binary=True)
        == segmentation.class_shares(classes)
        == [
            (0, 0.75),
            (1, 0.25),
        ]
    )
    assert segmentation.class_shares(np.ones((3, 3), np.uint8), binary=True) == [(1, 1.0)]
    assert segmentation.class_shares(np.zeros((0, 3), np.uint8)) == []


@pytest.mark.parametrize("classes", [2, 21])
@pytest.mark.parametrize("parts", [1, 3])
def test_a_split_class_map_with_a_nan_is_argmax_s_and_leaves_the_statistics_to_the_caller(
    classes: int, parts: int
) -> None:
    """The part holding the NaN is arg-maxed (a NaN wins there, as in argmax); the others compare."""
    scores = _scores(513, 512, classes)  # over the size from which it splits, for two classes too
    scores[5, 7, 1] = np.nan
    begun = segmentation.start_class_map(scores, parts)
    assert begun.split == (parts > 1) and begun.reduced() is None
    np.testing.assert_array_equal(begun.result(False), np.argmax(scores, axis=2))


@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
@pytest.mark.parametrize("classes", [2, 21])
def test_split_parts_read_the_scores_extremes_and_sum_beside_the_classes(classes: int, dtype: type) -> None:
    scores = _scores(257, 1024 if classes == 2 else 257, classes, dtype)
    begun = segmentation.start_class_map(scores, 4)
    reduced = begun.reduced()
    assert reduced is not None
    assert (reduced.low, reduced.high) == (float(scores.min()), float(scores.max()))
    assert reduced.total / scores.size == pytest.approx(float(scores.mean(dtype=np.float64)), rel=1e-12, abs=1e-15)
    np.testing.assert_array_equal(begun.result(True), np.argmax(scores, axis=2))
    assert segmentation.start_class_map(scores, 1).reduced() is None  # unsplit: the caller reads them


def _softmax(scores: np.ndarray) -> np.ndarray:
    e = np.exp(scores.astype(np.float64) - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("classes", [2, 3, 7])
def test_the_foreground_is_255_times_the_softmax_not_of_class_0_cut_to_a_whole_number(classes: int) -> None:
    """As MediaPipe's segmentation calculator makes its mask: softmax, times 255, the fraction dropped."""
    scores = np.random.default_rng(classes).normal(0, 3, (1, 9, 11, classes)).astype(np.float32)
    mask = segmentation.foreground(scores, class_map=False, probabilities=False)
    expected = 255 * (1 - _softmax(scores[0])[..., 0])
    assert mask.shape == (9, 11) and mask.dtype == np.uint8
    assert np.abs(mask.astype(np.float64) - np.floor(expected)).max() <= 1  # float32 against float64 at a cut
    assert np.mean(mask == np.floor(expected)) > 0.95


def test_the_foreground_of_probabilities_one_channel_and_a_class_map() -> None:
    probs = np.array([[[[0.9, 0.1], [0.2, 0.8]]]], np.float32)  # [1, 1, 2, 2], after a SOFTMAX
    assert segmentation.foreground(probs, False, probabilities=True).tolist() == [[25, 204]]
    one = np.array([[[[0.0], [0.5], [1.5]]]], np.float32)  # one class's probability, out of range clipped
    assert segmentation.foreground(one, False, probabilities=False).tolist() == [[0, 127, 255]]
    classes = np.array([[[0, 3, 1]]], np.int32)  # a class map: not class 0 is certain
    assert segmentation.foreground(classes, class_map=True, probabilities=False).tolist() == [[0, 255, 255]]


def test_the_foreground_of_quantized_scores_is_read_dequantized() -> None:
    # scale 0.1, zero point 128: 128 is 0, 228 is 10 (class 1 certain), 28 is -10
    scores = np.array([[[[128, 228], [128, 28], [128, 128]]]], np.uint8)
    assert segmentation.foreground(scores, False, False, scale=0.1, zero_point=128).tolist() == [[254, 0, 127]]


def test_the_foreground_of_infinities_is_certain_and_of_a_nan_empty() -> None:
    for classes in (2, 3):
        scores = np.zeros((1, 1, 3, classes), np.float32)
        scores[0, 0, 0, 1] = np.inf  # certain
        scores[0, 0, 1, 0] = np.inf  # the background certain
        scores[0, 0, 2, 1] = np.nan
        assert segmentation.foreground(scores, False, False).tolist() == [[255, 0, 0]], classes
