"""500 delegate/model switches on a live pipeline: RSS, threads, file descriptors before/after.

    python benchmarks/switch_soak.py [--switches 500] [--sample-every 100]
    VK_DRIVER_FILES=/usr/lib/chromium/vk_swiftshader_icd.json python benchmarks/switch_soak.py --gpu
        (the GPU path on a software Vulkan driver: GPU sessions, the software-renderer refusal, both precisions)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.switch_soak import GPU_STEPS, STEPS, run_switches

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--switches", type=int, default=500)
    parser.add_argument("--sample-every", type=int, default=100, help="switches between samples")
    parser.add_argument("--gpu", action="store_true", help="cycle through the GPU steps instead of CPU/Core ML")
    args = parser.parse_args()
    steps = GPU_STEPS if args.gpu else STEPS
    print(json.dumps(run_switches(args.switches, sample_every=args.sample_every, steps=steps), indent=2))
