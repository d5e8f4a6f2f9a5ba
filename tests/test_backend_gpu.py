"""The GPU backend on the real LiteRT runtime: the failure path (no Vulkan device), and a real
software adapter (SwiftShader) that must be flagged and refused unless asked for. No GPU is faked."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.backends.gpu.backend import failure_reason, parse_log
from app.backends.gpu.vulkan_devices import VulkanDevice
from tests.helpers.cli import assert_one_line_error, run_cli
from tests.helpers.paths import PHOTOS, ROOT
from tests.helpers.vulkan import NO_VULKAN

PHOTO = PHOTOS / "coffee.jpg"


def test_log_parsing_on_lines_litert_prints():
    lines = [
        "INFO: [delegate_webgpu.cc:363] Created a WebGPU environment.",
        "I0000 delegate_webgpu.cc:400] Selected adapter: SwiftShader Device (Subzero), arch=swiftshader, "
        "vendor=google, backend=Vulkan, adapterType=CPU / Software",
        "INFO: Replacing 29 out of 31 node(s) with delegate (LiteRtGpuDelegate) node, yielding 2 partitions "
        "for subgraph 0 (main).",
    ]
    facts = parse_log(lines)
    assert facts.adapter == "SwiftShader Device (Subzero) (Vulkan, CPU / Software)"
    nvidia = "Selected adapter: NVIDIA H200, arch=, vendor=nvidia, backend=Vulkan, adapterType=Discrete GPU"
    assert parse_log([nvidia]).adapter == "NVIDIA H200 (Vulkan, Discrete GPU)"  # as logged on an H200
    assert (facts.nodes_delegated, facts.nodes_total, facts.subsets) == (29, 31, 2)
    # XNNPACK, applied after the GPU to what it left, would log its own line: not the GPU's.
    xnnpack = "Replacing 2 out of 3 node(s) with delegate (TfLiteXNNPackDelegate) node, yielding 2 partitions"
    both = parse_log([*lines, f"INFO: {xnnpack}"])
    assert (both.nodes_delegated, both.line) == (29, lines[-1][len("INFO: ") :])


def test_failure_reasons_are_words_a_user_can_act_on():
    no_adapter = [
        "ERROR: [delegate_webgpu.cc:359] Failed to initialize WebGPU environment: INTERNAL: No adapters found"
    ]
    llvmpipe = VulkanDevice("llvmpipe (LLVM 15.0.6, 256 bits)", "CPU", 0x10005, "1.3.230")
    assert failure_reason(no_adapter, [], "the Vulkan loader (libvulkan.so.1) is not installed") == (
        "no GPU adapter found (the Vulkan loader (libvulkan.so.1) is not installed)"
    )
    assert "WebGPU rejected every Vulkan device (llvmpipe" in failure_reason(no_adapter, [llvmpipe], None)


@pytest.mark.slow
def test_without_a_vulkan_device_gpu_falls_back_to_cpu_visibly():
    run = run_cli("classify", "--delegate", "gpu", "--json", "--top-k", "1", PHOTO, env=NO_VULKAN)
    assert run.returncode == 0, run.stderr
    delegate = run.json()["delegate"]
    assert (delegate["requested"], delegate["used"]) == ("gpu", "cpu")
    assert delegate["fallback_reason"].startswith("no GPU adapter found")
    assert "fell back to CPU: no GPU adapter found" in run.stderr
    assert run.json()["results"][0]["top"][0]["label"] == "espresso"


@pytest.mark.slow
def test_no_fallback_exits_5_with_the_reason():
    run = run_cli("classify", "--delegate", "gpu", "--no-fallback", PHOTO, env=NO_VULKAN)
    assert_one_line_error(run, 5, "the gpu delegate is not available: no GPU adapter found")


@pytest.mark.slow
def test_delegates_json_tells_the_truth_without_a_gpu():
    run = run_cli("delegates", "--json", env=NO_VULKAN)
    assert run.returncode == 0, run.stderr
    by_name = {d["name"]: d for d in run.json()["delegates"]}
    assert by_name["cpu"]["available"] is True
    assert by_name["gpu"]["available"] is False
    assert by_name["gpu"]["reason"].startswith("no GPU adapter found")
    assert by_name["gpu"]["devices"] == []


@pytest.mark.slow
def test_delegates_lists_the_real_vulkan_devices_of_this_machine():
    """Whatever this machine has (llvmpipe, SwiftShader, a real GPU), `delegates` reports what Vulkan reports."""
    code = (
        "import json; from app.backends.gpu.vulkan_devices import list_devices; d, p = list_devices(); "
        "print(json.dumps([x.describe() for x in d]))"
    )
    direct = json.loads(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    )
    run = run_cli("delegates", "--json")
    gpu = next(d for d in run.json()["delegates"] if d["name"] == "gpu")
    assert gpu["devices"] == direct
    if not gpu["available"]:
        assert gpu["reason"]


@pytest.mark.slow
def test_a_software_adapter_is_flagged_and_refused_by_default(swiftshader: dict):
    run = run_cli("delegates", "--json", env=swiftshader)
    gpu = next(d for d in run.json()["delegates"] if d["name"] == "gpu")
    assert gpu["available"] is False
    assert gpu["software"] is True
    assert gpu["reason"].startswith("GPU adapter is a software renderer: SwiftShader")

    run = run_cli("classify", "--delegate", "gpu", "--json", "--top-k", "1", PHOTO, env=swiftshader)
    assert run.returncode == 0, run.stderr
    delegate = run.json()["delegate"]
    assert (delegate["requested"], delegate["used"]) == ("gpu", "cpu")
    assert "software renderer" in delegate["fallback_reason"]


@pytest.mark.slow
@pytest.mark.parametrize("model", ["efficientnet_lite0", "efficientnet_lite0_int8"])
def test_a_software_adapter_runs_when_asked_and_the_evidence_shows_the_cpu_did_the_work(swiftshader: dict, model: str):
    photos = [PHOTOS / "coffee.jpg", PHOTOS / "rocket.jpg"]
    cpu = run_cli("classify", "--model", model, "--json", *photos)
    gpu = run_cli(
        "classify",
        "--model",
        model,
        "--delegate",
        "gpu",
        "--allow-software-gpu",
        "--json",
        *photos,
        env=swiftshader,
        timeout=300,
    )
    assert gpu.returncode == 0, gpu.stderr
    delegate = gpu.json()["delegate"]
    assert (delegate["used"], delegate["software"]) == ("gpu", True)
    assert "SwiftShader" in delegate["adapter"]
    assert delegate["fully_accelerated"] is True
    assert any("software renderer" in w for w in delegate["warnings"])
    # A real GPU would leave the CPU nearly idle during inference; here the CPU does it all: the CPU time of the
    # calling thread and of the runtime's (SwiftShader's) threads is many times what the CPU backend spends on
    # the whole inference (~900 ms against 2-5 ms here). CPU time, not a share of wall time: a loaded machine
    # stretches an inference's wall time (a share of 0.55 was read), not its work.
    def cpu_ms(run) -> float:
        return sum(r["inference_cpu_ms"]["inference_thread"] + (r["inference_cpu_ms"]["runtime_threads"] or 0)
                   for r in run.json()["results"])  # fmt: skip

    assert cpu_ms(gpu) > 20 * cpu_ms(cpu), (cpu_ms(gpu), cpu_ms(cpu))
    for c, g in zip(cpu.json()["results"], gpu.json()["results"], strict=True):
        assert c["top"][0]["index"] == g["top"][0]["index"]
        assert abs(c["top"][0]["score"] - g["top"][0]["score"]) < 0.02


def test_gpu_precision_option_is_validated():
    assert run_cli("classify", "--delegate", "gpu", "--gpu-precision", "fp8", PHOTO).returncode == 2


_GIL_PROBE = """
import json, sys, threading
import numpy as np
from app.backends.gpu.backend import GpuSession
from app.model.spec import load_model_spec
spec = load_model_spec(sys.argv[1])
s = GpuSession(spec, "fp16", 1, allow_software=True)
x = np.zeros(spec.input.shape, spec.input.dtype)
s.run(x)
sys.setswitchinterval(30.0)  # no forced GIL switch within a run: the other thread runs only if the run lets go
ready, gate, ran = threading.Event(), threading.Lock(), []
gate.acquire()
def other():
    ready.set()
    gate.acquire()  # blocks without the GIL; once released, it waits for the GIL alone
    ran.append(1)
