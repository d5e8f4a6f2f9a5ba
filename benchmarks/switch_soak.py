"""500 delegate/model switches on a live pipeline: RSS, threads, file descriptors before/after.

    python benchmarks/switch_soak.py [--switches 500] [--sample-every 100]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.switch_soak import run_switches

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--switches", type=int, default=500)
    parser.add_argument("--sample-every", type=int, default=100, help="switches between samples")
    args = parser.parse_args()
    print(json.dumps(run_switches(args.switches, sample_every=args.sample_every), indent=2))
