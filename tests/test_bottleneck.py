"""Bottleneck attribution on real runs: a capture-bound case and inference-bound ones."""

from pathlib import Path

import pytest

from app.metrics.bottleneck import find_bottleneck
from app.metrics.window import InferenceTiming, Metrics
from app.pipeline import InferenceConfig
from app.pipeline.plan import FeedPlan
from app.tasks.bench import run_bench
from app.tasks.plan import RunPlan
from tests.builders.any_models import mean_classifier

# Its module-scoped fixtures are built once: the module's tests stay on one xdist worker, in order.
pytestmark = pytest.mark.xdist_group("bottleneck")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    """A 16x16 classifier of three ops: microseconds per inference, so decoding a 1280x720 clip
    is what sets the pace."""
    path = tmp_path_factory.mktemp("tiny") / "tiny.tflite"
    path.write_bytes(mean_classifier(16, softmax=True))
    return path


def test_a_tiny_model_from_the_synthetic_source_is_not_called_source_bound(tiny_model):
    """Microseconds per inference, and the synthetic source's images preprocessed once: no
    stage fills its thread; the cycle is the hand-offs between threads, and it says so rather
    than blaming capture (which read "preprocess-bound ... the capture thread is busy 1%")."""
    b = bench("synthetic:320x240@1000", str(tiny_model))
    busy = b["evidence"]["busy_share"]
    assert busy["capture_thread"] < 0.5, busy
    # Which stage is busiest moves with whatever else runs: at ~7,600 results/s the results thread works
    # 0.1 ms a result, so a loaded machine's second xdist worker pushes it past SATURATED (0.8) and it is
    # named, rightly. The point: the source, busy ~10%, is never called the limit, nor any stage upstream
    # of inference said to saturate its thread.
    assert b["stage"] != "source", b
    assert not b["evidence"]["saturated"] or b["stage"] in ("results", "inference"), b


def bench(source: str, model: str, preprocess_thread: bool | None = None, frames: int = 200, **config) -> dict:
    summary = run_bench(
        RunPlan(
            InferenceConfig(model=model, options={"threads": 1}, **config),
            FeedPlan(source=source, pace=False, pin_cpus=False, preprocess_thread=preprocess_thread),
            frames=frames,
            warmup=10,
        )
    )
    assert summary.status.state != "error", summary.status
    return summary.to_dict()["bottleneck"]  # as bench --json writes it


def test_a_tiny_model_on_the_unpaced_demo_clip_is_capture_bound(tiny_model):
    b = bench("demo", str(tiny_model))
    busy = b["evidence"]["busy_share"]
    assert b["stage"] == "source", b
    assert busy["source"] > 5 * busy["inference"], busy
    # What the delegate alone could reach is far above the rate the pipeline got, and said so.
    assert b["evidence"]["model_alone_per_s"] > 5 * b["evidence"]["rate_per_s"]
    assert b["evidence"]["sentence"].startswith("capture-bound at ")
    assert "inference alone:" in b["evidence"]["sentence"]


def test_float32_on_one_thread_from_the_synthetic_source_is_inference_bound():
    """The shares of EfficientNet-Lite0 float32 on one thread from the synthetic source, as recorded on the
    2-core machine: ~10 ms an inference back to back, each image preprocessed once (reads of microseconds)."""
    b = find_bottleneck(_one_second(0.02, 0.0, 10.2, 95, own_thread=False).snapshot(11.0))
    assert b is not None and b.stage == "inference" and b.saturated, b
    assert b.sentence == "inference-bound at 95 /s: the inference thread is busy 97% of the time"
    # The same run on a machine busy elsewhere (inference thread busy 70%): nothing is called the limit.
    starved = find_bottleneck(_one_second(0.02, 0.0, 7.4, 95, own_thread=False).snapshot(11.0))
    assert starved is not None and starved.stage == "inference" and not starved.saturated, starved
    assert starved.sentence.startswith("no thread is saturated at 95 /s (inference thread busy 70%"), starved


