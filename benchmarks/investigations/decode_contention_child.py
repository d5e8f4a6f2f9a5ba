"""The neighbour process of benchmarks/investigations/decode_contention.py, busy for SECONDS: "decode"
reads the clip with OpenCV over and over (what the capture thread does), "spin" runs pure Python.

    python -m benchmarks.investigations.decode_contention_child decode|spin SECONDS [CLIP]
"""

from __future__ import annotations

import argparse
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=("decode", "spin"))
    parser.add_argument("seconds", type=float)
    parser.add_argument("clip", nargs="?", help="the video file to decode")
    args = parser.parse_args(argv)
    end = time.time() + args.seconds
    if args.kind == "decode":
        import cv2

        while time.time() < end:
            capture = cv2.VideoCapture(args.clip)
            while time.time() < end and capture.read()[0]:
                pass
    else:
        while time.time() < end:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
