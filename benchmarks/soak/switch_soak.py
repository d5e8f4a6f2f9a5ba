"""500 delegate/model switches on a live pipeline: RSS, threads, file descriptors before/after.

python benchmarks/switch_soak.py [--switches 500] [--sample-every 100]
VK_DRIVER_FILES=/usr/lib/chromium/vk_swiftshader_icd.json python benchmarks/switch_soak.py --gpu
    (the GPU path on a software Vulkan driver: GPU sessions, the software-renderer refusal, both precisions)
VK_DRIVER_FILES=/usr/lib/chromium/vk_swiftshader_icd.json python benchmarks/switch_soak.py --gpu-lost 30
    (a GPU session whose device is lost mid-run, 30 times: tests/harness/vulkan_fault's layer is built and enabled,
    the device lost after --lose-after queue submits; each time the pipeline must go on on the CPU)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.harness.switch_soak import GPU_STEPS, STEPS, run_switches

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--switches", type=int, default=500)
    parser.add_argument("--sample-every", type=int, default=100, help="switches between samples")
    parser.add_argument("--gpu", action="store_true", help="cycle through the GPU steps instead of CPU/Core ML")
    parser.add_argument("--gpu-lost", type=int, metavar="N", help="lose the GPU device mid-run N times instead")
    parser.add_argument("--lose-after", type=int, default=40, help="queue submits before a device is lost")
    args = parser.parse_args()
    if args.gpu_lost:
        import os
        import subprocess
        import tempfile

        from tests.harness.vulkan_fault import build_layer, device_loss_env

        with tempfile.TemporaryDirectory() as tmp:  # the loader reads the layer variables at start: a child
            env = {**os.environ, **device_loss_env(build_layer(Path(tmp)), submits=args.lose_after)}
            code = (
                "import json; from tests.harness.switch_soak import run_device_losses; "
                f"print(json.dumps(run_device_losses({args.gpu_lost}, sample_every={args.sample_every}), indent=2))"
            )
            root = Path(__file__).resolve().parent.parent
            out = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True)
            print(out.stdout[out.stdout.find("{") :] if out.returncode == 0 else out.stderr[-3000:])
            sys.exit(out.returncode)
    steps = GPU_STEPS if args.gpu else STEPS
    print(json.dumps(run_switches(args.switches, sample_every=args.sample_every, steps=steps), indent=2))
