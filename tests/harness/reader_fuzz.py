"""Structure-aware fuzzing of the readers of files a user hands over (besides the model flatbuffer,
which tests/harness/model_fuzz.py covers, and labels files, tests/test_labels_fuzz.py).

Each reader gets mutations that respect its format enough to reach deep into the reader: JSON
that stays JSON with hostile values at random places, CSV rows with hostile cells, TFLite
Support metadata mutated inside the model, label zips that are bombs or carry path names.
Every case goes through the app's own entry point and must end as "ok" (possibly with a
warning) or "refused" (the app's typed error, one line); anything else is a bug.

Used by tests/test_reader_fuzz.py (a few hundred seeded cases per reader in CI) and
benchmarks/fuzz/readers.py (thousands, with the counts in docs/reliability.md).
"""

from __future__ import annotations

import csv
import functools
import io
import json
import random
import shutil
import time
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.errors import DelegateScopeError
from app.recording.writer import sidecar_path

ROOT = Path(__file__).resolve().parents[2]
MODEL = ROOT / "models" / "efficientnet_lite0_int8.tflite"

_HOSTILE_VALUES: list[Any] = [
    None, True, False, 0, -1, 1, 2**63, -(2**63), 10**400, 1e308, -1e308, 0.5, "", "x" * 100_000,
    "\x00\u2028\u202e", "=cmd|' /C calc'!A0", "../../etc/passwd", [], {}, [None] * 1000, {"": {}},
]  # fmt: skip
_HOSTILE_CELLS = [
    "", "nan", "NaN", "inf", "-inf", "1e309", "-1e309", "-5", "0", "abc", "1,5", "=HYPERLINK(\"x\")",
    "x" * 100_000, "\x00", "\u2028", "12345678901234567890", "0x10", " 3 ", "1e-320",
]  # fmt: skip


@dataclass
class Tally:
    outcomes: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    slowest_s: float = 0.0
    stages: Counter = field(default_factory=Counter)  # where refusals happened, for readers that say

    def record(self, case: int, run: Callable[[], object], stage: Callable[[str], str] | None = None) -> None:
        started = time.perf_counter()
        try:
            result = run()
            # A damaged optional part (sidecar field, metadata) loads with a warning: count those apart.
            self.outcomes["warned" if getattr(result, "warnings", None) else "ok"] += 1
        except DelegateScopeError as exc:
            text = str(exc)
            assert text and "\n" not in text.strip(), text  # one line, as printed to the user
            self.outcomes["refused"] += 1
            if stage:
                self.stages[stage(text)] += 1
        except Exception as exc:  # the contract's breach: would be "internal error", exit 1
            self.outcomes["exception"] += 1
            self.failures.append(f"case {case}: {type(exc).__name__}: {str(exc)[:120]}")
        self.slowest_s = max(self.slowest_s, time.perf_counter() - started)


# ---- mutations -------------------------------------------------------------------------------


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def mutate_json(obj: Any, rng: random.Random) -> str:
    """JSON text: `obj` with a hostile change at a random place, or its text damaged."""
    obj = json.loads(json.dumps(obj))
    slots: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            slots.append((node, key))
            walk(value)

    walk(obj)
    kind = rng.choice(("replace", "replace", "delete", "insert", "text", "deep"))
    if kind == "deep":
        return _deep(rng.choice((100, 5_000, 200_000)))
    if slots and kind in ("replace", "delete", "insert"):
        parent, key = rng.choice(slots)
        if kind == "replace":
            parent[key] = rng.choice(_HOSTILE_VALUES)
        elif kind == "delete":
            del parent[key]
        elif isinstance(parent, dict):
            parent[f"extra{rng.randrange(9)}"] = rng.choice(_HOSTILE_VALUES)
        else:
            parent.insert(rng.randrange(len(parent) + 1), rng.choice(_HOSTILE_VALUES))
    text = json.dumps(obj)
    if kind == "text" and text:
        i = rng.randrange(len(text))
        text = rng.choice((text[:i], text[:i] + rng.choice('{}[]",:\\\x00') + text[i + 1 :], text + "}"))
    return text


