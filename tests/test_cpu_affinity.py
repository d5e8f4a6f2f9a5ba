"""Pinning the inference thread to CPUs of its own, with the real pipeline and real threads."""

import os
import subprocess
import sys

import pytest

from app.system import cpu_affinity
from app.system.cpu_affinity import CpuSplit, split_for
from tests.helpers.paths import ROOT
from tests.helpers.pipelines import start
from tests.helpers.wait import wait_until

ALLOWED = frozenset(cpu_affinity._ALLOWED)
pinnable = pytest.mark.skipif(
    not cpu_affinity._SUPPORTED or len(ALLOWED) < 2,
    reason="per-thread CPU affinity needs Linux and at least 2 CPUs this process may use",
)


@pytest.mark.skipif(not cpu_affinity._SUPPORTED, reason="per-thread CPU affinity is Linux-only")
def test_the_last_cpus_go_to_inference_and_none_is_left_without_others():
    assert split_for(1, frozenset({0, 1})) == CpuSplit(inference=(1,), others=(0,))
    assert split_for(3, frozenset(range(8))) == CpuSplit(inference=(5, 6, 7), others=(0, 1, 2, 3, 4))
    assert split_for(2, frozenset({4, 9, 6})) == CpuSplit(inference=(6, 9), others=(4,))  # a cpuset's own numbers
    assert split_for(2, frozenset({0, 1})) is None  # the capture thread would have no CPU
    assert split_for(1, frozenset({3})) is None
    assert CpuSplit((1,), (0,)).describe() == "inference thread on CPU 1, other threads on CPU 0"


@pinnable
def test_a_pinned_pipeline_keeps_its_inference_cpu_to_itself_and_gives_it_back(pipelines):
    main = os.getpid()  # the main thread's id is the process id
    p = start(pipelines, "synthetic:320x240@200", pace=False, pin_cpus=True)
    assert wait_until(lambda: p.latest_result() is not None)
    split = p.cpu_split()
    assert split == split_for(1)
    assert os.sched_getaffinity(p.worker.inference_thread.native_id) == set(split.inference)
    for thread in (p.capture.thread, p.worker.results_thread):
        assert os.sched_getaffinity(thread.native_id) == set(split.others)
    assert os.sched_getaffinity(main) == set(split.others)
    # Every thread of the process, native ones (OpenCV's pool, the sampler) included, is off it.
    tids = [int(t) for t in os.listdir("/proc/self/task")]
    inference = p.worker.inference_thread.native_id
    assert all(not os.sched_getaffinity(t) & set(split.inference) for t in tids if t != inference)
    assert p.stop(timeout=10)
    assert os.sched_getaffinity(main) == ALLOWED


@pinnable
def test_a_session_with_a_thread_per_cpu_is_not_pinned_and_a_switch_unpins(pipelines):
    p = start(pipelines, "synthetic:320x240@200", pace=False, pin_cpus=True)
    assert wait_until(lambda: p.cpu_split() is not None)
    p.reconfigure(options={"threads": len(ALLOWED)})
    assert wait_until(lambda: p.cpu_split() is None and p.delegation_report().options["threads"] == len(ALLOWED))
    assert os.sched_getaffinity(os.getpid()) == ALLOWED
    assert os.sched_getaffinity(p.worker.inference_thread.native_id) == ALLOWED


@pinnable
def test_pipelines_pin_nothing_unless_asked(pipelines):
    p = start(pipelines, "synthetic:320x240@200", pace=False)
    assert wait_until(lambda: p.latest_result() is not None)
    assert p.cpu_split() is None
    assert os.sched_getaffinity(p.worker.inference_thread.native_id) == ALLOWED


# A fresh process: in the test process OpenCV's worker pool already exists (started by earlier
# tests, on unpinned threads), so only here does the inference thread get to start it itself.
FRESH_PROCESS = """
import os, sys, time
from app.pipeline import InferenceConfig, Pipeline
from app.pipeline.plan import FeedPlan
p = Pipeline(FeedPlan("demo", pace=False, pin_cpus=True), InferenceConfig(options={"threads": 1}))
p.start()
deadline = time.monotonic() + 60
while (p.latest_result() is None or p.metrics.inferences_total < 20) and time.monotonic() < deadline:
    time.sleep(0.02)
inference, split = p.worker.inference_thread.native_id, p.cpu_split()
tids = [int(t) for t in os.listdir("/proc/self/task")]
on_it = [t for t in tids if t != inference and os.sched_getaffinity(t) & set(split.inference)]
print(p.metrics.inferences_total, len(tids), len(on_it))
sys.exit(0 if p.stop(timeout=10) else 1)
"""


@pinnable
def test_threads_the_inference_thread_starts_after_its_session_opened_leave_its_cpus():
    # OpenCV's pool worker (started when the inference thread preprocesses the first frame itself)
    # must leave the inference CPU: left there, it preempted the model 1.5 times per run.
    out = subprocess.run([sys.executable, "-c", FRESH_PROCESS], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    inferences, threads, on_inference_cpus = map(int, out.stdout.split())
    assert inferences >= 20 and threads >= 4
    assert on_inference_cpus == 0


@pytest.mark.slow
@pinnable
def test_a_model_in_a_child_process_has_the_inference_cpus_and_the_inference_thread_steps_aside(pipelines):
    """A session whose model runs in a child (here the TensorFlow reference; the GPU process alike), started
    from the pinned inference thread, inherits its CPUs: the thread, which then only hands frames over,
    moves to the others, so that its Python never takes the child's CPU between two runs."""
    from app.backends import BACKENDS
    from app.pipeline import InferenceConfig

    reason = BACKENDS["reference"].availability()
    if reason is not None:
        pytest.skip(reason)
    import psutil

    p = start(pipelines, "synthetic:320x240@200", InferenceConfig(delegate="reference", options={"threads": 1}),
              pace=False, pin_cpus=True)  # fmt: skip
    assert wait_until(lambda: (r := p.latest_result()) is not None and r.backend == "reference", 180), p.status()
    split = p.cpu_split()
    assert split is not None and split.child
    assert split.describe() == (
        f"the model's process on CPU {','.join(map(str, split.inference))}, "
        f"this process's threads on CPU {','.join(map(str, split.others))}"
    )
    workers = [c for c in psutil.Process().children(recursive=True) if "tf_reference" in " ".join(c.cmdline())]
    assert workers and all(os.sched_getaffinity(c.pid) == set(split.inference) for c in workers)
    assert os.sched_getaffinity(p.worker.inference_thread.native_id) == set(split.others)
    assert p.stop(timeout=30)
    assert os.sched_getaffinity(os.getpid()) == ALLOWED
