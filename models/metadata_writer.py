"""Write TFLite Support metadata without the tflite-support package (the app reads it: app/tflite/metadata.py).

Does what ``tflite_support.metadata.MetadataPopulator`` does for an image classifier:
a ``ModelMetadata`` flatbuffer (tensorflow_lite_support/metadata/metadata_schema.fbs,
file identifier "M001") goes into a new model buffer that a model ``metadata`` entry
named "TFLITE_METADATA" points to, and the associated files are appended to the
.tflite as a stored ZIP archive. Field slots below are the schema's field order.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass

import flatbuffers
import numpy as np
from ai_edge_litert import schema_py_generated as tfl

METADATA_NAME = "TFLITE_METADATA"
METADATA_IDENTIFIER = b"M001"
MODEL_IDENTIFIER = b"TFL3"
MIN_PARSER_VERSION = "1.0.0"  # every field used here exists since schema 1.0.0

# Enum and union values from metadata_schema.fbs.
TENSOR_AXIS_LABELS = 2
COLOR_SPACE_RGB = 1
CONTENT_FEATURE_PROPERTIES = 1
CONTENT_IMAGE_PROPERTIES = 2
PROCESS_UNIT_NORMALIZATION = 1

ZIP_TIMESTAMP = (1980, 1, 1, 0, 0, 0)  # fixed so that rebuilds are byte-identical


@dataclass(frozen=True)
class ClassifierMetadata:
    name: str
    description: str
    version: str
    author: str
    license: str
    mean: float
    std: float
    labels_file: str
    num_classes: int
    float_io: bool  # Stats (value ranges) only for float32 I/O, as tflite-support writes them


# ---------------------------------------------------------------- writing


def _table(b: flatbuffers.Builder, num_slots: int, offsets: dict[int, int], bytes_: dict[int, int]) -> int:
    """One table: `offsets` maps slot -> child offset, `bytes_` slot -> byte/enum value."""
    b.StartObject(num_slots)
    for slot, value in bytes_.items():
        b.PrependUint8Slot(slot, value, 0)
    for slot, offset in offsets.items():
        b.PrependUOffsetTRelativeSlot(slot, offset, 0)
    return b.EndObject()


def _offsets(b: flatbuffers.Builder, items: list[int]) -> int:
    b.StartVector(4, len(items), 4)
    for offset in reversed(items):
        b.PrependUOffsetTRelative(offset)
    return b.EndVector()


def _floats(b: flatbuffers.Builder, values: list[float]) -> int:
    return b.CreateNumpyVector(np.asarray(values, dtype="<f4"))


def _stats(b: flatbuffers.Builder, low: float, high: float) -> int:
    # Stats: max(0), min(1)
    return _table(b, 2, {0: _floats(b, [high]), 1: _floats(b, [low])}, {})


def _input_tensor(b: flatbuffers.Builder, meta: ClassifierMetadata) -> int:
    # NormalizationOptions: mean(0), std(1); ProcessUnit: options_type(0), options(1)
    norm = _table(b, 2, {0: _floats(b, [meta.mean]), 1: _floats(b, [meta.std])}, {})
    unit = _table(b, 2, {1: norm}, {0: PROCESS_UNIT_NORMALIZATION})
    # ImageProperties: color_space(0); Content: content_properties_type(0), content_properties(1)
    image = _table(b, 2, {}, {0: COLOR_SPACE_RGB})
    content = _table(b, 3, {1: image}, {0: CONTENT_IMAGE_PROPERTIES})
    # TensorMetadata: name(0) description(1) dimension_names(2) content(3) process_units(4)
    # stats(5) associated_files(6)
    fields = {
        0: b.CreateString("image"),
        1: b.CreateString("Input image to be classified."),
        3: content,
        4: _offsets(b, [unit]),
    }
    if meta.float_io:
        fields[5] = _stats(b, (0.0 - meta.mean) / meta.std, (255.0 - meta.mean) / meta.std)
    return _table(b, 7, fields, {})


def _output_tensor(b: flatbuffers.Builder, meta: ClassifierMetadata) -> int:
    # AssociatedFile: name(0) description(1) type(2) locale(3)
    labels = _table(
        b,
        4,
        {0: b.CreateString(meta.labels_file), 1: b.CreateString("Labels for categories that the model can recognize.")},
        {2: TENSOR_AXIS_LABELS},
    )
    features = _table(b, 0, {}, {})
    content = _table(b, 3, {1: features}, {0: CONTENT_FEATURE_PROPERTIES})
    fields = {
        0: b.CreateString("probability"),
        1: b.CreateString(f"Probabilities of the {meta.num_classes} labels respectively."),
        3: content,
        6: _offsets(b, [labels]),
    }
    if meta.float_io:
        fields[5] = _stats(b, 0.0, 1.0)
    return _table(b, 7, fields, {})


def build_metadata(meta: ClassifierMetadata) -> bytes:
    """Serialise a ModelMetadata flatbuffer for a one-input, one-output image classifier."""
    b = flatbuffers.Builder(1024)
    inputs = _offsets(b, [_input_tensor(b, meta)])
    outputs = _offsets(b, [_output_tensor(b, meta)])
    # SubGraphMetadata: name(0) description(1) input_tensor_metadata(2) output_tensor_metadata(3)
    subgraph = _table(b, 7, {2: inputs, 3: outputs}, {})
    # ModelMetadata: name(0) description(1) version(2) subgraph_metadata(3) author(4)
    # license(5) associated_files(6) min_parser_version(7)
    fields = {
        0: b.CreateString(meta.name),
        1: b.CreateString(meta.description),
        2: b.CreateString(meta.version),
        3: _offsets(b, [subgraph]),
        4: b.CreateString(meta.author),
        5: b.CreateString(meta.license),
        7: b.CreateString(MIN_PARSER_VERSION),
    }
    b.Finish(_table(b, 8, fields, {}), file_identifier=METADATA_IDENTIFIER)
    return bytes(b.Output())


class _AlignedBuilder(flatbuffers.Builder):
    """Keeps byte vectors (tensor data) 16-byte aligned, as the TFLite schema asks
    (`data:[ubyte] (force_align: 16)`); the generated Python code only aligns to 1."""

    def StartVector(self, elemSize: int, numElems: int, alignment: int) -> int:
        return super().StartVector(elemSize, numElems, 16 if elemSize == 1 else alignment)


def _zip_append(data: bytes, files: dict[str, bytes]) -> bytes:
    """Append `files` as a stored ZIP; offsets are absolute, as zipfile's append mode writes them."""
    buffer = io.BytesIO(data)
    with zipfile.ZipFile(buffer, "a", compression=zipfile.ZIP_STORED) as archive:
        for name, content in files.items():
            info = zipfile.ZipInfo(name, date_time=ZIP_TIMESTAMP)
            info.create_system = 3  # fixed, else it depends on the building OS
            info.external_attr = 0o644 << 16
            archive.writestr(info, content)
    return buffer.getvalue()


def populate(model: bytes, metadata: bytes, files: dict[str, bytes]) -> bytes:
    """Return `model` with `metadata` in a TFLITE_METADATA buffer and `files` zipped at the end."""
    obj = tfl.ModelT.InitFromObj(tfl.Model.GetRootAs(model, 0))
    buffer = tfl.BufferT()
    buffer.data = np.frombuffer(metadata, dtype=np.uint8)
    obj.buffers.append(buffer)
    entry = tfl.MetadataT()
    entry.name = METADATA_NAME
    entry.buffer = len(obj.buffers) - 1
    kept = [m for m in obj.metadata or [] if _text(m.name) != METADATA_NAME]
    obj.metadata = [*kept, entry]
    builder = _AlignedBuilder(len(model) + len(metadata) + 4096)
    builder.Finish(obj.Pack(builder), file_identifier=MODEL_IDENTIFIER)
    return _zip_append(bytes(builder.Output()), files)


def _text(value: str | bytes | None) -> str:
    return value.decode() if isinstance(value, bytes) else value or ""
