"""A Vulkan layer that loses a GPU device mid-run for real (device_loss_layer.c), built with the system C
compiler at test time: the Vulkan driver (SwiftShader in the tests) then reports VK_ERROR_DEVICE_LOST to
Dawn, and LiteRT's GPU accelerator fails as it would on a GPU that hung or was reset.

    env = device_loss_env(build_layer(tmp_dir), submits=40)   # lose each device after 40 vkQueueSubmit calls
    env = device_loss_env(build_layer(tmp_dir), trigger=path)  # lose devices once `path` exists

The variables take effect in a process started with them (the loader reads them when Dawn creates its
Vulkan instance), so the GPU code runs in a child process with `{**os.environ, **swiftshader, **env}`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

LAYER_NAME = "VK_LAYER_DELEGATESCOPE_device_loss"
SOURCE = Path(__file__).with_name("device_loss_layer.c")


class NoCompiler(RuntimeError):
    """No C compiler on this machine: the layer cannot be built (the caller skips with this reason)."""


def build_layer(out_dir: Path) -> Path:
    """Compile the layer and write its loader manifest into `out_dir`; returns `out_dir`."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise NoCompiler("no C compiler (cc, gcc or clang) to build the device-loss Vulkan layer")
    out_dir.mkdir(parents=True, exist_ok=True)
    library = out_dir / "libds_device_loss_layer.so"
    subprocess.run(
        [cc, "-shared", "-fPIC", "-fvisibility=hidden", "-O1", "-Wall", "-o", str(library), str(SOURCE),
         "-lpthread"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    manifest = {
        "file_format_version": "1.1.2",
        "layer": {
            "name": LAYER_NAME,
            "type": "GLOBAL",
            "library_path": str(library),
            "api_version": "1.3.0",
            "implementation_version": "1",
            "description": "Delegate Scope tests: loses a device after N queue submits",
        },
    }
    (out_dir / "ds_device_loss_layer.json").write_text(json.dumps(manifest))
    return out_dir


def device_loss_env(
    layer_dir: Path, *, submits: int | None = None, trigger: Path | None = None, log: bool = False
) -> dict[str, str]:
    """The environment that enables the layer (VK_LAYER_PATH + VK_INSTANCE_LAYERS, which every loader
    since 1.0 reads) and sets when it loses a device."""
    env = {"VK_LAYER_PATH": str(layer_dir), "VK_INSTANCE_LAYERS": LAYER_NAME, "DS_VKFAULT_LOG": "1" if log else "0"}
    env["DS_VKFAULT_SUBMITS"] = "" if submits is None else str(submits)
    env["DS_VKFAULT_TRIGGER"] = "" if trigger is None else str(trigger)
    return env
