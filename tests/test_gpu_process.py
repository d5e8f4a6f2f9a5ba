"""The GPU session in a process of its own (app/backends/gpu/process_session.py), on the real LiteRT runtime
under SwiftShader: the same outputs and report as the session in this process, queued runs answered in
order, a child that dies failing like a lost device (the pipeline goes on on the CPU), and an open that
fails in the child failing with the in-process reason. Each case is a child process of the test (the
Vulkan loader reads its variables once). The model is the three-op classifier (tests/conftest.py): the subject
is the process, not the model, and its runs take microseconds where the bundled models' take ~1 s here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from tests.helpers.paths import ROOT, TEST_MODELS

_SAME = """
import sys
import json
import numpy as np
from app.backends.gpu.backend import GpuSession
from app.backends.gpu.process_session import GpuProcessSession
from app.backends.options import BackendOptions
from app.model.spec import load_model_spec
spec = load_model_spec(sys.argv[1])
rng = np.random.default_rng(0)
xs = [rng.integers(-128, 128, spec.input.shape).astype(spec.input.dtype) for _ in range(3)]
here = GpuSession(spec, "fp16", 1, True)
expected = [here.run(x).tobytes().hex() for x in xs]
here_report = here.report
here.close()
child = GpuProcessSession(spec, BackendOptions(threads=1, allow_software=True))
got = {"run": child.run(xs[0]).tobytes().hex()}
child.submit(xs[1]); child.submit(xs[2])  # two queued: answered in the order given
first, second = child.collect(), child.collect()
got["queued"] = [first.output.tobytes().hex(), second.output.tobytes().hex()]
got["stamps"] = [first.run_ms, first.thread_cpu_ms, first.process_cpu_ms]
got["cpu"] = [child.last_child_cpu_ms(), second.process_cpu_ms]
got["run_all"] = [o.reshape(-1).tobytes().hex() for o in child.run_all([xs[0]])]
try:
    child.submit(np.zeros(3, np.int8))
    got["bad"] = None
except Exception as exc:
    got["bad"] = [type(exc).__name__, str(exc)]
got["after_bad"] = child.run(xs[0]).tobytes().hex()
r = child.report
got["report"] = [r.used, r.nodes_total, r.nodes_delegated, r.partitions, r.software, r.adapter,
                 r.options.get("process")]
got["here_report"] = [here_report.used, here_report.nodes_total, here_report.nodes_delegated, here_report.partitions,
                      here_report.software, here_report.adapter, None]
pid = child._proc.pid
child.close()
got["exit"] = child._proc.returncode
got["expected"] = expected
print(json.dumps(got))
"""


def _python(code: str, env: dict[str, str], *args: object, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **env}, timeout=timeout)  # fmt: skip


@pytest.mark.slow
def test_the_child_gives_the_outputs_and_report_of_the_session_in_this_process(swiftshader: dict, three_ops: Path):
    proc = _python(_SAME, swiftshader, three_ops)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    expected = got["expected"]
    assert len(set(expected)) == 3  # three different inputs, three different outputs: order is checkable
    assert got["run"] == expected[0]
    assert got["queued"] == expected[1:]
    assert got["run_all"] == [expected[0]]
    assert got["after_bad"] == expected[0]
    assert got["bad"] is not None and got["bad"][0] == "ModelError" and "3 bytes" in got["bad"][1]
    run_ms, thread_ms, process_ms = got["stamps"]
    assert run_ms > 0 and 0 < thread_ms and process_ms >= thread_ms  # SwiftShader's threads are the child's too
    assert got["cpu"][0] == got["cpu"][1] > 0  # the last collected run's, for the CPU meter (RunsInAChild)
    assert got["report"][:6] == got["here_report"][:6]
    assert got["report"][4] is True  # SwiftShader: flagged as a software renderer there too
    assert got["report"][6] == "own"
    assert got["exit"] == 0


_KILLED = """
import sys
import json, os, signal
import numpy as np
from app.backends.gpu.process_session import GpuProcessSession
from app.backends.options import BackendOptions
from app.model.spec import load_model_spec
spec = load_model_spec(sys.argv[1])
child = GpuProcessSession(spec, BackendOptions(threads=1, allow_software=True))
x = np.zeros(spec.input.shape, spec.input.dtype)
child.run(x)
child.submit(x)
os.kill(child._proc.pid, signal.SIGKILL)
out = {}
try:
    child.collect()
