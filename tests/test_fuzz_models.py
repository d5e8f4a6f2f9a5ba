"""Model files are untrusted input: a fixed, seeded fuzz campaign over real models.

Each case mutates a real model (bit flips, random bytes, truncation, huge size fields,
zeroed regions, trailing junk, valid flatbuffers with wrong shapes or tensor types) and runs
it through the app's own load path in a worker process (tests/harness/model_fuzz.py). Every case must end in
a clear ModelError or a sound result: never a native crash, a hang, another exception or
NaN scores. benchmarks/fuzz/models.py runs thousands of cases on every bundled model.
"""

from __future__ import annotations

import collections

import pytest

from tests.harness.model_fuzz import cases, run_cases
from tests.helpers.paths import PHOTOS, TEST_MODELS


@pytest.mark.slow
def test_seeded_fuzz_campaign_never_crashes_hangs_or_answers_wrongly(coral, vision):
    # A classifier, a dynamic-batch model, and one model of every other kind: a detector with its custom
    # op, a segmenter, a pose model fed raw uint8 pixels, and an audio model with no image input.
    seeds = [
        coral / "mobilenet_v1_0.25_128_quant.tflite",
        TEST_MODELS / "dynamic_batch_logits.tflite",
        *(vision / f"{name}.tflite" for name in ("coco_ssd_mobilenet_v1_1.0_quant_2018_06_29", "deeplabv3",
                                                 "movenet_single_pose_lightning_ptq",
                                                 "yamnet_audio_classifier_with_metadata")),
    ]  # fmt: skip
    results = run_cases(cases(seeds, 300, seed=20261203), PHOTOS / "grace_hopper.jpg", timeout_s=60)
    outcomes = collections.Counter(r["outcome"] for r in results)
    bad = [r for r in results if r["outcome"] not in ("model_error", "ok")]
    assert not bad, (outcomes, bad[:5])
    assert len(results) == 300
    assert outcomes["model_error"] > 100  # the campaign really breaks files, not only unused bytes
    messages = [r["message"] for r in results if r["outcome"] == "model_error"]
    assert all(m and "\n" not in m and "Traceback" not in m for m in messages)


def test_regression_unallocated_tensor_is_a_model_error():
    """Found by benchmarks/fuzz/models.py (seed 1, case 1918): a size field corrupted so that
    LiteRT leaves the input unallocated; set_tensor raised a bare ValueError (a traceback)."""
    from tests.harness.model_fuzz import Case

    case = Case(1918, str(TEST_MODELS / "dynamic_batch_logits.tflite"), "size_field", 331899388)
    (result,) = run_cases([case], PHOTOS / "grace_hopper.jpg")
    assert result["outcome"] == "model_error" and "allocate" in result["message"]


@pytest.mark.slow
def test_regression_models_that_crash_the_runtime_are_model_errors(vision):
    """Found by `python -m benchmarks.fuzz.models --vision` (seed 1): a mutated Keras LSTM corrupts the heap
    (case 465, SIGABRT) or segfaults (case 1818) inside LiteRT; it is now opened in a child first
    (app/backends/preflight.py). Case 728 (a hand landmark model whose input shape was mutated) reached a
    misspelt Interpreter method (AttributeError): its input is now resized and the model runs."""
    from tests.harness.model_fuzz import Case

    lstm, hand = vision / "keras_lstm_mnist_ptq.tflite", vision / "hand_landmark.tflite"
    found = [Case(465, str(lstm), "dtype", 572211422), Case(1818, str(lstm), "bitflip", 528919768),
             Case(728, str(hand), "shape", 25736407)]  # fmt: skip
    results = run_cases(found, PHOTOS / "grace_hopper.jpg")
    assert [r["outcome"] for r in results] == ["model_error", "model_error", "ok"], results
    # Heap corruption shows as SIGABRT or SIGSEGV from one run to the next: a signal, named.
    assert all("the LiteRT runtime crashed (SIG" in r["message"] for r in results[:2]), results
