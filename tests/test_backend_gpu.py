"""The GPU backend on the real LiteRT runtime: the failure path (no Vulkan device), and a real
software adapter (SwiftShader) that must be flagged and refused unless asked for. No GPU is faked."""

import json
import subprocess
import sys

import pytest

from app.backends.gpu import failure_reason, parse_log
from app.backends.vulkan_devices import VulkanDevice
from tests.conftest import NO_VULKAN, PHOTOS, ROOT, assert_one_line_error, run_cli

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


def test_failure_reasons_are_words_a_user_can_act_on():
    no_adapter = [
        "ERROR: [delegate_webgpu.cc:359] Failed to initialize WebGPU environment: INTERNAL: No adapters found"
    ]
    llvmpipe = VulkanDevice("llvmpipe (LLVM 15.0.6, 256 bits)", "CPU", 0x10005, "1.3.230")
    assert failure_reason(no_adapter, [], "the Vulkan loader (libvulkan.so.1) is not installed") == (
        "no GPU adapter found (the Vulkan loader (libvulkan.so.1) is not installed)"
    )
    assert "WebGPU rejected every Vulkan device (llvmpipe" in failure_reason(no_adapter, [llvmpipe], None)


def test_without_a_vulkan_device_gpu_falls_back_to_cpu_visibly():
    run = run_cli("classify", "--delegate", "gpu", "--json", "--top-k", "1", PHOTO, env=NO_VULKAN)
    assert run.returncode == 0, run.stderr
    delegate = run.json()["delegate"]
    assert (delegate["requested"], delegate["used"]) == ("gpu", "cpu")
    assert delegate["fallback_reason"].startswith("no GPU adapter found")
    assert "fell back to CPU: no GPU adapter found" in run.stderr
    assert run.json()["results"][0]["top"][0]["label"] == "espresso"


def test_no_fallback_exits_5_with_the_reason():
    run = run_cli("classify", "--delegate", "gpu", "--no-fallback", PHOTO, env=NO_VULKAN)
    assert_one_line_error(run, 5, "the gpu delegate is not available: no GPU adapter found")


def test_delegates_json_tells_the_truth_without_a_gpu():
    run = run_cli("delegates", "--json", env=NO_VULKAN)
    assert run.returncode == 0, run.stderr
    by_name = {d["name"]: d for d in run.json()}
    assert by_name["cpu"]["available"] is True
    assert by_name["gpu"]["available"] is False
    assert by_name["gpu"]["reason"].startswith("no GPU adapter found")
    assert by_name["gpu"]["devices"] == []


def test_delegates_lists_the_real_vulkan_devices_of_this_machine():
    """Whatever this machine has (llvmpipe, SwiftShader, a real GPU), `delegates` reports what Vulkan reports."""
    code = (
        "import json; from app.backends.vulkan_devices import list_devices; d, p = list_devices(); "
        "print(json.dumps([x.describe() for x in d]))"
    )
    direct = json.loads(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True).stdout
    )
    run = run_cli("delegates", "--json")
    gpu = next(d for d in run.json() if d["name"] == "gpu")
    assert gpu["devices"] == direct
    if not gpu["available"]:
        assert gpu["reason"]


def test_a_software_adapter_is_flagged_and_refused_by_default(swiftshader: dict):
    run = run_cli("delegates", "--json", env=swiftshader)
    gpu = next(d for d in run.json() if d["name"] == "gpu")
    assert gpu["available"] is False
    assert gpu["software"] is True
    assert gpu["reason"].startswith("GPU adapter is a software renderer: SwiftShader")

    run = run_cli("classify", "--delegate", "gpu", "--json", "--top-k", "1", PHOTO, env=swiftshader)
    assert run.returncode == 0, run.stderr
    delegate = run.json()["delegate"]
    assert (delegate["requested"], delegate["used"]) == ("gpu", "cpu")
    assert "software renderer" in delegate["fallback_reason"]


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
    # A real GPU would leave the CPU nearly idle during inference; here the CPU does it all.
    assert delegate["cpu_per_wall"] > 0.5
    for c, g in zip(cpu.json()["results"], gpu.json()["results"], strict=True):
        assert c["top"][0]["index"] == g["top"][0]["index"]
        assert abs(c["top"][0]["score"] - g["top"][0]["score"]) < 0.02


def test_gpu_precision_option_is_validated():
    assert run_cli("classify", "--delegate", "gpu", "--gpu-precision", "fp8", PHOTO).returncode == 2