@pytest.mark.slow
def test_a_throttle_slower_than_the_model_is_held(tiny_model):
    """A model of microseconds, throttled to 20 ms between inference starts: never faster than that, whatever
    the load (a loaded machine only makes it slower; which stage is named then is the recorded test below)."""
    b = bench("synthetic:320x240@1000", str(tiny_model), frames=100, throttle_ms=20.0)
    # 100 starts 20 ms apart: 50 /s, or 50.5 counting both ends of the window; the source offers 1000 /s,
    # the model ~17,000 /s
    assert 0 < b["evidence"]["rate_per_s"] <= 51, b


def test_a_throttle_slower_than_the_model_is_named():
    """Shares as recorded for the run above (the tiny model, throttled to 20 ms): the throttle sets the pace
    from 80% of its rate up; below that (a starved loop), the busiest thread is named instead."""
    throttled = find_bottleneck(_one_second(0.02, 0.0, 0.05, 49, own_thread=False).snapshot(11.0), throttle_ms=20.0)
    assert throttled is not None and throttled.stage == "throttle" and throttled.saturated, throttled
    assert throttled.sentence == "throttled at 49 /s (20 ms between inference starts); inference alone: 20,000 /s"
    starved = find_bottleneck(_one_second(0.02, 0.0, 0.05, 30, own_thread=False).snapshot(11.0), throttle_ms=20.0)
    assert starved is not None and starved.stage != "throttle" and not starved.saturated, starved


def test_with_a_preprocessing_thread_decoding_alone_bounds_the_unpaced_demo_and_is_named(tiny_model):
    """Preprocessing for a 16x16 input on a thread of its own: the capture thread only decodes, and the
    sentence says which thread does what (a 1280x720 decode costs more than shrinking it to 16x16)."""
    b = bench("demo", str(tiny_model), preprocess_thread=True)
    busy = b["evidence"]["busy_share"]
    assert b["stage"] == "source", b
    assert busy["capture_thread"] == pytest.approx(busy["source"]) and 0 < busy["preprocess_thread"], busy
    assert "reading the source; the preprocessing thread" in b["evidence"]["sentence"], b


def _one_second(read_ms: float, prepare_ms: float, inference_ms: float, rate: int, own_thread: bool) -> Metrics:
    """`rate` frames in one second, each read, preprocessed ahead and inferred in the given times."""
    now = [10.0]  # the window opens at 10 s; snapshot(11.0) closes it a second later
    m = Metrics(window_s=10.0, clock=lambda: now[0])
    for i in range(rate):
        t = 10.0 + (i + 0.5) / rate
        m.frame_captured(t, read_ms, prepare_ms, own_thread)
        m.inference_done(InferenceTiming(i, t - 0.003, t - 0.002, t, prepare_ms, inference_ms, 0.1, inference_ms))
        m.result_published(0.1, t)
    now[0] = 11.0
    return m


def test_the_bound_line_on_the_gpu_hosts_recorded_shares():
    """The shares of an H200 host's runs (EfficientNet-Lite0 on the GPU, the unpaced demo): decoding and
    preprocessing in series on the capture thread; then each on its own thread, either one the busier."""
    serial = find_bottleneck(_one_second(0.9, 0.85, 1.3, 550, own_thread=False).snapshot(11.0))
    assert serial.stage == "source" and serial.saturated
    assert "(the capture thread is busy 96%: source 50%, preprocessing 47%)" in serial.sentence, serial.sentence
    decoding = find_bottleneck(_one_second(1.25, 0.9, 1.0, 740, own_thread=True).snapshot(11.0))
    assert decoding.stage == "source" and decoding.saturated
    assert decoding.sentence.startswith(
        "capture-bound at 740 /s (the capture thread is busy 92% reading the source; the preprocessing thread 67%)"
    ), decoding.sentence
    preprocessing = find_bottleneck(_one_second(0.6, 1.25, 1.0, 740, own_thread=True).snapshot(11.0))
    assert preprocessing.stage == "preprocess" and preprocessing.saturated
    assert preprocessing.sentence.startswith(
        "preprocess-bound at 740 /s (the preprocessing thread is busy 92%; the capture thread, decoding, 44%)"
    ), preprocessing.sentence
    assert preprocessing.short == "preprocess-bound at 740 /s (inference alone 1,000 /s)"


