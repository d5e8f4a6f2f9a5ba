"""A GPU session whose device is lost mid-run, for real: a Vulkan layer (tests/harness/vulkan_fault) between Dawn
and the SwiftShader driver makes the device report VK_ERROR_DEVICE_LOST after N queue submits, so LiteRT's
GPU accelerator fails as it does when a GPU hangs or is reset. The app must go on on the CPU, visibly:
no exit 1, no hang, no crash, nothing leaked. Each run is a child process (the loader reads the layer
variables when Dawn creates its Vulkan instance)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.vulkan_fault import NoCompiler, build_layer, device_loss_env
from tests.helpers.cli import run_cli
from tests.helpers.paths import PHOTOS, ROOT

# Its module-scoped fixtures are built once: the module's tests stay on one xdist worker, in order.
pytestmark = [pytest.mark.xdist_group("gpu_device_loss"), pytest.mark.slow]

# A session opens with 4 submits on SwiftShader and runs 4 per inference, the same for the int8 model, the
# float32 one and the three-op classifier below (the layer's trace); the figures leave a few inferences before
# the loss without depending on the exact count.
MID_RUN = 16


@pytest.fixture(scope="module")
def layer(tmp_path_factory: pytest.TempPathFactory, swiftshader: dict) -> Path:
    try:
        return build_layer(tmp_path_factory.mktemp("vulkan-layer"))
    except NoCompiler as exc:
        pytest.skip(str(exc))


def losing(layer: Path, swiftshader: dict, submits: int) -> dict[str, str]:
    return {**swiftshader, **device_loss_env(layer, submits=submits)}


def test_the_layer_loses_the_device_where_told(layer: Path, swiftshader: dict, three_ops: Path):
    """The fault is real: the driver's own traffic goes through the layer, and the device is lost after
    exactly N submits (the layer's trace), then Dawn reports the loss. On the three-op classifier: its
    submits are the int8 model's (MID_RUN), its inferences microseconds against 0.7-1 s."""
    code = (
        "import sys, numpy as np; from app.model.spec import load_model_spec\n"
        "from app.backends.gpu.backend import GpuSession\n"
        "spec = load_model_spec(sys.argv[1]); s = GpuSession(spec, 'fp16', 1, allow_software=True)\n"
        "x = np.zeros((1, 224, 224, 3), np.float32)\n"
        "for i in range(4):\n"
        "    try: s.run(x); print('> ok', flush=True)\n"
        "    except Exception as e: print('>', type(e).__name__, e, flush=True)\n"
        "s.close(); print('> closed', flush=True)\n"
    )
    env = {**os.environ, **swiftshader, **device_loss_env(layer, submits=10, log=True)}
    proc = subprocess.run([sys.executable, "-c", code, str(three_ops)], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "vkfault: device 1 submit 10\n" in proc.stderr and "vkfault: device 1 submit 11\n" not in proc.stderr
    assert "vkfault: device 1 lost: vkQueueSubmit -> VK_ERROR_DEVICE_LOST" in proc.stderr
    lines = [line[2:] for line in proc.stdout.splitlines() if line.startswith("> ")]  # LiteRT prints too
    assert lines[0] == "ok" and lines[-1] == "closed", proc.stdout  # open + 1 inference fit in 10 submits
    assert len(lines) == 5 and all(line.startswith("GpuRunFailed the GPU run failed:") for line in lines[1:-1])


@pytest.mark.slow
def test_a_gpu_device_lost_mid_run_falls_back_to_cpu_visibly_and_leaks_nothing(
    layer: Path, swiftshader: dict, three_ops: Path
):
    """A live pipeline on the GPU, its device lost mid-run, ten times (each time the GPU is asked for
    again: a new device, lost again): the CPU takes over with a `fallback` event each time. Counted after
    the first two losses (the first GPU sessions fill Dawn's and SwiftShader's caches: +~80 MiB); RSS took
    one more step of +33 MiB between losses 5 and 10 of a 30-loss run, then stayed flat. On a three-op
    classifier (tests/builders): the device, its loss and the fall-back are the same for any model, and 8
    losses take 6 s here against 15 s for 3 on the int8 model (its inferences take 0.7-1 s on SwiftShader).
    A session leaked at each loss (`GpuSession.close` a no-op) read +142 MiB and +8 OS threads over the 8,
    against +0 without (docs/reliability.md): both bounds below catch it."""
    code = (
        "import json, sys; from tests.harness.switch_soak import run_device_losses; "
        "print(json.dumps(run_device_losses(8, warmup=2, model=sys.argv[1]), default=str))"
    )
    env = {**os.environ, **losing(layer, swiftshader, MID_RUN)}
    proc = subprocess.run([sys.executable, "-c", code, str(three_ops)], capture_output=True, text=True, timeout=600,
                          cwd=ROOT, env=env)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]  # no crash in Dawn or the driver, no hang
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert r["stopped"] and r["status"] == "running" and r["threads_after_stop"] == 1
    assert len(r["losses"]) == 8
    for loss in r["losses"]:
        assert (loss["requested"], loss["used"]) == ("gpu", "cpu")
        assert loss["message"].startswith("gpu failed mid-run: the GPU run failed: "), loss
        assert loss["gpu_results"] > 0 and loss["cpu_results"] >= 3, loss  # GPU results, then CPU ones
    assert "error" not in r["event_kinds"] and "switch_failed" not in r["event_kinds"], r["event_kinds"]
    before, after = r["before"], r["after"]
    assert after["threads"] == before["threads"] and after["os_threads"] <= before["os_threads"] + 2
    assert after["fds"] <= before["fds"] + 2 and after["open_files"] == before["open_files"]
    assert after["rss_mib"] - before["rss_mib"] < 60, (before["rss_mib"], after["rss_mib"])  # one step of +33 in 30
    grown = after["heap_in_use_mib"] - before["heap_in_use_mib"]
    assert not grown >= 16, grown  # NaN off glibc; 15 losses moved it by +0.05 MiB (docs/reliability.md)


def test_classify_goes_on_on_the_cpu_when_the_gpu_is_lost_mid_run(layer: Path, swiftshader: dict, three_ops: Path):
    photos = sorted(PHOTOS.glob("*.jpg"))
    args = ("classify", "--model", three_ops, "--delegate", "gpu", "--allow-software-gpu", "--json", "--top-k", "1",
            *photos)  # fmt: skip
    clean = run_cli(*args, env=swiftshader, timeout=300)
    assert clean.returncode == 0, clean.stderr
    run = run_cli(*args, env=losing(layer, swiftshader, 14), timeout=300)  # lost during the 2nd or 3rd photo
    assert run.returncode == 0, run.stderr  # it ended in exit 3, "the GPU run failed", before
    delegate = run.json()["delegate"]
    assert (delegate["requested"], delegate["used"]) == ("gpu", "cpu")
    assert delegate["fallback_reason"].startswith("gpu failed mid-run: the GPU run failed: ")
    assert "fell back to CPU: gpu failed mid-run" in run.stderr and "Traceback" not in run.stderr
    labels = [r["top"][0]["label"] for r in run.json()["results"]]
    assert labels == [r["top"][0]["label"] for r in clean.json()["results"]]  # every photo, none twice or lost


def test_a_device_lost_in_the_first_inference_is_a_gpu_that_cannot_run(
    layer: Path, swiftshader: dict, three_ops: Path
):
    """Lost while the session opens (its timed first inference): the same fallback as no adapter at
    all. It ended in exit 3 ("the GPU run failed"), as if the model were at fault."""
    args = ("classify", "--model", three_ops, "--json", "--top-k", "1", PHOTOS / "coffee.jpg")
    run = run_cli(*args, "--delegate", "gpu", "--allow-software-gpu", env=losing(layer, swiftshader, 2), timeout=300)
    assert run.returncode == 0, run.stderr
    delegate = run.json()["delegate"]
    assert (delegate["requested"], delegate["used"]) == ("gpu", "cpu")
    assert delegate["fallback_reason"].startswith("the GPU failed its first inference (the GPU run failed: ")
    on_cpu = run_cli(*args, "--delegate", "cpu", timeout=300)
    assert run.json()["results"][0]["top"] == on_cpu.json()["results"][0]["top"]  # the CPU's own answer


@pytest.mark.parametrize(
    "process", [(), ("--no-pace",)], ids=["paced: in this process", "unpaced: auto, a process of its own"]
)
def test_bench_on_a_gpu_lost_mid_run_exits_0_and_says_so(
    layer: Path, swiftshader: dict, three_ops: Path, tmp_path: Path, process: tuple[str, ...]
):
    """Paced, in this process; unpaced, where `--gpu-process auto` runs it in a child (frames queued two deep:
    its device is lost, its runs fail, the queued frame's answer is read and dropped): the same fallback,
    events and words."""
    summary = tmp_path / "summary.json"
    run = run_cli("bench", "--source", "synthetic", "--model", three_ops, "--delegate", "gpu",
                  "--allow-software-gpu", *process, "--frames", "30", "--warmup", "2", "--json", summary,
                  env=losing(layer, swiftshader, MID_RUN), timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "warning: fallback: gpu failed mid-run: the GPU run failed" in run.stderr and "Traceback" not in run.stderr
    out = json.loads(summary.read_text())
    assert (out["delegate"]["requested"], out["delegate"]["used"]) == ("gpu", "cpu")
    kinds = [e["kind"] for e in out["events"]]
    assert kinds[:3] == ["open", "switch", "fallback"], kinds
    assert out["events"][0]["message"].endswith("on gpu") and "failed mid-run" in out["events"][2]["message"]
    assert out["config"]["options"]["own_process"] is bool(process)


def test_no_fallback_makes_a_gpu_lost_mid_run_exit_5(layer: Path, swiftshader: dict, three_ops: Path):
    """With --no-fallback an accelerator that stops working is exit 5, as one that cannot open; it was
    exit 3, "model problem", though the model is fine."""
    classify = run_cli("classify", "--model", three_ops, "--delegate", "gpu", "--allow-software-gpu", "--no-fallback",
                       "--top-k", "1", *sorted(PHOTOS.glob("*.jpg")), env=losing(layer, swiftshader, 14),
                       timeout=300)  # fmt: skip
    bench = run_cli("bench", "--source", "synthetic", "--model", three_ops, "--delegate", "gpu",
                    "--allow-software-gpu", "--no-fallback", "--frames", "30", "--warmup", "2",
                    env=losing(layer, swiftshader, MID_RUN), timeout=300)  # fmt: skip
    for run, first_words in ((classify, "the gpu delegate failed mid-run: the GPU run failed: "),
                             (bench, "inference failed on gpu: the GPU run failed: ")):  # fmt: skip
        assert run.returncode == 5, (run.returncode, run.stderr)
        errors = [line for line in run.stderr.splitlines() if "error" in line.lower()]
        assert errors == [errors[0]] and errors[0].startswith(f"delegate-scope: error: {first_words}"), run.stderr
        assert "Traceback" not in run.stderr

