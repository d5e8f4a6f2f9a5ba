"""The live pipeline with real sources, the real LiteRT runtime and real threads."""

import threading
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from app.metrics.window import Metrics
from app.model.preprocess import Preprocessor
from app.model.spec import load_model_spec
from app.pipeline import InferenceConfig, LatestFrameSlot, Pipeline, RgbCache
from app.pipeline.compare import ComparePipeline
from app.pipeline.plan import FeedPlan
from app.pipeline.preprocess_thread import place_preprocessing
from app.sources import Frame
from app.system import cpu_affinity
from tests.builders.any_models import mean_classifier
from tests.helpers.pipelines import start
from tests.helpers.wait import wait_until


def frame(i: int) -> Frame:
    return Frame(i, np.zeros((2, 2, 3), np.uint8), time.monotonic(), time.time())


def test_a_prepared_tensor_is_handed_over_once_and_writeable():
    pre = Preprocessor(load_model_spec("efficientnet_lite0_int8"))
    cache = RgbCache()
    image = np.random.default_rng(0).integers(0, 256, (720, 1280, 3), np.uint8)
    f = Frame(7, image, time.monotonic(), time.time())
    cache.prepare(f, pre)
    tensor, ms, ahead = cache.tensor(f, pre)
    assert ahead and ms > 0
    # Writeable: LiteRT's set_tensor copies a read-only array first, with the GIL released,
    # and taking the GIL back made the inference thread sleep once per inference.
    assert tensor.flags.writeable and tensor.flags.c_contiguous
    again, _, ahead = cache.tensor(f, pre)  # popped: a second take computes it on this thread
    assert not ahead and np.array_equal(again, tensor)


def test_a_repeated_image_is_preprocessed_once_per_model_and_gives_the_same_tensor():
    from app.sources import open_source

    pre = Preprocessor(load_model_spec("efficientnet_lite0"))
    with open_source("synthetic:320x240@30", pace=False) as source:
        frames = [source.read() for _ in range(70)]
    cycle = len({f.content_id for f in frames})
    assert 2 <= cycle < 70 and all(f.content_id == f.index % cycle for f in frames)
    cache = RgbCache()
    costs = []
    for f in frames:
        cache.prepare(f, pre)
        tensor, ms, ahead = cache.tensor(f, pre)
        assert ahead, f.index
        costs.append(ms)
        assert np.array_equal(tensor, pre(f.image)), f.index
    # A reused frame reports the lookup as its preprocessing (µs), not the first computation's ms.
    assert np.median(costs[cycle:]) < np.median(costs[:cycle]) / 5
    assert cache.repeats_reused == 70 - cycle
    assert cache.peek(frames[-1].index) is not None  # A/B thumbnails still find the pixels
    # A frame with its own pixels (a video, a camera) is never taken for another.
    own = Frame(frames[0].index + 1000, frames[1].image, time.monotonic(), time.time())
    cache.prepare(own, pre)
    assert cache.tensor(own, pre)[0] is not cache.tensor(frames[1], pre)[0]
    assert cache.repeats_reused == 70 - cycle + 1  # frames[1] again, not `own`


def test_two_models_of_one_input_size_share_stage_one_and_a_late_side_computes_it_again():
    a = Preprocessor(load_model_spec("efficientnet_lite0_int8"))
    b = Preprocessor(load_model_spec("efficientnet_lite0"))
    cache = RgbCache(keep=2)
    image = np.random.default_rng(1).integers(0, 256, (240, 320, 3), np.uint8)
    frames = [Frame(i, image, time.monotonic(), time.time()) for i in range(4)]
    for f in frames[:2]:
        cache.prepare(f, a)
        cache.tensor(f, b)  # the other side, in step: reuses the pixels
    assert (cache.computed, cache.reused, cache.computed_again) == (2, 2, 0)
    for f in frames[2:]:
        cache.prepare(f, a)  # frames 0 and 1 leave the cache (keep=2)
    cache.tensor(frames[0], b)  # a side that far behind pays for the pixels again, and it is counted
    assert (cache.computed, cache.reused, cache.computed_again) == (5, 2, 1)