def test_a_saturated_thread_upstream_busier_than_inference_is_named():
    """A two-class 512x512 segmenter on an H100 host: its preprocessing thread busy 98% (resizing each 1280x720
    frame) while the inference thread, busy 87%, waits for frames the rest; the line names preprocessing."""
    b = find_bottleneck(_one_second(0.5, 2.45, 2.175, 400, own_thread=True).snapshot(11.0))
    assert b.busy_share.preprocess_thread == pytest.approx(0.98) and b.busy_share.inference_thread > 0.8, b
    assert b.stage == "preprocess" and b.saturated, b
    assert b.sentence.startswith("preprocess-bound at 400 /s (the preprocessing thread is busy 98%"), b.sentence
    # The inference thread busier than preprocessing: inference is named, as before.
    inference = find_bottleneck(_one_second(0.5, 2.0, 2.4, 400, own_thread=True).snapshot(11.0))
    assert inference.stage == "inference" and inference.saturated, inference


def _paced_second(read_ms: float, paced_ms: float, prepare_ms: float, inference_ms: float, rate: int) -> Metrics:
    """A paced source: `rate` frames in one second, each read's wait for its frame to be due given apart."""
    now = [10.0]
    m = Metrics(window_s=10.0, clock=lambda: now[0])
    for i in range(rate):
        t = 10.0 + (i + 0.5) / rate
        m.frame_captured(t, read_ms, prepare_ms, False, paced_ms)
        m.inference_done(InferenceTiming(i, t - 0.003, t - 0.002, t, prepare_ms, inference_ms, 0.1, inference_ms))
        m.result_published(0.1, t)
    now[0] = 11.0
    return m


def test_waiting_for_a_paced_source_is_not_busy():
    """The demo clip at its 30 fps: each read waits ~32 ms for its frame to be due and decodes in ~0.6 ms.
    The line says the source paces the run and what the capture thread really worked, never "busy 100%"."""
    b = find_bottleneck(_paced_second(0.6, 32.0, 0.9, 8.0, 30).snapshot(11.0))
    assert b.stage == "pace" and b.saturated, b
    assert b.busy_share.capture_thread == pytest.approx(0.045) and b.busy_share.paced == pytest.approx(0.96)
    assert b.sentence.startswith(
        "paced at 30 /s: the source delivers frames at its own rate, and the capture thread waits for each 96% "
        "of the time (it works 4%: reading 2%, preprocessing 3%)"
    ), b.sentence
    assert "busy 100%" not in b.sentence and b.short == "paced at 30 /s (inference alone 125 /s)"
    # Decoding that really takes the time is still the capture thread's work: capture-bound, not paced.
    slow = find_bottleneck(_paced_second(30.0, 2.0, 0.9, 8.0, 30).snapshot(11.0))
    assert slow.stage == "source" and "the capture thread is busy 93%" in slow.sentence, slow.sentence


def test_a_paced_source_reports_its_wait_on_each_frame():
    """The pacer's sleep is on the frame (Frame.paced_ms), so the capture thread can count it apart."""
    from app.sources import open_source

    source = open_source("synthetic:64x48@20", pace=True)
    try:
        frames = [source.read() for _ in range(6)]
    finally:
        source.close()
    waits = [f.paced_ms for f in frames[1:]]
    assert all(0 <= w <= 60 for w in waits) and sum(waits) > 100, waits  # ~50 ms apart, nearly all of it waited
    assert open_source("synthetic:64x48@20", pace=False).read().paced_ms == 0.0
