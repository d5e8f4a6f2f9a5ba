"""500 delegate/model switches on a live pipeline: RSS, threads, file descriptors before/after.

    python -m benchmarks.soak.switch_soak [--switches 500] [--sample-every 100]
    VK_DRIVER_FILES=/usr/lib/chromium/vk_swiftshader_icd.json python -m benchmarks.soak.switch_soak --gpu
        (the GPU path on a software Vulkan driver: GPU sessions, the software-renderer refusal, both precisions)
    VK_DRIVER_FILES=/usr/lib/chromium/vk_swiftshader_icd.json python -m benchmarks.soak.switch_soak --gpu-lost 30
        (a GPU session whose device is lost mid-run, 30 times: tests/harness/vulkan_fault's layer is built and
        enabled, the device lost after --lose-after queue submits; each time the pipeline must go on on the CPU)

The soak itself is tests/harness/switch_soak.py (a short run of it is a test). The device-loss run
happens in a child (this module again, with --child-device-losses): the Vulkan loader reads the
layer's variables when it starts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from benchmarks.harness.children import run_module
from tests.harness.switch_soak import GPU_STEPS, STEPS, run_device_losses, run_switches


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--switches", type=int, default=500)
    parser.add_argument("--sample-every", type=int, default=100, help="switches between samples")
    parser.add_argument("--gpu", action="store_true", help="cycle through the GPU steps instead of CPU/Core ML")
    parser.add_argument("--gpu-lost", type=int, metavar="N", help="lose the GPU device mid-run N times instead")
    parser.add_argument("--lose-after", type=int, default=40, help="queue submits before a device is lost")
    parser.add_argument("--child-device-losses", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_device_losses:
        print(json.dumps(run_device_losses(args.child_device_losses, sample_every=args.sample_every), indent=2))
        return 0
    if args.gpu_lost:
        from tests.harness.vulkan_fault import build_layer, device_loss_env

        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, **device_loss_env(build_layer(Path(tmp)), submits=args.lose_after)}
            child = ["--child-device-losses", str(args.gpu_lost), "--sample-every", str(args.sample_every)]
            out = run_module(__spec__.name, *child, env=env)
            print(out.stdout[out.stdout.find("{") :] if out.returncode == 0 else out.stderr[-3000:])
            return out.returncode
    steps = GPU_STEPS if args.gpu else STEPS
    print(json.dumps(run_switches(args.switches, sample_every=args.sample_every, steps=steps), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