def test_repeated_images_stay_within_their_memory_budget():
    pre = Preprocessor(load_model_spec("efficientnet_lite0"))
    one = 224 * 224 * 3 * (1 + 4)  # RGB stage + float32 tensor
    cache = RgbCache(repeat_bytes=3 * one)
    image = np.zeros((240, 320, 3), np.uint8)
    for i in range(10):
        cache.tensor(Frame(i, image, time.monotonic(), time.time(), content_id=i), pre)
    assert cache._repeated_bytes() <= 3 * one
    assert cache.tensor(Frame(10, image, time.monotonic(), time.time(), content_id=0), pre)[2] is True
    assert cache.repeats_reused == 1


def test_latest_frame_slot_keeps_only_the_newest_and_counts_overwrites():
    slot = LatestFrameSlot()
    assert slot.put(frame(0)) is False
    assert slot.put(frame(1)) is True  # frame 0 was never taken: dropped
    assert slot.take(0.01).index == 1
    assert slot.take(0.01) is None  # nothing new
    assert slot.put(frame(2)) is False
    assert slot.peek().index == 2


def test_an_on_demand_slot_keeps_one_frame_behind_the_newest_in_order():
    slot = LatestFrameSlot()
    slot.put_behind(frame(0))
    assert slot.wait_room(0.01)  # nothing behind yet: capture may read the next one
    slot.put_behind(frame(1))
    assert not slot.wait_room(0.01)  # two read ahead: capture waits
    assert slot.take(0.01).index == 0
    assert slot.wait_room(0.01)
    slot.put_behind(frame(2))
    assert [slot.take(0.01).index, slot.take(0.01).index] == [1, 2]
    assert slot.take(0.01) is None  # never a frame twice, none dropped


# Preprocessing on the capture thread, after each read, or on a thread of its own beside decoding.
PLACES = pytest.mark.parametrize("own_thread", [False, True], ids=["on-capture-thread", "own-thread"])


@PLACES
def test_an_unpaced_video_is_inferred_frame_by_frame_without_drops(pipelines, own_thread):
    inferred: list[int] = []
    p = start(pipelines, "demo", pace=False, preprocess_thread=own_thread,
              on_result=lambda r: inferred.append(r.frame_index))  # fmt: skip
    assert wait_until(lambda: p.metrics.snapshot().inferences_total >= 40)
    p.stop(timeout=10)
    snap = p.metrics.snapshot()
    assert snap.dropped_total == 0
    # Read ahead of inference by two frames at most: the one in the slot and the one behind it.
    assert 0 <= snap.frames_total - snap.inferences_total <= 2, (snap.frames_total, snap.inferences_total)
    assert inferred == list(range(len(inferred))), inferred  # every frame, in the order read
    names = {t.name for t in p.threads()}
    assert ("delegate-scope-preprocess" in names) is own_thread, names
    busy = snap.stage_busy
    if own_thread:  # each thread's share apart: the capture thread only reads, the other preprocesses
        assert busy.preprocess_thread > 0 and busy.capture_thread == pytest.approx(busy.source), busy
    else:
        assert busy.preprocess_thread == 0 and busy.capture_thread > busy.source, busy


def test_results_flow_with_timings_and_labels(pipelines):
    p = start(pipelines, "synthetic:320x240@30")
    assert wait_until(lambda: p.metrics.snapshot().inferences_total >= 5)
    r = p.latest_result()
    assert r.model == "efficientnet_lite0" and r.backend == "cpu"
    assert len(r.top) == 5 and r.top[0].score >= r.top[1].score
    t = r.timing
    assert t.captured_at <= t.started_at <= t.finished_at
    assert t.inference_ms > 0 and t.preprocess_ms > 0 and t.end_to_end_ms >= t.inference_ms
    assert r.frame_size == (320, 240) and (r.crop.width, r.crop.height) == (240, 240)
    assert p.events()[0].kind == "open"
    assert p.status().state == "running"


