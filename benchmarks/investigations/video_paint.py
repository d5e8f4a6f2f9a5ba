"""What drawing one 1280x720 frame into a 3400x1912 view costs, three ways (offscreen Qt, one thread):

- Qt scales the BGR888 frame (a format conversion every paint),
- OpenCV converts and resizes to the view's size, Qt copies it unscaled,
- OpenCV converts to 32-bit BGRA once at the frame's size, Qt scales it on its 32-bit path (what the window does).

    QT_QPA_PLATFORM=offscreen python -m benchmarks.investigations.video_paint [--paints 30] [--rounds 3]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import cv2
import numpy as np
from PySide6.QtCore import QPoint, QRectF
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QApplication

from benchmarks.harness.rounds import alternate

W, H = 3400, 1912


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--paints", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    QApplication([])
    frame = np.random.default_rng(0).integers(0, 255, (720, 1280, 3)).astype(np.uint8)
    target = QImage(W, H, QImage.Format.Format_RGB32)  # what an xcb or offscreen backing store holds

    def qt_scales_bgr() -> None:
        image = QImage(frame.data, 1280, 720, frame.strides[0], QImage.Format.Format_BGR888)
        painter = QPainter(target)
        painter.drawImage(QRectF(0, 0, W, H), image)
        painter.end()

    def opencv_resizes() -> None:
        scaled = cv2.resize(cv2.cvtColor(frame, cv2.COLOR_BGR2BGRA), (W, H), interpolation=cv2.INTER_NEAREST)
        painter = QPainter(target)
        painter.drawImage(QPoint(0, 0), QImage(scaled.data, W, H, scaled.strides[0], QImage.Format.Format_RGB32))
        painter.end()

    def qt_scales_rgb32() -> None:
        bgra = cv2.cvtColor(frame, cv2.COLOR_BGR2BGRA)
        painter = QPainter(target)
        painter.drawImage(QRectF(0, 0, W, H), QImage(bgra.data, 1280, 720, bgra.strides[0], QImage.Format.Format_RGB32))
        painter.end()

    ways = {"Qt scales BGR888": qt_scales_bgr, "OpenCV resizes, Qt copies": opencv_resizes,
            "BGRA once, Qt scales RGB32": qt_scales_rgb32}  # fmt: skip

    def per_paint(paint: Callable[[], None]) -> tuple[float, float]:
        """(wall, CPU) seconds per paint over `--paints` paints."""
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(args.paints):
            paint()
        return (time.perf_counter() - wall) / args.paints, (time.process_time() - cpu) / args.paints

    def report(r: int, results: dict[str, tuple[float, float]]) -> None:
        for name, (wall, cpu) in results.items():
            print(f"round {r + 1}  {name:28} wall {wall * 1000:6.2f} ms  CPU {cpu * 1000:6.2f} ms per paint")

    legs = {name: lambda paint=paint: per_paint(paint) for name, paint in ways.items()}
    alternate(legs, args.rounds, rotate=False, report=report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
