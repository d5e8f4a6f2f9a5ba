"""The pure-Python flatbuffer reading that guards the native runtime."""

import random
from pathlib import Path

import pytest

from app.errors import ModelError
from app.tflite.file import read_tflite
from app.tflite.metadata import parse_metadata, read_associated_file
from tests.helpers.paths import TEST_MODELS


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
    original = read_tflite(data)
    rng = random.Random(1234)
    refused = unchanged = changed = 0
    for _ in range(300):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            mutated[rng.randrange(len(mutated))] ^= 1 << rng.randrange(8)
        try:
            info = read_tflite(bytes(mutated))
        except ModelError:
            refused += 1
            continue
        if info == original:
            unchanged += 1  # the flips fell in bytes the reader does not read (weights)
        else:
            changed += 1
    # Measured: 112 refused, 112 parsed unchanged, 76 parsed as another model. A reader that refused
    # everything, or nothing, or read none of the flipped fields, fails here.
    assert refused >= 75 and unchanged >= 75 and changed >= 50, (refused, unchanged, changed)


def _mutations(data: bytes, seed: int, cases: int, start: int = 0, end: int | None = None):
    """Seeded structure-blind mutations inside data[start:end]: bit flips and random bytes."""
    rng = random.Random(seed)
    end = len(data) if end is None else end
    for _ in range(cases):
        mutated = bytearray(data)
        for _ in range(rng.choice((1, 2, 4, 8))):
            i = rng.randrange(start, end)
            mutated[i] = mutated[i] ^ (1 << rng.randrange(8)) if rng.random() < 0.5 else rng.randrange(256)
        yield bytes(mutated)


def test_damaged_tflite_support_metadata_is_refused_as_a_model_error():
    """Offsets pointing past the buffer are a ModelError, never a struct.error (exit 1 from classify): 24 of
    3,000 mutations of the bundled model's metadata point past it."""
    from app.model.spec import bundled_models

    meta = read_tflite(bundled_models()["efficientnet_lite0"].read_bytes()).metadata["TFLITE_METADATA"]
    original = parse_metadata(meta)
    assert original.label_files == ["labels.txt"] and original.mean == (127.0,)  # the seed reads whole
    refused = unchanged = changed = 0
    for mutated in _mutations(meta, seed=1, cases=400):
        try:
            parsed = parse_metadata(mutated)
        except ModelError:
            refused += 1
            continue
        if parsed == original:
            unchanged += 1
        else:
            changed += 1
    # Measured: 143 refused, 50 parsed unchanged, 207 parsed with a field changed. A parser that
    # refused everything, or nothing, or read none of the damaged fields, fails here.
    assert refused >= 95 and unchanged >= 30 and changed >= 140, (refused, unchanged, changed)


def test_a_model_with_damaged_metadata_still_classifies_with_a_warning(tmp_path: Path):
    """Metadata is optional: unreadable, the model runs on its sidecar-less defaults and says so."""
    from app.model.spec import bundled_models
    from tests.helpers.cli import run_cli
    from tests.helpers.paths import PHOTOS

    data = bundled_models()["efficientnet_lite0"].read_bytes()
    meta = read_tflite(data).metadata["TFLITE_METADATA"]
    start = data.find(meta)
    # Find one mutation that breaks the metadata (seeded, so the same one every run).
    for mutated in _mutations(data, seed=3, cases=2000, start=start, end=start + len(meta)):
        try:
            parse_metadata(read_tflite(mutated).metadata["TFLITE_METADATA"])
        except ModelError:
            break
    else:
        pytest.fail("no mutation damaged the metadata")
    model = tmp_path / "damaged_metadata.tflite"  # no sidecar beside it: the metadata is what it would use
    model.write_bytes(mutated)
    run = run_cli("classify", "--model", model, "--json", PHOTOS / "coffee.jpg")
    assert run.returncode == 0, run.stderr
    assert "ignoring the model's TFLite metadata: model metadata is corrupt" in run.stderr
    assert "Traceback" not in run.stderr


def _structure_positions(data: bytes) -> list[int]:
    """Byte positions outside the weight buffers: the tables, vectors and strings a reader walks."""
    import numpy as np
    from ai_edge_litert import schema_py_generated as fb

    model = fb.Model.GetRootAs(data, 0)
    base = np.frombuffer(data, np.uint8).__array_interface__["data"][0]
    weights = np.zeros(len(data), bool)
    for i in range(model.BuffersLength()):
        buf = model.Buffers(i)
        if not buf.DataIsNone() and buf.DataLength() > 64:
            array = buf.DataAsNumpy()
            start = array.__array_interface__["data"][0] - base
            weights[start : start + array.nbytes] = True
    return np.flatnonzero(~weights).tolist()


@pytest.mark.slow
@pytest.mark.parametrize("model", ["efficientnet_lite0", "detector_like"])
def test_seeded_mutations_of_the_graph_tables_never_break_the_graph_reader(model: str):
    """read_graph (coverage, inspect) walks every node, tensor and option of untrusted files: mutate
    the flatbuffer's structure (weights excluded, where mutations change nothing a reader sees)."""
    from app.model.spec import bundled_models
    from app.tflite.graph import read_graph

    path = bundled_models().get(model) or TEST_MODELS / f"{model}.tflite"
    data = path.read_bytes()
    positions = _structure_positions(data)
    rng = random.Random(5)
    refused = 0
    for _ in range(300):
        mutated = bytearray(data)
        for _ in range(rng.choice((1, 2, 4, 8))):
            i = rng.choice(positions)
            mutated[i] = mutated[i] ^ (1 << rng.randrange(8)) if rng.random() < 0.5 else rng.randrange(256)
        try:
            read_graph(bytes(mutated))
        except ModelError:
            refused += 1
    assert refused > 30  # the mutations reach the structure: many are refused