def test_throttle_is_honoured_start_to_start(pipelines):
    runs: list[tuple[float, float]] = []
    start(
        pipelines,
        "synthetic:320x240@60",
        InferenceConfig(options={"threads": 1}, throttle_ms=150),
        on_result=lambda r: runs.append((r.timing.started_at, r.timing.finished_at)),
    )
    assert wait_until(lambda: len(runs) >= 8, timeout=30)
    starts = [s for s, _ in runs]
    gaps = np.diff(starts)
    assert gaps.min() >= 0.149, gaps
    # ... and no later than that, or than the inference's end where it ran longer (start to start, not end to
    # start): what is left is the thread's wake-up, milliseconds (a loaded machine: tens), never a second wait.
    late = [b - max(a + 0.150, done) for (a, done), b in zip(runs, starts[1:], strict=False)]
    assert np.median(late) < 0.1, late


@pytest.mark.slow
@PLACES
def test_latest_frame_wins_no_backlog_and_dropped_count_is_exact(pipelines, own_thread):
    """Inference (throttled to ~5/s) far slower than capture (60 fps): frames are dropped, none queue."""
    inferred: list[int] = []
    p = start(pipelines, "synthetic:320x240@60", InferenceConfig(options={"threads": 1}, throttle_ms=200),
              preprocess_thread=own_thread, on_result=lambda r: inferred.append(r.frame_index))  # fmt: skip
    assert wait_until(lambda: p.metrics.snapshot().inferences_total >= 8, timeout=30)
    p.stop()
    snap = p.metrics.snapshot()
    # every captured frame was either inferred, dropped (overwritten), or is the one left in the slot
    assert snap.frames_total - snap.inferences_total - snap.dropped_total in (0, 1)
    assert snap.dropped_total > snap.inferences_total * 5
    # no backlog: an inference takes a frame about one capture interval (+ scheduling) old; a queue would age
    # them by a throttle interval (200 ms) more with each inference
    assert snap.latency["queue"].p50 < 100, snap.latency["queue"]
    assert inferred == sorted(set(inferred)), inferred  # newer frames only, never one twice


def test_a_preprocessing_thread_slower_than_the_source_drops_at_its_own_slot_and_counts_it(pipelines, tmp_path):
    """A 320x240 still paced at 1000 fps (a read is a 230 kB copy) into a model taking 1024x1024
    float32 (preprocessing is an upscale and a 12 MB conversion): the preprocessing thread falls
    behind the capture thread, and the frames it never took are dropped at its slot and counted
    with the rest: captured = published + dropped + results skipped + what is left in the two slots."""
    cv2.imwrite(str(tmp_path / "small.png"), np.random.default_rng(0).integers(0, 256, (240, 320, 3), np.uint8))
    model = tmp_path / "big_input.tflite"
    model.write_bytes(mean_classifier(1024))
    inferred: list[int] = []
    p = start(pipelines, f"images:{tmp_path / 'small.png'}", InferenceConfig(model=model, options={"threads": 1}),
              preprocess_thread=True, fps=1000,
              on_result=lambda r: inferred.append(r.frame_index))  # fmt: skip
    assert wait_until(lambda: p.metrics.snapshot().inferences_total >= 20, timeout=60), p.status()
    p.stop()
    snap = p.metrics.snapshot()
    prepared = p.rgb_cache.computed  # frames the preprocessing thread took (stage 1 once per frame)
    # Results the results thread skipped for a newer one were inferred, never published: counted apart.
    unaccounted = snap.frames_total - snap.inferences_total - snap.dropped_total - snap.results_dropped_total
    assert unaccounted in (0, 1, 2), snap
    # Dropped before preprocessing: read but never taken by the preprocessing thread; counted as dropped.
    assert snap.frames_total - prepared > 10, (snap.frames_total, prepared)
    assert snap.dropped_total >= snap.frames_total - prepared - 1, (snap.dropped_total, snap.frames_total, prepared)
    assert snap.stage_busy.preprocess_thread > 0.5, snap.stage_busy  # busy most of the time, on its own thread
    assert inferred == sorted(set(inferred)), inferred