except Exception as exc:
    out["collect"] = [type(exc).__name__, str(exc)]
try:
    child.run(x)
except Exception as exc:
    out["run"] = [type(exc).__name__, str(exc)]
child.close()
out["closed"] = True
print(json.dumps(out))
"""


def test_a_child_that_dies_fails_its_runs_like_a_lost_device(swiftshader: dict, three_ops: Path):
    """A driver that crashes takes the child down, not this process: the queued run and the next fail as
    RunFailed (the pipeline's fallback catches it) naming how the child ended, and close() returns."""
    proc = _python(_KILLED, swiftshader, three_ops)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["collect"][0] == "GpuProcessRunFailed"
    # The child's last stderr line, if it wrote one, follows the signal.
    assert got["collect"][1].startswith("the GPU process ended mid-run (killed by signal 9"), got
    assert got["run"][0] == "GpuProcessRunFailed"
    assert got["closed"]


_REFUSED = """
import sys
import json
from app.backends.gpu.backend import GpuSession
from app.backends.gpu.process_session import GpuProcessSession
from app.backends.options import BackendOptions
from app.model.spec import load_model_spec
spec = load_model_spec(sys.argv[1])
out = {}
for name, open_it in (("here", lambda: GpuSession(spec, "fp16", 1, False)),
                      ("child", lambda: GpuProcessSession(spec, BackendOptions(threads=1)))):
    try:
        open_it().close()
        out[name] = None
    except Exception as exc:
        out[name] = [type(exc).__name__, str(exc)]
print(json.dumps(out))
"""


@pytest.mark.slow
def test_an_open_the_child_refuses_fails_with_the_reason_the_session_here_gives(swiftshader: dict, three_ops: Path):
    """SwiftShader without allow_software: the child's session refuses it, and the parent raises what the
    in-process session raises, word for word (the pipeline's fallback line shows it)."""
    proc = _python(_REFUSED, swiftshader, three_ops)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["here"] is not None and got["here"][0] == "BackendUnavailable"
    assert "software renderer" in got["here"][1]
    assert got["child"] == got["here"]


_PIPELINE = """
import sys
import json, time
from app.pipeline import InferenceConfig, Pipeline
from app.pipeline.plan import FeedPlan
results = []
config = InferenceConfig(model=sys.argv[1], delegate="gpu",
                         options={"threads": 1, "allow_software": True, "own_process": True})
pipeline = Pipeline(FeedPlan("synthetic", pace=False), config, on_result=lambda r: results.append(r))
pipeline.start()

def wait_for(n, limit=240):
    end = time.monotonic() + limit
    while len(results) < n and time.monotonic() < end:
        time.sleep(0.05)

wait_for(6)
queued = len(results)
pipeline.reconfigure(throttle_ms=1.0)  # paced: one run at a time, the queued ones published first
wait_for(queued + 3)
paced = len(results)
pipeline.reconfigure(throttle_ms=0.0, delegate="cpu")  # a switch drains the child first
wait_for(paced + 4)
pipeline.stop()
print(json.dumps({"frames": [r.frame_index for r in results], "backends": [r.backend for r in results],
                  "inference_ms": [r.timing.inference_ms for r in results], "queued": queued, "paced": paced,
                  "status": str(pipeline.status().state)}))
"""


@pytest.mark.slow
def test_the_pipeline_queues_frames_in_the_child_and_publishes_them_in_order(swiftshader: dict, three_ops: Path):
    """Unpaced, the worker keeps two frames in the child; every frame the on-demand source gave is published
    once, in order, through a change of pace (one at a time again) and a switch to the CPU (the child's
    frames drained first)."""
    proc = _python(_PIPELINE, swiftshader, three_ops)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    frames = got["frames"]
    assert len(frames) >= got["paced"] + 4, got
    assert frames == sorted(set(frames)), frames  # in order, none twice
    assert frames == list(range(frames[0], frames[0] + len(frames))), frames  # on demand: none skipped
    assert got["backends"][: got["paced"]] == ["gpu"] * got["paced"]
    assert got["backends"][-1] == "cpu"
    assert all(ms > 0 for ms in got["inference_ms"])


def test_gpu_process_auto_only_where_nothing_paces_the_runs_of_a_one_image_classifier(three_ops: Path):
    """`bench --gpu-process auto` (the default): the child only where the worker queues frames in it."""
    from app.model.spec import load_model_spec
    from app.pipeline import InferenceConfig
    from app.tasks.bench import gpu_process_pays

    classifier = load_model_spec(three_ops)
    detector = load_model_spec(TEST_MODELS / "detector_like.tflite")
    gpu = InferenceConfig(model=three_ops, delegate="gpu")
    assert gpu_process_pays(gpu, classifier, "demo", pace=False)
    assert gpu_process_pays(gpu, classifier, "synthetic", pace=False)
    assert not gpu_process_pays(gpu, classifier, "demo", pace=True)  # the source paces the runs
    assert not gpu_process_pays(gpu, classifier, "camera:0", pace=False)  # a camera paces them whatever is asked
    assert not gpu_process_pays(gpu, classifier, "stream:rtsp://host/x", pace=False)
    assert not gpu_process_pays(gpu, classifier, "nosuchkind:x", pace=False)  # bench's open says what is wrong
    assert not gpu_process_pays(replace(gpu, throttle_ms=30), classifier, "demo", pace=False)  # so does a throttle
    assert not gpu_process_pays(replace(gpu, delegate="cpu"), classifier, "demo", pace=False)
    detector_gpu = replace(gpu, model=TEST_MODELS / "detector_like.tflite")
    assert not gpu_process_pays(detector_gpu, detector, "demo", pace=False)


@pytest.mark.slow
def test_bench_gpu_process_says_where_the_session_ran(swiftshader: dict, three_ops: Path, tmp_path: Path):
    """`bench --no-pace` on the GPU (--gpu-process auto): the JSON (checked against its schema by run_cli) carries
    the child's report, whose options say so, and every frame is counted."""
    out = tmp_path / "bench.json"
    run = run_cli("bench", "--delegate", "gpu", "--allow-software-gpu", "--model",
                  three_ops, "--source", "synthetic", "--no-pace", "--throttle-ms", "0",
                  "--frames", "4", "--warmup", "0", "--json", out, env=swiftshader, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    summary = json.loads(out.read_text())
    assert summary["delegate"]["used"] == "gpu" and summary["delegate"]["software"] is True
    assert summary["delegate"]["options"]["process"] == "own"
    assert summary["config"]["options"]["own_process"] is True
    assert summary["metrics"]["latency"]["inference"]["count"] >= 4
    assert "delegate  gpu -> gpu, LiteRT GPU (WebGPU/Vulkan, fp16) in a process of its own, adapter" in run.stdout


_SLOW = """
import sys
import json, time
import app.backends.gpu.process_session as ps
from app.backends.options import BackendOptions
from app.model.spec import load_model_spec
ps.OPEN_TIMEOUT_S = 0.05  # far less than the child takes to import and compile: it is "hung" for real
spec = load_model_spec(sys.argv[1])
started = time.monotonic()
try:
    ps.GpuProcessSession(spec, BackendOptions(threads=1, allow_software=True))
    out = None
except Exception as exc:
    out = [type(exc).__name__, str(exc)]
print(json.dumps({"error": out, "seconds": time.monotonic() - started}))
"""


def test_a_child_that_does_not_open_in_time_is_killed_and_the_open_refused(swiftshader: dict, three_ops: Path):
    """A driver that hangs compiling must not hang the app: past the open's time limit the child is killed and
    the open fails as an unavailable backend (the pipeline falls back), promptly."""
    proc = _python(_SLOW, swiftshader, three_ops)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["error"] == ["BackendUnavailable", "the GPU process did not open the model within 0.05 s"]
    assert got["seconds"] < 15
