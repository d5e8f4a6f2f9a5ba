"""Read a legacy (pre-zip) ``torch.save`` state_dict into numpy arrays, without torch.

File layout: pickles of the magic number, the protocol version and the system info,
then the state_dict pickle (storages referenced by persistent id), then a pickle of
the storage keys in file order, then each storage as an int64 little-endian element
count followed by its raw bytes.

The unpickler only resolves the globals such a file needs and maps them to plain
Python/numpy objects, so loading runs no code from the file.
"""

from __future__ import annotations

import collections
import io
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001

_STORAGE_DTYPES: dict[str, np.dtype] = {
    "DoubleStorage": np.dtype("<f8"),
    "FloatStorage": np.dtype("<f4"),
    "HalfStorage": np.dtype("<f2"),
    "LongStorage": np.dtype("<i8"),
    "IntStorage": np.dtype("<i4"),
    "ShortStorage": np.dtype("<i2"),
    "CharStorage": np.dtype("i1"),
    "ByteStorage": np.dtype("u1"),
    "BoolStorage": np.dtype("?"),
}


@dataclass(frozen=True)
class _StorageType:
    dtype: np.dtype


@dataclass
class _Storage:
    """A root storage; its data is only known once the pickles have been read."""

    dtype: np.dtype
    numel: int
    data: np.ndarray | None = None


@dataclass(frozen=True)
class _StorageView:
    storage: _Storage
    offset: int  # in elements


@dataclass(frozen=True)
class _PendingTensor:
    view: _StorageView
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]

    def materialize(self) -> np.ndarray:
        data = self.view.storage.data
        if data is None:
            raise ValueError("tensor refers to a storage missing from the file")
        start = self.view.offset + self.offset
        # as_strided does no bounds checks: refuse anything that could reach outside the storage.
        if start < 0 or min((*self.shape, *self.stride), default=0) < 0:
            raise ValueError("tensor has a negative offset, size or stride")
        last = start + sum((n - 1) * s for n, s in zip(self.shape, self.stride, strict=True))
        if 0 not in self.shape and last >= data.size:
            raise ValueError("tensor extends past its storage")
        strides = tuple(s * data.itemsize for s in self.stride)
        view = np.lib.stride_tricks.as_strided(data[start:], self.shape, strides)
        return np.array(view, order="C")  # contiguous copy, detached from the file buffer


def _rebuild_tensor(
    view: _StorageView, offset: int, shape: tuple[int, ...], stride: tuple[int, ...], *_: object
) -> _PendingTensor:
    # Covers _rebuild_tensor and _rebuild_tensor_v2 (requires_grad, hooks, metadata ignored).
    return _PendingTensor(view, offset, tuple(shape), tuple(stride))


class _RestrictedUnpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, storages: dict[str, _Storage]) -> None:
        super().__init__(file)
        self._storages = storages

    def find_class(self, module: str, name: str) -> object:
        if (module, name) == ("collections", "OrderedDict"):
            return collections.OrderedDict
        if module == "torch._utils" and name in ("_rebuild_tensor", "_rebuild_tensor_v2"):
            return _rebuild_tensor
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(_STORAGE_DTYPES[name])
        raise pickle.UnpicklingError(f"global {module}.{name} is not allowed")

    def persistent_load(self, pid: object) -> _StorageView:
        if not (isinstance(pid, tuple) and len(pid) == 6 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")
        _, storage_type, key, _location, numel, view_metadata = pid
        if not isinstance(storage_type, _StorageType):
            raise pickle.UnpicklingError(f"not a storage type: {storage_type!r}")
        storage = self._storages.setdefault(key, _Storage(storage_type.dtype, numel))
        if view_metadata is None:
            return _StorageView(storage, 0)
        _view_key, offset, _view_size = view_metadata
        return _StorageView(storage, offset)


def _read_storage(f: io.BytesIO, storage: _Storage) -> None:
    header = f.read(8)
    numel = int.from_bytes(header, "little", signed=True) if len(header) == 8 else -1
    if numel != storage.numel:
        raise ValueError(f"storage holds {numel} elements, its pickle says {storage.numel}")
    nbytes = numel * storage.dtype.itemsize
    raw = f.read(nbytes)
    if len(raw) != nbytes:
        raise ValueError("file ends inside a storage")
    storage.data = np.frombuffer(raw, dtype=storage.dtype)


def load_state_dict(path: Path) -> Mapping[str, np.ndarray]:
    """Return the tensors of a legacy torch state_dict file, by key, in file order."""
    data = Path(path).read_bytes()
    if data.startswith(b"PK"):
        raise ValueError(f"{path}: a zip-format torch file; only the legacy format is supported")
    f = io.BytesIO(data)
    storages: dict[str, _Storage] = {}

    def unpickle() -> object:
        return _RestrictedUnpickler(f, storages).load()

    if unpickle() != MAGIC_NUMBER:
        raise ValueError(f"{path}: not a legacy torch file (bad magic number)")
    if unpickle() != PROTOCOL_VERSION:
        raise ValueError(f"{path}: unsupported torch protocol version")
    sys_info = unpickle()
    if not (isinstance(sys_info, dict) and sys_info.get("little_endian")):
        raise ValueError(f"{path}: only little-endian files are supported")
    state = unpickle()
    keys = unpickle()
    if not isinstance(state, dict) or not isinstance(keys, list):
        raise ValueError(f"{path}: not a state_dict file")
    if set(keys) != set(storages):
        raise ValueError(f"{path}: storage list does not match the tensors' storages")
    for key in keys:
        _read_storage(f, storages[key])
    if not all(isinstance(value, _PendingTensor) for value in state.values()):
        raise ValueError(f"{path}: state_dict holds values that are not tensors")
    return {name: value.materialize() for name, value in state.items()}