def test_where_preprocessing_runs_follows_the_cores_left_by_the_models_inference():
    gpu, cpu = InferenceConfig(delegate="gpu"), InferenceConfig(options={"threads": 1})
    # The 2-core machine: one core for a one-thread model, one for capture; a thread of its own would share it.
    two = place_preprocessing([cpu], cpus=2)
    assert not two.own_thread and not two.asked and two.inference_cpus == 1
    assert two.reason.endswith("a thread of its own needs 3"), two.reason
    assert place_preprocessing([gpu], cpus=3).own_thread  # an accelerator's thread: 1 CPU, as pinned
    assert place_preprocessing([gpu], cpus=16).own_thread
    assert not place_preprocessing([InferenceConfig(options={"threads": 15})], cpus=16).own_thread
    assert place_preprocessing([InferenceConfig(options={"threads": 14})], cpus=16).own_thread
    # A/B: both sides' inference counts; bench's --inference-cpus counts per side.
    assert not place_preprocessing([cpu, InferenceConfig(options={"threads": 2})], cpus=4).own_thread
    assert place_preprocessing([gpu, gpu], cpus=4).own_thread
    assert not place_preprocessing([gpu], cpus=4, inference_cpus=3).own_thread
    # Asked for: as asked, and said so.
    forced = place_preprocessing([cpu], cpus=2, own_thread=True)
    assert forced.own_thread and forced.asked and "asked for" in forced.reason
    assert not place_preprocessing([gpu], cpus=16, own_thread=False).own_thread


def test_a_pipeline_places_preprocessing_by_the_cores_this_machine_has(pipelines):
    p = start(pipelines, "synthetic:320x240@30")
    expected = cpu_affinity.allowed_cpus() >= 1 + 2  # a one-thread model, capture and preprocessing
    assert p.preprocessing.own_thread is expected and not p.preprocessing.asked
    assert ("delegate-scope-preprocess" in {t.name for t in p.threads()}) is expected


def test_ab_with_a_preprocessing_thread_preprocesses_each_frame_once_for_both_sides():
    """Side A's model is preprocessed ahead on the preprocessing thread; side B's input (same size)
    starts from the same stage-1 pixels: stage 1 is computed once per frame, never per side."""
    a = InferenceConfig(options={"threads": 1})
    b = InferenceConfig(model="efficientnet_lite0_int8", options={"threads": 1})
    seen: dict[str, list[int]] = {"a": [], "b": []}
    cp = ComparePipeline(FeedPlan("demo", pace=False, preprocess_thread=True), a, b,
                         on_result=lambda side, r: seen[side].append(r.frame_index))  # fmt: skip
    cp.start()
    try:
        assert wait_until(lambda: len(cp.comparator.comparisons) >= 30 or cp.status().state == "error", 120)
        assert cp.status().state != "error", cp.status().message
    finally:
        assert cp.stop()
    assert not any(t.is_alive() for t in cp.threads())
    assert "delegate-scope-preprocess" in {t.name for t in cp.threads()}
    frames = cp.metrics["a"].snapshot().frames_total
    assert cp.rgb_cache.computed == frames, (cp.rgb_cache.computed, frames)  # once per frame delivered
    assert cp.rgb_cache.reused >= len(seen["b"]) - 1  # B's stage 1: A's pixels
    for side in ("a", "b"):  # unpaced: every frame on each side, in order
        assert seen[side] == list(range(len(seen[side]))), (side, seen[side])


