"""Draw the app icon with numpy and write it as PNG, ICO (Windows) and ICNS (macOS), no other tool needed.

    python packaging/make_icon.py        # rewrites packaging/icon.png, icon.ico, icon.icns

The icon: a chip (the accelerator) seen through a magnifying lens (the "scope"), on a dark tile.
The files are committed; run this only to change the drawing.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SUPERSAMPLE = 4


def _rounded_rect(x: np.ndarray, y: np.ndarray, x0: float, y0: float, x1: float, y1: float, r: float) -> np.ndarray:
    cx = np.clip(x, x0 + r, x1 - r)
    cy = np.clip(y, y0 + r, y1 - r)
    return (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1) & ((x - cx) ** 2 + (y - cy) ** 2 <= r * r)


def draw(size: int) -> np.ndarray:
    """RGBA uint8 image of `size` x `size`, drawn in unit coordinates and supersampled."""
    n = size * SUPERSAMPLE
    y, x = (np.mgrid[0:n, 0:n] + 0.5) / n
    rgba = np.zeros((n, n, 4), np.float64)

    def paint(mask: np.ndarray, colour: tuple[int, int, int], alpha: float = 1.0) -> None:
        a = mask.astype(np.float64) * alpha
        for c in range(3):
            rgba[..., c] = rgba[..., c] * (1 - a) + colour[c] / 255 * a
        rgba[..., 3] = rgba[..., 3] * (1 - a) + a

    paint(_rounded_rect(x, y, 0.04, 0.04, 0.96, 0.96, 0.2), (24, 36, 56))  # tile
    # the chip: body, pins on each side
    paint(_rounded_rect(x, y, 0.22, 0.22, 0.62, 0.62, 0.05), (76, 175, 80))
    for i in range(4):
        p = 0.27 + i * 0.09
        paint(_rounded_rect(x, y, p, 0.13, p + 0.04, 0.22, 0.01), (165, 214, 167))
        paint(_rounded_rect(x, y, p, 0.62, p + 0.04, 0.71, 0.01), (165, 214, 167))
        paint(_rounded_rect(x, y, 0.13, p, 0.22, p + 0.04, 0.01), (165, 214, 167))
        paint(_rounded_rect(x, y, 0.62, p, 0.71, p + 0.04, 0.01), (165, 214, 167))
    paint(_rounded_rect(x, y, 0.32, 0.32, 0.52, 0.52, 0.03), (27, 94, 32))  # die
    # the lens over the chip's corner, and its handle
    d = np.hypot(x - 0.56, y - 0.56)
    paint(d <= 0.2, (144, 202, 249), 0.35)
    paint((d <= 0.2) & (d >= 0.16), (255, 193, 7))
    t = np.clip(((x - 0.70) + (y - 0.70)) / 2, 0, 0.16)
    handle = np.hypot(x - 0.70 - t, y - 0.70 - t) <= 0.045
    paint(handle & (x + y >= 1.40), (255, 193, 7))

    img = rgba.reshape(size, SUPERSAMPLE, size, SUPERSAMPLE, 4).mean(axis=(1, 3))
    # straight (not premultiplied) alpha for PNG
    alpha = img[..., 3:4]
    img[..., :3] = np.where(alpha > 0, img[..., :3] / np.maximum(alpha, 1e-9), 0)
    return np.round(np.clip(img, 0, 1) * 255).astype(np.uint8)


def png_bytes(img: np.ndarray) -> bytes:
    h, w, _ = img.shape
    raw = b"".join(b"\x00" + img[row].tobytes() for row in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def ico_bytes(pngs: dict[int, bytes]) -> bytes:
    """ICO with PNG-compressed entries (Windows Vista and later read these)."""
    sizes = sorted(pngs)
    out = struct.pack("<HHH", 0, 1, len(sizes))
    offset = 6 + 16 * len(sizes)
    for s in sizes:
        dim = 0 if s >= 256 else s
        out += struct.pack("<BBBBHHII", dim, dim, 0, 0, 1, 32, len(pngs[s]), offset)
        offset += len(pngs[s])
    return out + b"".join(pngs[s] for s in sizes)


ICNS_TYPES = {16: b"icp4", 32: b"icp5", 64: b"icp6", 128: b"ic07", 256: b"ic08", 512: b"ic09", 1024: b"ic10"}


def icns_bytes(pngs: dict[int, bytes]) -> bytes:
    """ICNS with PNG entries (macOS 10.7 and later)."""
    body = b"".join(ICNS_TYPES[s] + struct.pack(">I", 8 + len(pngs[s])) + pngs[s] for s in sorted(pngs))
    return b"icns" + struct.pack(">I", 8 + len(body)) + body


def main() -> None:
    pngs = {s: png_bytes(draw(s)) for s in (16, 32, 48, 64, 128, 256, 512)}
    (HERE / "icon.png").write_bytes(pngs[256])
    (HERE / "icon.ico").write_bytes(ico_bytes({s: pngs[s] for s in (16, 32, 48, 64, 128, 256)}))
    (HERE / "icon.icns").write_bytes(icns_bytes({s: pngs[s] for s in (16, 32, 64, 128, 256, 512)}))
    for name in ("icon.png", "icon.ico", "icon.icns"):
        print(f"{HERE / name}: {(HERE / name).stat().st_size} bytes")


if __name__ == "__main__":
    main()
