"""Inputs for what is not the frame: every input of a model that takes no image (audio, sequences, text,
embeddings), and the extra inputs of an image model. From the user's `--inputs FILE.npz` when given,
else from a seeded generator per input (its dtype, its fixed shape, and a value range from its
quantization or its type), so runs are repeatable and say which feeder they used.
"""

from __future__ import annotations

import math
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.errors import ImageError
from app.model.spec import ModelSpec
from app.tflite.file import TensorInfo

SEED = 0
POOL = 8  # distinct generated samples, fed in turn: varied data without generating on every inference
_POOL_BYTES = 64 << 20  # ... while they fit in this; a larger input gets one sample
_MAX_NPZ_BYTES = 1 << 30
_INT_RANGE = 100  # unquantized integer inputs (token ids, indices): [0, 100) stays inside any vocabulary seen


@dataclass(frozen=True)
class FeedFacts:
    """Which feeder a run used, for its output: 'generated (seed 0)' or 'FILE.npz'."""

    source: str
    ranges: tuple[str, ...]  # per generated input: its name and value range, e.g. "waveform [-1, 1) float32"

    def describe(self) -> str:
        return self.source + (f": {'; '.join(self.ranges)}" if self.ranges else "")

    def to_dict(self) -> dict[str, object]:
        return {"source": self.source, "inputs": list(self.ranges)}


def value_range(t: TensorInfo) -> tuple[float, float, str]:
    """(low, high, why) of the generated values: a float input in [-1, 1) (normalised signals and
    embeddings), a quantized one over its whole integer range (whatever real values its scale means),
    another integer in [0, 100)."""
    dtype = np.dtype(t.dtype)
    if dtype.kind == "f":
        return -1.0, 1.0, "float"
    if dtype.kind == "b":
        return 0, 2, "bool"
    if t.scale is not None and dtype.kind in "iu":
        info = np.iinfo(dtype)
        return float(info.min), float(info.max) + 1, "quantization"
    if dtype.kind in "iu":
        return 0, _INT_RANGE, "integer"
    raise ImageError(f"input '{t.name}' is {t.dtype}: no values can be generated for it; give them with --inputs")


def generated(t: TensorInfo, rng: np.random.Generator) -> np.ndarray:
    low, high, _ = value_range(t)
    dtype = np.dtype(t.dtype)
    if dtype.kind == "f":
        return rng.uniform(low, high, t.shape).astype(dtype)
    if dtype.kind == "b":
        return rng.integers(0, 2, t.shape).astype(bool)
    return rng.integers(int(low), int(high), t.shape, dtype=np.int64).astype(dtype)


def read_inputs_file(path: Path, inputs: tuple[TensorInfo, ...], wanted: list[int]) -> dict[int, np.ndarray]:
    """The arrays of an .npz for the inputs `wanted` (indices): by input name, else `arr_<k>` in model
    order; each must have the input's shape, and a dtype that converts to the input's without loss."""
    try:
        if path.stat().st_size > _MAX_NPZ_BYTES:
            raise ImageError(f"inputs file {path} is larger than {_MAX_NPZ_BYTES >> 20} MiB")
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except FileNotFoundError:
        raise ImageError(f"inputs file not found: {path}") from None
    except IsADirectoryError:
        raise ImageError(f"inputs path is a folder, not an .npz file: {path}") from None
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        raise ImageError(f"cannot read inputs file {path} as .npz: {str(exc).splitlines()[0] if str(exc) else ''}"
                         .rstrip(": ")) from None  # fmt: skip
    found: dict[int, np.ndarray] = {}
    for k, i in enumerate(wanted):
        t = inputs[i]
        array = arrays.get(t.name, arrays.get(f"arr_{k}"))
        if array is None:
            have = ", ".join(sorted(arrays)) or "nothing"
            raise ImageError(
                f"inputs file {path.name} has no array for input '{t.name}' (nor arr_{k}); it holds {have}"
            )
        if tuple(array.shape) != t.shape:
            raise ImageError(
                f"inputs file {path.name}: '{t.name}' is {list(array.shape)}, the input takes {list(t.shape)}"
            )
        if not np.can_cast(array.dtype, np.dtype(t.dtype), casting="same_kind"):
            raise ImageError(f"inputs file {path.name}: '{t.name}' is {array.dtype}, the input takes {t.dtype}")
        found[i] = np.ascontiguousarray(array.astype(t.dtype, copy=False))
    return found


class InputFeeder:
    """Every input but the image, for each inference in turn (a pool of seeded samples, or the file's)."""

    def __init__(self, spec: ModelSpec, seed: int = SEED) -> None:
        inputs = spec.inputs
        self._image = spec.image_input
        self._wanted = [i for i in range(len(inputs)) if i != self._image]
        self._count = len(inputs)
        path = spec.options.inputs_file
        if path is not None and self._wanted:
            fixed = read_inputs_file(path, inputs, self._wanted)
            self._pool = [fixed]
            self.facts = FeedFacts(path.name, ())
        else:
            rng = np.random.default_rng(seed)
            size = sum(math.prod(inputs[i].shape) * np.dtype(inputs[i].dtype).itemsize for i in self._wanted)
            count = POOL if self._wanted and size * POOL <= _POOL_BYTES else 1
            self._pool = [{i: generated(inputs[i], rng) for i in self._wanted} for _ in range(count)]
            ranges = tuple(_range_text(inputs[i]) for i in self._wanted)
            self.facts = FeedFacts(f"generated (seed {seed})" if self._wanted else "none", ranges)
        self._next = 0

    @property
    def needed(self) -> bool:
        return bool(self._wanted)

    def inputs(self, image: np.ndarray | None, index: int | None = None) -> list[np.ndarray]:
        """One inference's inputs in model order, `image` in the image input's place. `index` (the
        frame's) picks the sample, so two sessions fed the same frames get the same inputs whichever
        frames each skipped (A/B); without it, the samples in turn."""
        if index is None:
            index = self._next
            self._next += 1
        sample = self._pool[index % len(self._pool)]
        out: list[np.ndarray] = []
        for i in range(self._count):
            if i == self._image:
                if image is None:
                    raise ValueError("this model's image input needs a frame")
                out.append(image)
            else:
                out.append(sample[i])
        return out


def _range_text(t: TensorInfo) -> str:
    low, high, why = value_range(t)
    shown = f"[{low:g}, {high:g})" if math.isfinite(low) else why
    return f"{t.name} {shown} {t.dtype} ({why})"