def test_switching_backend_and_model_while_capture_keeps_running(pipelines):
    p = start(pipelines, "synthetic:320x240@30")
    assert wait_until(lambda: p.metrics.snapshot().inferences_total >= 3)
    frames_before = p.metrics.snapshot().frames_total
    p.reconfigure(model="efficientnet_lite0_int8")
    assert wait_until(lambda: (r := p.latest_result()) is not None and r.model == "efficientnet_lite0_int8")
    p.reconfigure(delegate="gpu", options={"threads": 1})  # no GPU here: visible fallback, still running
    assert wait_until(lambda: any(e.kind == "fallback" for e in p.events()))
    assert wait_until(lambda: p.latest_result().session_id == 3)
    switches = [e for e in p.events() if e.kind == "switch"]
    assert len(switches) == 2
    assert all(e.close_ms is not None and e.open_ms > 0 and e.first_inference_ms > 0 for e in switches)
    # Each switch says what changed, not only what runs now (recordings and plot markers use it).
    assert switches[0].changes == "model efficientnet_lite0→efficientnet_lite0_int8"
    assert switches[0].message.startswith(f"{switches[0].changes}: efficientnet_lite0_int8 on")
    assert switches[1].changes == "delegate cpu→gpu", switches[1].changes  # threads were 1 already
    p.reconfigure(options={"threads": 2})
    assert wait_until(lambda: len([e for e in p.events() if e.kind == "switch"]) == 3)
    assert [e for e in p.events() if e.kind == "switch"][-1].changes == "threads 1→2"
    report = p.delegation_report()
    assert (report.requested, report.used) == ("gpu", "cpu") and report.fallback_reason
    assert p.metrics.snapshot().frames_total > frames_before  # capture never stopped


def test_a_bad_model_switch_keeps_the_running_session(pipelines, tmp_path: Path):
    bad = tmp_path / "broken.tflite"
    bad.write_bytes(b"not a model")
    p = start(pipelines, "synthetic:320x240@30")
    assert wait_until(lambda: p.latest_result() is not None)
    p.reconfigure(model=bad)
    assert wait_until(lambda: any(e.kind == "switch_failed" for e in p.events()))
    n = p.metrics.snapshot().inferences_total
    assert wait_until(lambda: p.metrics.snapshot().inferences_total > n + 2)
    assert p.latest_result().model == "efficientnet_lite0"
    assert str(p.config.model) == "efficientnet_lite0"  # config names what runs, not what was refused


def test_a_model_answering_nan_to_every_frame_is_reported_once_a_second_not_per_frame(pipelines, tmp_path: Path):
    # Found by the window fuzz campaign (tests/ui/test_window_fuzz.py, case 19): it loads,
    # opens, and every score it gives is NaN.
    import random

    from tests.harness.model_fuzz import mutate
    from tests.helpers.paths import TEST_MODELS

    seed = (TEST_MODELS / "dynamic_batch_logits.tflite").read_bytes()
    nan_model = tmp_path / "nan.tflite"
    nan_model.write_bytes(mutate(seed, "size_field", random.Random(856850765)))
    p = start(pipelines, "synthetic:160x120@100", InferenceConfig(model=nan_model, options={"threads": 1}))
    assert wait_until(lambda: p.delegation_report() is not None)

    def bad_results() -> list:
        return [e for e in p.events() if e.kind == "bad_result"]

    # The second report comes a second after the first, ~100 frames later: one per frame would be dozens.
    assert wait_until(lambda: len(bad_results()) >= 2, timeout=15), [e.message for e in bad_results()]
    reports = bad_results()
    assert p.latest_result() is None  # never a NaN shown as a score
    assert 2 <= len(reports) <= 4, [e.message for e in reports]
    assert "non-finite" in reports[0].message
    assert "frames without a result" in reports[-1].message


def _write_video(path: Path, frames: int = 60, fps: float = 30.0) -> Path:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), fps, (320, 240))
    for i in range(frames):
        img = np.full((240, 320, 3), (i * 4) % 255, np.uint8)
        cv2.putText(img, str(i), (40, 160), cv2.FONT_HERSHEY_SIMPLEX, 3, (255, 255, 255), 5)
        writer.write(img)
    writer.release()
    return path


def test_a_video_that_ends_ends_the_pipeline_cleanly(pipelines, tmp_path: Path):
    video = _write_video(tmp_path / "clip.avi", frames=30)
    p = start(pipelines, f"video:{video}", loop=False, pace=False)
    assert wait_until(p.finished, timeout=30)
    assert p.status().state == "ended"
    assert p.metrics.snapshot().frames_total == 30


