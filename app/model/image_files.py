"""Reading still images from untrusted files."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from app.errors import ImageError
from app.system.native_log import capture_stderr

MAX_IMAGE_BYTES = 256 * 1024 * 1024


def read_image(path: Path) -> np.ndarray:
    """Return the image as BGR uint8, or raise ImageError saying why it cannot be read."""
    try:
        if path.is_dir():
            raise ImageError(f"image path is a folder: {path}")
        size = path.stat().st_size
        if size == 0:
            raise ImageError(f"image file is empty: {path}")
        if size > MAX_IMAGE_BYTES:
            raise ImageError(f"image file is {size} bytes, too large: {path}")
        # imdecode from bytes, not imread: works with any path encoding and never leaves the file open.
        data = np.fromfile(path, dtype=np.uint8)
    except FileNotFoundError:
        raise ImageError(f"image not found: {path}") from None
    except PermissionError:
        raise ImageError(f"no permission to read image: {path}") from None
    except OSError as exc:
        raise ImageError(f"cannot read image {path}: {exc.strerror or exc}") from None
    with capture_stderr():  # libjpeg/libpng warnings about damaged files go to fd 2
        try:
            image = cv2.imdecode(data, cv2.IMREAD_COLOR)
        except cv2.error:
            image = None
    if image is None or image.size == 0:
        raise ImageError(f"not a readable image (unknown format or damaged file): {path}")
    return image
