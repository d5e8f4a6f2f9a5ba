"""500 delegate/model switches on a live pipeline: RSS, threads, file descriptors before/after.

    python benchmarks/switch_soak.py [--switches 500]
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
    print(json.dumps(run_switches(parser.parse_args().switches), indent=2))
