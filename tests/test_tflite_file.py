"""The pure-Python flatbuffer reading that guards the native runtime."""

import random
from pathlib import Path

import pytest

from app.errors import ModelError
from app.tflite_file import read_tflite
from app.tflite_metadata import parse_metadata, read_associated_file
from tests.conftest import TEST_MODELS


def test_reads_io_ops_and_metadata_of_a_real_third_party_model(coral: Path):
    info = read_tflite((coral / "mobilenet_v1_0.25_128_quant.tflite").read_bytes())
    (inp,), (out,) = info.inputs, info.outputs
    assert (inp.shape, inp.dtype, inp.scale, inp.zero_point) == ((1, 128, 128, 3), "uint8", 0.0078125, 128)
    assert (out.shape, out.dtype, out.scale, out.zero_point) == ((1, 1001), "uint8", 0.00390625, 0)
    assert len(info.op_types) == 31
    assert info.op_types[0] == "CONV_2D" and info.op_types[-1] == "SOFTMAX"
    assert "TFLITE_METADATA" in info.metadata


def test_reads_tflite_support_metadata_and_zipped_labels(coral: Path):
    data = (coral / "mobilenet_v2_1.0_224_quant.tflite").read_bytes()
    meta = parse_metadata(read_tflite(data).metadata["TFLITE_METADATA"])
    assert (meta.mean, meta.std) == ((127.5,), (127.5,))
    assert meta.label_files == ["imagenet_labels.txt"]
    labels = read_associated_file(data, "imagenet_labels.txt")
    assert labels is not None and labels.splitlines()[:2] == [b"background", b"tench, Tinca tinca"]
    assert read_associated_file(data, "missing.txt") is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty"),
        (b"GIF89a not a model at all", "TFL3"),
        (b"\x10\x00\x00\x00TFL3", "truncated"),
        (b"\xff\xff\xff\x7fTFL3" + bytes(64), "truncated"),
    ],
)
def test_non_models_are_refused_with_the_reason(data: bytes, message: str):
    with pytest.raises(ModelError, match=message):
        read_tflite(data)


def test_every_truncation_of_a_small_model_is_refused_or_parses_cleanly():
    """No truncation point may raise anything but ModelError."""
    data = (TEST_MODELS / "dynamic_batch_logits.tflite").read_bytes()
    outcomes = set()
    for cut in range(0, len(data), 7):
        try:
            read_tflite(data[:cut])
            outcomes.add("parsed")
        except ModelError:
            outcomes.add("refused")
    assert "refused" in outcomes


def test_seeded_bit_flips_never_raise_anything_but_model_error():
    data = (TEST_MODELS / "detector_like.tflite").read_bytes()
    rng = random.Random(1234)
    for _ in range(300):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            mutated[rng.randrange(len(mutated))] ^= 1 << rng.randrange(8)
        try:
            read_tflite(bytes(mutated))
        except ModelError:
            pass