def mutate_csv(text: str, rng: random.Random) -> str:
    """CSV text: hostile cells, ragged or duplicated rows, a damaged header, or torn text."""
    rows = list(csv.reader(io.StringIO(text)))
    for _ in range(rng.randint(1, 6)):
        kind = rng.choice(("cell", "cell", "cell", "ragged", "duplicate", "swap", "header", "tear", "empty"))
        body = range(1, len(rows)) if len(rows) > 1 else range(len(rows))
        if not rows:
            break
        r = rng.choice(list(body)) if body else 0
        if kind == "cell" and rows[r]:
            rows[r][rng.randrange(len(rows[r]))] = rng.choice(_HOSTILE_CELLS)
        elif kind == "ragged":
            rows[r] = rows[r][: rng.randrange(len(rows[r]) + 1)] + ["x"] * rng.randrange(3)
        elif kind == "duplicate":
            rows.insert(r, list(rows[r]))
        elif kind == "swap" and len(rows) > 2:
            a, b = rng.sample(range(1, len(rows)), 2)
            rows[a], rows[b] = rows[b], rows[a]
        elif kind == "header" and rows[0]:
            rows[0][rng.randrange(len(rows[0]))] = rng.choice(("", "t_s", "x"))
        elif kind == "empty":
            rows = rows[:1]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    text = out.getvalue()
    if rng.random() < 0.15 and text:
        text = text[: rng.randrange(len(text))]  # a torn file
    return text


