"""Segmenters' decoding on real models through the real runtime: DeepLab v3's 21 classes and a two-class
512x512 segmenter (tests/builders/two_class_segmenter.py, built by TensorFlow in a child process) give the
class map numpy's argmax gives and the shares its pixel counts give, in uint8."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.backends import open_session
from app.model.decode import TaskDecoder
from app.model.preprocess import CropBox
from app.model.spec import load_model_spec
from app.model.task import Task

ROOT = Path(__file__).resolve().parents[1]


def _decoded(path: Path, image: np.ndarray) -> tuple[list[np.ndarray], object]:
    spec = load_model_spec(path)
    session = open_session(spec, "cpu", {"threads": 1})
    try:
        outputs = session.run_all([image])
    finally:
        session.close()
    h, w = spec.input_height, spec.input_width
    return outputs, TaskDecoder(spec).decode(outputs, CropBox(0, 0, w, h), (w, h))


def _reference_shares(class_map: np.ndarray) -> dict[int, float]:
    counts = np.bincount(class_map.reshape(-1).astype(np.int64))
    return {c: int(n) / class_map.size for c, n in enumerate(counts) if n}


def test_deeplab_s_class_map_and_shares_are_argmax_s_and_its_counts(vision) -> None:
    rng = np.random.default_rng(3)
    image = rng.uniform(-1, 1, (1, 257, 257, 3)).astype(np.float32)
    outputs, result = _decoded(vision / "deeplabv3.tflite", image)
    expected = np.argmax(outputs[0][0], axis=2)
    assert result.task == Task.SEGMENTATION and result.class_map.dtype == np.uint8
    np.testing.assert_array_equal(result.class_map, expected)
    assert {c: share for c, _, share in result.class_fractions} == _reference_shares(expected)


@pytest.fixture(scope="module")
def two_class(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("two_class") / "two_class_512.tflite"
    subprocess.run([sys.executable, "-m", "tests.builders.two_class_segmenter", str(out)], cwd=ROOT, check=True,
                   capture_output=True, timeout=600)  # fmt: skip
    return out


@pytest.mark.slow
def test_the_two_class_segmenter_is_read_as_one_and_its_classes_follow_the_picture(two_class: Path) -> None:
    spec = load_model_spec(two_class)
    assert spec.kind == Task.SEGMENTATION and spec.outputs[0].shape == (1, 512, 512, 2)
    image = np.full((1, 512, 512, 3), -0.5, np.float32)
    image[0, :, :128, 0] = 0.5  # the left quarter's first channel above 0: class 1 there
    outputs, result = _decoded(two_class, image)
    expected = np.argmax(outputs[0][0], axis=2)
    np.testing.assert_array_equal(result.class_map, expected)  # compared, not arg-maxed: the same map
    assert result.class_map[:, :128].all() and not result.class_map[:, 128:].any()
    assert [(c, share) for c, _, share in result.class_fractions] == [(0, 0.75), (1, 0.25)]


@pytest.mark.parametrize("parts", [2, 4])
def test_deeplab_split_over_threads_says_what_one_thread_says(vision, monkeypatch, parts: int) -> None:
    """Split, the parts read the output's statistics too: the JSON is the one of a single pass."""
    from app.model import segmentation

    image = np.random.default_rng(4).uniform(-1, 1, (1, 257, 257, 3)).astype(np.float32)
    outputs, whole = _decoded(vision / "deeplabv3.tflite", image)
    spec = load_model_spec(vision / "deeplabv3.tflite")
    monkeypatch.setattr(segmentation, "_parts", lambda: parts)
    split = TaskDecoder(spec).decode(outputs, CropBox(0, 0, 257, 257), (257, 257))
    assert segmentation.start_class_map(outputs[0][0], None).split
    np.testing.assert_array_equal(split.class_map, whole.class_map)
    assert split.to_dict() == whole.to_dict()
