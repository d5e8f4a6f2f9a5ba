"""The CPU backend on the real LiteRT runtime."""

from pathlib import Path

import numpy as np

from app.backends import get_backend
from app.backends.options import BackendOptions, default_threads
from app.model.postprocess import Postprocessor
from app.model.preprocess import Preprocessor
from app.model.spec import load_model_spec
from tests.helpers.paths import TEST_MODELS


def test_delegation_facts_match_the_log_line_people_quote(coral: Path):
    """MobileNet v1 quant: "29 nodes delegated out of 31 nodes, with 2 partitions"."""
    spec = load_model_spec(coral / "mobilenet_v1_0.25_128_quant.tflite")
    session = get_backend("cpu").open(spec, BackendOptions(threads=1))
    try:
        r = session.report
        assert (r.nodes_total, r.nodes_delegated, r.partitions) == (31, 29, 2)
        assert r.cpu_ops == ("AVERAGE_POOL_2D", "SOFTMAX")
        assert r.fully_accelerated is False
        assert r.used == "cpu" and r.options == {"threads": 1}
        assert r.init_ms > 0 and r.first_inference_ms > 0
        # (LiteRT logs "Created ... XNNPACK delegate" only once per process, so the log is not the evidence.)
        assert r.accelerator.startswith("XNNPACK (CPU, 1 thread)")
    finally:
        session.close()


def test_dynamic_batch_is_fixed_to_one_and_outputs_match_tensorflow():
    spec = load_model_spec(TEST_MODELS / "dynamic_batch_logits.tflite")
    assert spec.input.shape_signature[0] == -1
    session = get_backend("cpu").open(spec, BackendOptions(threads=1))
    try:
        probe = np.linspace(-1, 1, 8 * 8 * 3, dtype=np.float32).reshape(1, 8, 8, 3)
        expected = np.load(TEST_MODELS / "dynamic_batch_logits_expected.npy")  # Keras' own output
        np.testing.assert_allclose(session.run(probe), expected.reshape(-1), rtol=1e-4, atol=1e-5)
        assert session.report.fully_accelerated
    finally:
        session.close()


def test_logits_become_probabilities():
    spec = load_model_spec(TEST_MODELS / "dynamic_batch_logits.tflite")
    session = get_backend("cpu").open(spec, BackendOptions(threads=1))
    try:
        frame = np.random.default_rng(0).integers(0, 255, (50, 60, 3), dtype=np.uint8)
        scores = Postprocessor(spec).scores(session.run(Preprocessor(spec)(frame)))
        assert abs(float(scores.sum()) - 1.0) < 1e-5 and scores.min() >= 0
    finally:
        session.close()


def test_default_threads_leaves_a_core_free():
    assert default_threads() >= 1
