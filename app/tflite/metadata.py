"""Read TFLite Support metadata ("TFLITE_METADATA", schema metadata_schema.fbs, identifier M001).

Models from TF Hub / Kaggle / Model Maker carry their normalisation and label
file here; the label file itself is zipped onto the end of the .tflite. Only
the fields this app uses are read, with bounds checks, because the bytes are
untrusted.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from dataclasses import dataclass, field

import flatbuffers
from flatbuffers.table import Table

from app.errors import ModelError

METADATA_NAME = "TFLITE_METADATA"
TENSOR_AXIS_LABELS = 2
TENSOR_VALUE_LABELS = 3  # a label per value of the tensor: a detector's class indices
_NORMALIZATION_OPTIONS = 1  # ProcessUnitOptions union member
_MAX_ITEMS = 4096
_MAX_LABEL_ZIP_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class ClassifierMetadata:
    name: str = ""
    description: str = ""
    author: str = ""
    license: str = ""
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None
    label_files: list[str] = field(default_factory=list)  # output TENSOR_AXIS_LABELS files, first = default
    output_names: tuple[str, ...] = ()  # the output tensors' names in the metadata (its writers' roles)


class _T:
    """A flatbuffer table with slot-numbered accessors (slot = field order in the .fbs)."""

    def __init__(self, buf: bytes | bytearray, pos: int) -> None:
        self.t = Table(bytearray(buf) if not isinstance(buf, bytearray) else buf, pos)

    def _o(self, slot: int) -> int:
        return self.t.Offset(4 + 2 * slot)

    def string(self, slot: int) -> str:
        o = self._o(slot)
        return self.t.String(o + self.t.Pos).decode("utf-8", errors="replace") if o else ""

    def byte(self, slot: int) -> int:
        o = self._o(slot)
        return self.t.Get(flatbuffers.number_types.Int8Flags, o + self.t.Pos) if o else 0

    def tables(self, slot: int) -> list[_T]:
        o = self._o(slot)
        if not o:
            return []
        n = self.t.VectorLen(o)
        if n > _MAX_ITEMS:
            raise ValueError("vector too long")
        start = self.t.Vector(o)
        return [_T(self.t.Bytes, self.t.Indirect(start + 4 * i)) for i in range(n)]

    def floats(self, slot: int) -> tuple[float, ...]:
        o = self._o(slot)
        if not o:
            return ()
        n = self.t.VectorLen(o)
        if n > _MAX_ITEMS:
            raise ValueError("vector too long")
        start = self.t.Vector(o)
        return tuple(self.t.Get(flatbuffers.number_types.Float32Flags, start + 4 * i) for i in range(n))

    def union(self, type_slot: int) -> tuple[int, _T | None]:
        kind = (
            self.t.Get(flatbuffers.number_types.Uint8Flags, self._o(type_slot) + self.t.Pos)
            if self._o(type_slot)
            else 0
        )
        o = self._o(type_slot + 1)
        if not o:
            return kind, None
        inner = Table(bytearray(), 0)
        self.t.Union(inner, o)
        return kind, _T(self.t.Bytes, inner.Pos)


def parse_metadata(data: bytes) -> ClassifierMetadata:
    """Parse a ModelMetadata buffer; raise ModelError if it is malformed."""
    try:
        buf = bytearray(data)
        root = _T(buf, flatbuffers.encode.Get(flatbuffers.packer.uoffset, buf, 0))
        mean = std = None
        label_files: list[str] = []
        output_names: tuple[str, ...] = ()
        subgraphs = root.tables(3)
        if subgraphs:
            sg = subgraphs[0]
            inputs, outputs = sg.tables(2), sg.tables(3)
            for unit in inputs[0].tables(4) if inputs else []:
                kind, options = unit.union(0)
                if kind == _NORMALIZATION_OPTIONS and options is not None:
                    mean, std = options.floats(0), options.floats(1)
            # The labels of a detector sit on its classes output (the 2nd), not the first: every output's files.
            for output in outputs:
                for f in output.tables(6):
                    if f.byte(2) in (TENSOR_AXIS_LABELS, TENSOR_VALUE_LABELS) and f.string(0):
                        label_files.append(f.string(0))
            output_names = tuple(output.string(0) for output in outputs)
        return ClassifierMetadata(
            name=root.string(0),
            description=root.string(1),
            author=root.string(4),
            license=root.string(5),
            mean=mean or None,
            std=std or None,
            label_files=label_files,
            output_names=output_names,
        )
    except (IndexError, ValueError, TypeError, OverflowError, UnicodeError, struct.error) as exc:
        # struct.error: an offset pointing past the end of the buffer (found by mutating real metadata).
        raise ModelError(f"model metadata is corrupt ({type(exc).__name__})") from None


def read_associated_file(model_bytes: bytes, name: str) -> bytes | None:
    """Return a file zipped onto the end of the model, or None when it is not there."""
    try:
        with zipfile.ZipFile(io.BytesIO(model_bytes)) as archive:
            info = archive.getinfo(name)
            if info.file_size > _MAX_LABEL_ZIP_BYTES:
                return None
            return archive.read(info)
    except (zipfile.BadZipFile, KeyError, OSError, EOFError, ValueError, NotImplementedError, RuntimeError,
            zlib.error, struct.error):  # fmt: skip
        return None