thread = threading.Thread(target=other)
thread.start()
ready.wait()
gate.release()
# The other thread takes the GIL only inside a run (nothing else here gives it up); on a loaded machine the
# OS may wake it after a short run has ended, so up to 100 runs, each read before anything gives the GIL up.
during = False
for _ in range(100):
    s.run(x)
    if ran:
        during = True
        break
thread.join()
s.close()
print(json.dumps({"ran_during_run": during, "ran": bool(ran)}))
"""


@pytest.mark.slow
def test_a_gpu_run_lets_other_python_threads_run(swiftshader: dict, three_ops: Path):
    """LiteRT's Python wrapper held the GIL through a GPU run, so a pipeline's capture and results threads
    queued behind every inference; the session runs through the C API (ctypes: no GIL) so they overlap it.
    A hand-off, not a clock: another thread stands ready, blocked only on the GIL, as one run starts, and
    the interpreter's forced switch is put out of reach; it runs within the run only if the run gives the
    GIL up. What that buys in time (a spinning thread's pace during runs against alone) is measured by
    `python -m benchmarks.suite.gpu_run_gil`."""
    proc = subprocess.run([sys.executable, "-c", _GIL_PROBE, str(three_ops)], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, **swiftshader}, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    probe = json.loads(proc.stdout.strip().splitlines()[-1])
    assert probe == {"ran_during_run": True, "ran": True}, probe


_BUFFER_KINDS = """
import json
import numpy as np
from app.backends.litert_c import HW_CPU, HW_GPU, Environment, NativeModel
from app.model.spec import load_model_spec
out = {}
environment = Environment(gpu=True)  # one GPU device for the four (making one costs 1.4 s on SwiftShader)
for name in ("efficientnet_lite0", "efficientnet_lite0_int8"):
    spec = load_model_spec(name)
    content = spec.path.read_bytes()
    x = np.random.default_rng(0).integers(0, 255, spec.input.shape).astype(spec.input.dtype)
    for host in (False, True):
        NativeModel.HOST_BUFFERS = host
        m = NativeModel(content, HW_GPU | HW_CPU, 1, profiling=False, environment=environment)
        y = np.empty(1000, spec.output.dtype)
        m.run_tensor(x, y)
        first = y.copy()
        m.run_tensor(x, y)  # a second run on the same buffers: nothing left over from the first
        out[f"{name} host={host}"] = {"ours": m._host[0] is not None, "top": int(first.argmax()),
                                      "bytes": first.tobytes().hex(), "again": bool((first == y).all())}
        m.close()
environment.close()
print(json.dumps(out))
"""


@pytest.mark.slow
def test_the_runtimes_buffers_and_host_memory_give_the_same_outputs(swiftshader: dict):
    """The GPU session writes and reads the runtime's own buffers under their locks (the default), or
    buffers over numpy arrays of ours (HOST_BUFFERS, compared in benchmarks/investigations/gpu_pipeline.py): the same
    bytes out either way, on the float32 and the int8 model, under SwiftShader."""
    proc = subprocess.run([sys.executable, "-c", _BUFFER_KINDS], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, **swiftshader}, timeout=600)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    runs = json.loads(proc.stdout.strip().splitlines()[-1])
    for name in ("efficientnet_lite0", "efficientnet_lite0_int8"):
        default, ours = runs[f"{name} host=False"], runs[f"{name} host=True"]
        assert default["bytes"] == ours["bytes"], name
        assert default["again"] and ours["again"], name
        assert ours["ours"], f"{name}: the runtime refused host memory"
    assert not runs["efficientnet_lite0 host=False"]["ours"]  # the default: the runtime's buffer


def test_the_probe_reads_its_child_line_into_a_typed_result():
    """What the probe child prints (app/backends/gpu/probe.py) read as a GpuProbe; a line that is not a JSON
    object is the crash it is, never a half-read probe."""
    from app.backends.gpu.backend import GpuProbe

    line = '{"devices": ["SwiftShader Device (CPU, Vulkan 1.3)"], "vulkan_problem": null, "ok": true, ' \
        '"adapter": "SwiftShader", "software": true, "fully_accelerated": false, "init_ms": 12.5}'
    probe = GpuProbe.from_json(line)
    assert probe == GpuProbe(True, None, "SwiftShader", True, False, 12.5, ("SwiftShader Device (CPU, Vulkan 1.3)",))
    assert GpuProbe.from_json('{"devices": [], "ok": false, "reason": "no adapter"}').reason == "no adapter"
    with pytest.raises(ValueError):
        GpuProbe.from_json("[1]")