def _zip(entries: list[tuple[str, bytes]], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return buffer.getvalue()


def hostile_label_zip(rng: random.Random, label_name: str) -> bytes:
    """What a model's appended label zip can be made of."""
    kind = rng.choice(("bomb", "binary", "huge_lines", "path_names", "bad_zip", "empty", "many"))
    if kind == "binary":
        return _zip([(label_name, bytes(rng.randrange(256) for _ in range(4096)))])
    if kind == "bad_zip":
        data = bytearray(_zip([(label_name, b"cat\ndog\n" * 500)]))
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return bytes(data)
    return _fixed_label_zip(kind, label_name)


@functools.cache
def _fixed_label_zip(kind: str, label_name: str) -> bytes:
    """The kinds that take nothing from the seed, compressed once: deflating the bomb's 64 MiB and the
    3,000 entries took two thirds of a campaign's time, not the reader."""
    if kind == "bomb":  # 64 MiB of zeros compress to ~64 KiB
        return _zip([(label_name, bytes(64 * 1024 * 1024))])
    if kind == "huge_lines":
        return _zip([(label_name, ("y" * 1_000_000 + "\n") * 3)])  # type: ignore[list-item]
    if kind == "path_names":
        return _zip([(f"../../{label_name}", b"a\nb\n"), (f"/abs/{label_name}", b"a\n"), (label_name + "/", b"")])
    if kind == "many":
        return _zip([(f"f{i}.txt", b"x") for i in range(3000)] + [(label_name, b"a\n")])
    return b"PK\x05\x06" + bytes(18)  # an empty archive


# ---- the readers -------------------------------------------------------------------------------


def fuzz_model_sidecar(work: Path, seed: int, cases: int) -> Tally:
    """The JSON sidecar beside a model (labels, normalisation, name): load_model_spec."""
    from app.model.spec import load_model_spec

    model = work / "model.tflite"
    shutil.copyfile(MODEL, model)
    original = json.loads(MODEL.with_suffix(".json").read_text(encoding="utf-8"))
    shutil.copyfile(MODEL.parent / original["labels"], work / original["labels"])
    rng, tally = random.Random(seed), Tally()
    for case in range(cases):
        model.with_suffix(".json").write_text(mutate_json(original, rng), encoding="utf-8")
        tally.record(case, lambda: load_model_spec(model))
    return tally


def fuzz_recording(work: Path, seed: int, cases: int, base: Path) -> Tally:
    """A recording (CSV + JSON sidecar) as `report` and the window's review read it."""
    from app.recording.series import session_series
    from app.recording.writer import read_recording
    from app.report.compare import compare
    from app.report.data import load_segments, load_session
    from app.report.html import render_html
    from app.report.tables import header_lines, summary_rows

    text = base.read_text(encoding="utf-8")
    meta = json.loads(sidecar_path(base).read_text(encoding="utf-8"))
    csv_path = work / "rec.csv"
    rng, tally = random.Random(seed), Tally()

    def read_all(draw: bool) -> None:
        session = load_session(csv_path, 0)
        figures = []
        if draw:  # the matplotlib figures cost ~1 s: drawn for every 20th case
            from app.report import plots as report_plots

            figures = report_plots.html_figures([session])
        render_html([session], compare([session]), figures)
        summary_rows([session], [])
        session_series(read_recording(csv_path))
        parts = load_segments(csv_path, 0)  # a recording cut at its switches, as report and Review take it
        for i, part in enumerate(parts):
            part.label = f"#{i + 1}"
        render_html(parts, compare(parts), [])
        for part in parts:
            header_lines(part)

    for case in range(cases):
        mutate_both = rng.random() < 0.3
        csv_path.write_text(mutate_csv(text, rng) if mutate_both or rng.random() < 0.6 else text, encoding="utf-8")
        sidecar = mutate_json(meta, rng) if mutate_both or rng.random() < 0.6 else json.dumps(meta)
        sidecar_path(csv_path).write_text(sidecar, encoding="utf-8")
        tally.record(case, lambda draw=case % 20 == 0: read_all(draw))
    return tally


def fuzz_metadata(work: Path, seed: int, cases: int) -> Tally:
    """TFLite Support metadata inside a model with no sidecar: bytes of its buffer mutated."""
    from app.model.spec import load_model_spec
    from app.tflite.file import read_tflite

    data = MODEL.read_bytes()
    meta = read_tflite(data).metadata["TFLITE_METADATA"]
    start = data.find(meta)
    model = work / "metadata.tflite"
    rng, tally = random.Random(seed), Tally()
    for case in range(cases):
        mutated = bytearray(data)
        for _ in range(rng.choice((1, 2, 4, 8, 16))):
            i = rng.randrange(start, start + len(meta))
            mutated[i] = mutated[i] ^ (1 << rng.randrange(8)) if rng.random() < 0.5 else rng.randrange(256)
        model.write_bytes(bytes(mutated))
        tally.record(case, lambda: load_model_spec(model))
    return tally


def fuzz_label_zip(work: Path, seed: int, cases: int) -> Tally:
    """The label file zipped onto the end of a model (TFLite Support's associated files)."""
    from app.model.spec import load_model_spec
    from app.tflite.file import read_tflite
    from app.tflite.metadata import parse_metadata

    data = MODEL.read_bytes()
    label_name = parse_metadata(read_tflite(data).metadata["TFLITE_METADATA"]).label_files[0]
    end = data.rfind(b"PK\x03\x04")  # the appended zip's first local header
    bare = data[:end] if end > 0 else data
    model = work / "zipped.tflite"
    rng, tally = random.Random(seed), Tally()
    for case in range(cases):
        model.write_bytes(bare + hostile_label_zip(rng, label_name))
        tally.record(case, lambda: load_model_spec(model))
    return tally


# ---- Core ML packages ------------------------------------------------------------------------------

PACKAGE = ROOT / "models" / "efficientnet_lite0_int8.mlpackage"
_SPEC = ("Data", "com.apple.CoreML", "model.mlmodel")
_HOSTILE_ITEM_PATHS = [
    "../../../../etc/passwd", "/etc/passwd", "com.apple.CoreML/../../../outside/model.mlmodel", "", ".", "..",
    "com.apple.CoreML/model.mlmodel\x00.txt", "C:\\Windows\\x", "com.apple.CoreML\\..\\..\\x", "a/" * 2000 + "m",
    "x" * 5000, "com.apple.CoreML", "com.apple.CoreML/weights", "com.apple.CoreML/missing.mlmodel", "~/m.mlmodel",
    "com.apple.CoreML/./model.mlmodel", "com.apple.CoreML//model.mlmodel", "\u202egnp.mlmodel",
]  # fmt: skip
_HOSTILE_PACKAGE_NAMES = [
    "../other.mlpackage", "/abs/model.mlpackage", "..", ".", "", "x" * 300 + ".mlpackage", "a\x00.mlpackage",
    "..\\..\\evil.mlpackage", "sub/dir/model.mlpackage", "model.mlpackage/", "model.mlpackage", "mod el.mlpackage",
]  # fmt: skip


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _nested_pipelines(depth: int) -> bytes:
    """Core ML's Model { pipeline (field 202) { models (field 1) [ Model { pipeline { ... } } ] } },
    `depth` levels: valid protobuf wire format (Model.proto), built outside in without copying."""
    innermost = b"\x08\x07"  # specificationVersion: 7
    size, prefixes = len(innermost), []
    for _ in range(depth):
        pipeline_size = 1 + len(_varint(size)) + size
        prefix = _varint((202 << 3) | 2) + _varint(pipeline_size) + b"\x0a" + _varint(size)
        prefixes.append(prefix)
        size += len(prefix)
    return b"\x08\x07" + b"".join(reversed(prefixes)) + innermost


def _sparse(path: Path, size: int) -> None:
    with path.open("wb") as f:
        f.truncate(size)  # takes no disk space: a "huge" file the reader must not read whole


def _replace(path: Path, kind: str, outside: Path) -> None:
    """Put something hostile where a file of the package was."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    if kind == "missing":
        return
    if kind == "link_outside":
        path.symlink_to(outside)
    elif kind == "link_loop":
        path.symlink_to(path.name)
    elif kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        import os

        os.mkfifo(path)  # opening it for reading would block until a writer comes: a hang
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "huge":
        _sparse(path, 3 * 1024**3)
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 64)
    elif kind == "utf16":
        path.write_text((outside.read_text() if outside.is_file() else "{}"), encoding="utf-16")


def make_package(work: Path, rng: random.Random, model: Path) -> str:
    """A damaged copy of the bundled int8 Core ML package beside `model` (weights left out: nothing
    reads them before Core ML compiles the model); returns the kind of damage."""
    package = model.with_suffix(".mlpackage")
    if package.is_symlink() or package.is_file():
        package.unlink()
    elif package.exists():
        shutil.rmtree(package)
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("weight.bin"))
    outside = work / "outside"
    if not outside.exists():
        outside.mkdir()
        shutil.copyfile(PACKAGE / "Manifest.json", outside / "Manifest.json")
        shutil.copyfile(PACKAGE.joinpath(*_SPEC), outside / "model.mlmodel")
        shutil.copytree(PACKAGE / "Data", outside / "Data")
    manifest_path, spec_path = package / "Manifest.json", package.joinpath(*_SPEC)
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    sidecar = model.with_suffix(".json")
    sidecar.unlink(missing_ok=True)
    kind = rng.choice(("manifest_json", "manifest_json", "item_path", "item_path", "root_id", "manifest_file",
                       "spec_file", "data_dir", "spec_bytes", "spec_bytes", "sidecar_name", "package"))  # fmt: skip
    if kind == "manifest_json":
        manifest_path.write_text(mutate_json(manifest, rng), encoding="utf-8")
    elif kind == "item_path":
        entries = manifest["itemInfoEntries"]
        key = rng.choice([manifest["rootModelIdentifier"], *entries])
        entries[key]["path"] = rng.choice(_HOSTILE_ITEM_PATHS)
        manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    elif kind == "root_id":
        manifest["rootModelIdentifier"] = rng.choice([*manifest["itemInfoEntries"], *_HOSTILE_VALUES])
        manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    elif kind == "manifest_file":
        target = outside / "Manifest.json"
        _replace(manifest_path, rng.choice(("missing", "link_outside", "link_loop", "folder", "fifo", "empty", "huge",
                                            "binary", "utf16")), target)  # fmt: skip
        if manifest_path.is_file() and manifest_path.stat().st_size == 3 * 1024**3:
            manifest_path.unlink()
            _sparse(manifest_path, 100 * 1024**2)  # a manifest of 100 MB: refused by its size, not read
    elif kind == "spec_file":
        _replace(spec_path, rng.choice(("missing", "link_outside", "link_loop", "folder", "fifo", "empty", "huge",
                                        "binary")), outside / "model.mlmodel")  # fmt: skip
    elif kind == "data_dir":
        _replace(package / "Data", rng.choice(("missing", "link_outside", "empty", "link_loop")), outside / "Data")
    elif kind == "spec_bytes":  # the protobuf specification: only coremltools reads these bytes
        data = bytearray(spec_path.read_bytes())
        how = rng.choice(("flip", "bytes", "truncate", "append", "nested", "length"))
        if how == "flip":
            for _ in range(rng.choice((1, 2, 4, 8, 16))):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif how == "bytes":
            i = rng.randrange(len(data))
            data[i : i + 16] = bytes(rng.randrange(256) for _ in range(16))
        elif how == "truncate":
            data = data[: rng.randrange(len(data))]
        elif how == "append":
            data += bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
        elif how == "nested":  # a valid protobuf: pipelines of pipelines, deeper than any parser's stack
            data = bytearray(_nested_pipelines(rng.choice((3, 40, 10_000, 100_000))))
        else:  # a length-delimited field claiming up to 2^63 bytes that are not there
            data += _varint((202 << 3) | 2) + _varint(rng.choice((2**31, 2**32 + 5, 2**63 - 1)))
        spec_path.write_bytes(bytes(data))
    elif kind == "sidecar_name":  # the model's sidecar names the package
        name = rng.choice(_HOSTILE_PACKAGE_NAMES)
        sidecar.write_text(json.dumps({"format": 1, "coreml": name}), encoding="utf-8")
        if name == "model.mlpackage" or rng.random() < 0.5:
            shutil.rmtree(package)  # only the named one exists, if it does
    else:  # the package itself: a file, a link to a package outside (allowed), a link to nowhere
        shutil.rmtree(package)
        how = rng.choice(("file", "link", "dangling"))
        if how == "file":
            package.write_bytes(b"not a folder")
        elif how == "link":
            if not (work / "elsewhere.mlpackage").exists():
                shutil.copytree(PACKAGE, work / "elsewhere.mlpackage", ignore=shutil.ignore_patterns("weight.bin"))
            package.symlink_to(work / "elsewhere.mlpackage")
        else:
            package.symlink_to(work / "nowhere.mlpackage")
    return kind


def _package_stage(message: str) -> str:
    if message.startswith("Core ML package"):
        return "the app's package check"
    if message.startswith("no Core ML version"):
        return "no package found"
    if "needs macOS 13 or later, or coremltools lacks its native module" in message:
        return "parsed by coremltools; Core ML itself absent (Linux)"
    return "coremltools refused it"


def _open_package(model: Path) -> object:
    """What the Core ML backend does with a model's package before coremltools: find it, check it."""
    from app.backends.coreml.backend import find_mlpackage
    from app.backends.coreml.package import check_package
    from app.errors import BackendUnavailable
    from app.model.spec import load_model_spec

    package = find_mlpackage(load_model_spec(model))
    if package is None:
        raise BackendUnavailable("no Core ML version of this model")
    return check_package(package)


def fuzz_mlpackage(work: Path, seed: int, cases: int) -> Tally:
    """A .mlpackage beside a model, damaged: the manifest (JSON mutations, hostile item paths and root
    identifiers), its files (links out of the package, loops, FIFOs, folders, huge sparse files), the
    specification's bytes, and the sidecar's "coreml" name; through find_mlpackage and check_package."""
    import app.backends.coreml.backend  # noqa: F401  (imported before the first case, so that is not timed)

    model = work / "model.tflite"
    shutil.copyfile(MODEL, model)
    rng, tally = random.Random(seed), Tally()
    for case in range(cases):
        make_package(work, rng, model)
        tally.record(case, lambda: _open_package(model), _package_stage)
    return tally


def fuzz_mlpackage_coremltools(work: Path, seed: int, cases: int) -> Tally:
    """The same damaged packages through the backend's whole open path as far as this OS goes: the
    app's check, then coremltools' MLModel (its native Manifest.json reader, libmodelpackage, and the
    protobuf parse of the specification), which off macOS stops where Core ML itself would compile.
    Imports coremltools: run it in a child process, never in the test process."""
    import sys

    if "_pytest" in sys.modules:
        raise RuntimeError("coremltools imports TensorFlow's converters: run this reader in a child process")
    from app.backends.coreml.backend import CoreMLSession
    from app.coreml_mil.coremltools_import import import_coremltools
    from app.model.spec import load_model_spec

    import_coremltools()  # seconds, once: not counted in the first case
    model = work / "model.tflite"
    shutil.copyfile(MODEL, model)
    rng, tally = random.Random(seed), Tally()

    def open_session() -> None:
        layout = _open_package(model)
        CoreMLSession(load_model_spec(model), layout.root, "all")  # type: ignore[attr-defined]

    for case in range(cases):
        make_package(work, rng, model)
        tally.record(case, open_session, _package_stage)
    return tally


READERS = ("model_sidecar", "recording", "metadata", "label_zip", "mlpackage", "mlpackage_coremltools")