@pytest.mark.slow
def test_a_video_truncated_on_disk_ends_in_a_clear_status_not_a_hang(pipelines, tmp_path: Path):
    video = _write_video(tmp_path / "clip.avi", frames=120)
    data = video.read_bytes()
    video.write_bytes(data[: len(data) // 2])
    p = start(pipelines, f"video:{video}", loop=False, pace=False)
    assert wait_until(lambda: p.status().state in ("ended", "error"), timeout=30)
    assert p.status().message


def test_a_camera_that_does_not_exist_is_a_clear_error(pipelines):
    p = start(pipelines, "camera:97")
    assert wait_until(lambda: p.status().state == "error", timeout=15)
    assert "97" in p.status().message


@PLACES
def test_stop_is_bounded_and_leaves_no_thread(pipelines, own_thread):
    before = {t.ident for t in threading.enumerate()}
    feed = FeedPlan("synthetic:640x480@30", preprocess_thread=own_thread)
    p = Pipeline(feed, InferenceConfig(options={"threads": 1}), metrics=Metrics())
    p.start()
    assert wait_until(lambda: p.latest_result() is not None)
    started = time.monotonic()
    assert p.stop(timeout=5)
    assert time.monotonic() - started < 5
    leftover = [t for t in threading.enumerate() if t.ident not in before and t.name.startswith("delegate-scope")]
    assert leftover == []


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_a_backend_that_dies_mid_run_falls_back_to_cpu_visibly(pipelines):
    """A real accelerator failing mid-run: the TensorFlow reference backend's worker process is
    killed (as a crashed driver or service would be); the pipeline goes on on the CPU, and the
    fallback is an event with the reason, in the report and on every result."""
    import psutil

    from app.backends import BACKENDS

    reason = BACKENDS["reference"].availability()
    if reason:
        pytest.skip(reason)
    p = start(pipelines, "synthetic:320x240@30", InferenceConfig(delegate="reference", options={"threads": 1}))
    assert wait_until(lambda: (r := p.latest_result()) is not None and r.backend == "reference", 180), p.status()
    workers = [c for c in psutil.Process().children() if "tf_reference" in " ".join(c.cmdline())]
    assert len(workers) == 1
    workers[0].kill()
    assert wait_until(lambda: p.latest_result().backend == "cpu", 30), p.status()
    report = p.delegation_report()
    assert report.requested == "reference" and report.used == "cpu"
    assert "reference failed mid-run" in report.fallback_reason
    assert "ended unexpectedly" in report.fallback_reason
    fallback = [e for e in p.events() if e.kind == "fallback"]
    assert fallback and "failed mid-run" in fallback[-1].message
    n = p.metrics.snapshot().inferences_total
    assert wait_until(lambda: p.metrics.snapshot().inferences_total > n + 5)
    assert p.status().state == "running"


@pytest.mark.slow
def test_an_object_walk_in_another_thread_does_not_stop_cpu_inference(pipelines):
    """gc.get_objects() in any thread (a memory profiler, a debugger, a soak's own sampling)
    holds, for a moment, the argument tuples of calls in flight, among them one naming the
    LiteRT interpreter; Interpreter.invoke() counts references to refuse running while numpy
    views of its buffers exist, and so refused ("There is at least 1 reference to internal
    data"). It stopped the window's pipeline within seconds (docs/reliability.md)."""
    import gc

    ballast = [[i] for i in range(300_000)]  # a process the size of the window: a slow walk
    p = start(
        pipelines, "synthetic:320x240@100", InferenceConfig(model="efficientnet_lite0_int8", options={"threads": 1})
    )
    assert wait_until(lambda: p.latest_result() is not None)
    walks, deadline = 0, time.monotonic() + 6
    while time.monotonic() < deadline and p.status().state == "running":
        walks += len(gc.get_objects()) > 0
    del ballast
    assert p.status().state == "running", (walks, p.status().message)
    assert not [e for e in p.events() if e.kind == "error"]
