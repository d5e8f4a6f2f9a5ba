"""The neighbour process of benchmarks/investigations/decode_contention.py, busy for SECONDS: "decode"
reads the clip with OpenCV over and over (what the capture thread does), "spin" runs pure Python.

    python -m benchmarks.investigations.decode_contention_child decode|spin SECONDS [CLIP]
"""

from __future__ import annotations

import sys
import time


def main(argv: list[str] | None = None) -> int:
    kind, seconds, *clip = argv or sys.argv[1:]
    end = time.time() + float(seconds)
    if kind == "decode":
        import cv2

        while time.time() < end:
            capture = cv2.VideoCapture(clip[0])
            while time.time() < end and capture.read()[0]:
                pass
    else:
        while time.time() < end:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
