"""The wire between a GPU session's parent side (process_session.py) and its child (process_child.py).

Two pipes and one shared file. Opening: the parent writes the model's bytes into the shared file, then
OP_OPEN and a JSON object of what else the child needs (its digest, task, input shapes and the
session's options); the child reads the model from
the file (checking its digest), opens its GpuSession, sizes the shared file to the slots and answers
REPLY_READY with JSON {report, layout} (layout null: no slots), or REPLY_ERROR with JSON {kind,
message}. A run of a slot: the parent writes the input into the slot and one byte, the slot's number;
the child answers that byte when the slot's output and stamps are written, or REPLY_ERROR. A model of
several inputs or outputs runs as one OP_RUN_ALL message of arrays (an .npz, read with
allow_pickle=False), answered by REPLY_OUTPUTS with the same. OP_CLOSE, or the request pipe closing,
ends the child. Nothing on the wire is unpickled: JSON and numpy's own format only.
"""

from __future__ import annotations

import io
import json
import mmap
import os
import struct
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

OP_RUN_ALL, OP_OPEN, OP_CLOSE = 0x10, 0x11, 0x12  # below 0x10: a slot's number
REPLY_READY, REPLY_OUTPUTS, REPLY_ERROR = 0x20, 0x21, 0x2E
_LENGTH = struct.Struct("<Q")
_ALIGN = 64
STAMPS = 3  # float64s per slot: the run's wall ms, the child's running thread's CPU ms, the child process's CPU ms


def read_exact(fd: int, n: int) -> bytes:
    """n bytes from fd; EOFError when the other side has gone."""
    parts, left = [], n
    while left:
        got = os.read(fd, left)
        if not got:
            raise EOFError
        parts.append(got)
        left -= len(got)
    return b"".join(parts)


def read_message(fd: int) -> bytes:
    (length,) = _LENGTH.unpack(read_exact(fd, _LENGTH.size))
    return read_exact(fd, length)


def send_json(fd: int, op: int, value: object) -> None:
    send(fd, op, json.dumps(value).encode())


def read_json(fd: int) -> Any:
    return json.loads(read_message(fd))


def arrays_bytes(arrays: Sequence[np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, *[np.asarray(a) for a in arrays])
    return buffer.getvalue()


def bytes_arrays(data: bytes) -> list[np.ndarray]:
    """The arrays of `arrays_bytes`, in order; object arrays refused (allow_pickle=False)."""
    with np.load(io.BytesIO(data), allow_pickle=False) as archive:
        return [archive[f"arr_{i}"] for i in range(len(archive.files))]


def send(fd: int, op: int, payload: bytes = b"") -> None:
    data = memoryview(bytes([op]) + _LENGTH.pack(len(payload)) + payload)
    while data:
        data = data[os.write(fd, data) :]


def _aligned(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


@dataclass(frozen=True)
class SlotLayout:
    """Where each slot's input, stamps and output lie in the shared file. Two slots: the child runs one
    input while the parent writes the next."""

    in_bytes: int  # the input buffer's bytes, as the session's run checks them
    out_count: int
    out_dtype: str
    slots: int = 2

    @property
    def _out_bytes(self) -> int:
        return self.out_count * np.dtype(self.out_dtype).itemsize

    @property
    def _slot_bytes(self) -> int:
        return _aligned(self.in_bytes) + _aligned(STAMPS * 8) + _aligned(self._out_bytes)

    @property
    def size(self) -> int:
        return self.slots * self._slot_bytes

    def views(self, shared: mmap.mmap) -> SlotViews:
        """Every slot's input bytes, stamps and output, as arrays over the shared map (both sides)."""
        stamps_at, out_at = _aligned(self.in_bytes), _aligned(self.in_bytes) + _aligned(STAMPS * 8)
        starts = [k * self._slot_bytes for k in range(self.slots)]
        return SlotViews(
            [np.frombuffer(shared, np.uint8, self.in_bytes, at) for at in starts],
            [np.frombuffer(shared, np.float64, STAMPS, at + stamps_at) for at in starts],
            [np.frombuffer(shared, np.dtype(self.out_dtype), self.out_count, at + out_at) for at in starts],
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SlotLayout:
        return cls(int(d["in_bytes"]), int(d["out_count"]), str(d["out_dtype"]), int(d["slots"]))


@dataclass(frozen=True)
class SlotViews:
    """Arrays over the shared map, by slot. Drop them before the map is closed (they export its buffer)."""

    inputs: list[np.ndarray]
    stamps: list[np.ndarray]
    outputs: list[np.ndarray]
