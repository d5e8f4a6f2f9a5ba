"""Seeded structure-aware fuzzing of every reader of a file the user hands over (tests/harness/reader_fuzz.py):
each case must load (a damaged optional part becomes a warning) or be refused with the app's own
one-line error; never another exception. benchmarks/fuzz/readers.py runs thousands of cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import reader_fuzz
from tests.helpers.cli import run_cli
from tests.helpers.extras import need_convert_extra

# Its module-scoped fixtures are built once: the module's tests stay on one xdist worker, in order.
pytestmark = pytest.mark.xdist_group("reader_fuzz")

CASES = 200


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real recording (CSV + sidecar) made by bench, the seed the recording mutations start from."""
    path = tmp_path_factory.mktemp("recording") / "seed.csv"
    run = run_cli("bench", "--source", "synthetic", "--frames", "30", "--warmup", "2", "--csv", path)
    assert run.returncode == 0, run.stderr
    return path


@pytest.mark.slow
@pytest.mark.parametrize("reader", [r for r in reader_fuzz.READERS if r not in ("recording", "mlpackage_coremltools")])
def test_model_side_readers(reader: str, tmp_path: Path):
    tally = getattr(reader_fuzz, f"fuzz_{reader}")(tmp_path, seed=11, cases=CASES)
    assert tally.outcomes["exception"] == 0, tally.failures[:5]
    assert sum(tally.outcomes.values()) == CASES
    assert tally.outcomes["warned"] + tally.outcomes["refused"] > 0  # the mutations reach the reader


@pytest.mark.slow
@pytest.mark.damages_outputs  # mutated sidecars, on purpose
def test_recordings_fed_to_report_and_review(recording: Path, tmp_path: Path):
    tally = reader_fuzz.fuzz_recording(tmp_path, seed=11, cases=CASES, base=recording)
    assert tally.outcomes["exception"] == 0, tally.failures[:5]
    assert tally.outcomes["refused"] > 0 and tally.outcomes["ok"] > 0  # the mutations reach both outcomes


def test_regressions_found_by_the_reader_fuzzing(tmp_path: Path):
    """Each of these ended in an internal error (exit 1) before."""
    import csv
    import json
    import shutil

    from app.model.spec import load_model_spec
    from app.recording.series import session_series
    from app.recording.writer import read_recording, sidecar_path
    from app.report.data import load_session

    model = tmp_path / "m.tflite"
    shutil.copyfile(reader_fuzz.MODEL, model)
    sidecar = model.with_suffix(".json")
    # A sidecar nested deeper than Python's stack: RecursionError from json.loads.
    sidecar.write_text("[" * 200_000 + "]" * 200_000)
    spec = load_model_spec(model)
    assert any("not valid JSON (RecursionError)" in w for w in spec.warnings)
    # A sidecar whose normalisation holds no numbers: TypeError / ValueError from float().
    for bad in (None, ["../../etc/passwd"], 7, [1, 2], [1, 2, 0], [10**400]):
        sidecar.write_text(json.dumps({"format": 1, "normalization": {"mean": [127.0], "std": bad}}))
        spec = load_model_spec(model)
        assert spec.normalization.source != "sidecar"
        assert any("field 'normalization'" in w for w in spec.warnings)
    sidecar.write_text(json.dumps({"format": 1, "labels": 7, "name": ["x"]}))
    assert sum("not a short text" in w for w in load_model_spec(model).warnings) == 2
    # A recording with an unreadable time and one claiming a span of 10^19 s: the Review's resampling must
    # neither divide by NaN ("arange: cannot compute length") nor ask for ~10^20 samples.
    seed = tmp_path / "seed.csv"
    assert run_cli("bench", "--source", "synthetic", "--frames", "12", "--warmup", "0", "--csv", seed).returncode == 0
    rows = list(csv.reader(seed.open(encoding="utf-8")))
    t_col, event_col = rows[0].index("t_s"), rows[0].index("event")
    last = max(i for i, row in enumerate(rows) if i > 0 and not row[event_col])
    for value in ("nan", "12345678901234567890"):
        rows[last][t_col] = value
        damaged = tmp_path / f"damaged-{value}.csv"
        with damaged.open("w", encoding="utf-8", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows(rows)
        times, series, _ = session_series(read_recording(damaged))
        assert 0 < len(times) <= 100_001 and series
        load_session(damaged, 0)
    sidecar_path(seed).write_text("[" * 200_000)  # the recording's sidecar, nested too deep
    assert read_recording(seed).metadata == {}


@pytest.mark.slow
def test_damaged_core_ml_packages_through_coremltools(tmp_path: Path):
    """The backend's whole open path as far as Linux goes: the app's package check, then coremltools'
    own Manifest.json reader (native) and protobuf parse. In a child process: coremltools imports
    TensorFlow's converters, and a native crash must show as a dead child, not a dead test run."""
    need_convert_extra("coremltools")  # skips with the reason, as every Core ML test does (fails in CI)
    import json
    import subprocess
    import sys

    from tests.helpers.paths import ROOT

    code = (
        "import json, sys; from pathlib import Path; from tests.harness import reader_fuzz; "
        "t = reader_fuzz.fuzz_mlpackage_coremltools(Path(sys.argv[1]), 11, 150); "
        "print(json.dumps({'outcomes': t.outcomes, 'stages': t.stages, 'failures': t.failures[:5]}))"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=600,
                          cwd=ROOT)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]  # no crash in coremltools' native reader
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    assert r["outcomes"].get("exception", 0) == 0, r["failures"]
    assert sum(r["outcomes"].values()) == 150
    # Every stage is reached: the app's check, coremltools refusing what passed it, and packages that
    # parse and stop only where Core ML itself would compile them (macOS).
    assert r["stages"]["the app's package check"] > 0 and r["stages"]["coremltools refused it"] > 0
    assert r["stages"]["parsed by coremltools; Core ML itself absent (Linux)"] > 0


def test_regressions_found_by_the_package_fuzzing(tmp_path: Path):
    """coremltools, handed these packages without the check, hangs on a FIFO, reads files outside the
    package (`..` in an item path, links), and reads a 3 GiB sparse specification whole (36 s, 3.2 GB
    of memory) before refusing it; the sidecar's package name could name the folder above the model's
    or, when too long for the file system, raise OSError (exit 1)."""
    import json
    import os
    import shutil
    import threading

    from app.backends.coreml.backend import find_mlpackage
    from app.backends.coreml.package import check_package
    from app.errors import BackendUnavailable
    from app.model.spec import load_model_spec

    for bundled in sorted((reader_fuzz.ROOT / "models").glob("*.mlpackage")):  # the real ones pass
        assert check_package(bundled).specification.name == "model.mlmodel"

    def damaged(name: str) -> Path:
        package = tmp_path / f"{name}.mlpackage"
        shutil.copytree(reader_fuzz.PACKAGE, package, ignore=shutil.ignore_patterns("weight.bin"))
        return package

    def refused(package: Path, *words: str) -> None:
        outcome: list[object] = []
        worker = threading.Thread(target=lambda: outcome.append(_refusal(check_package, package)), daemon=True)
        worker.start()
        worker.join(10)
        assert not worker.is_alive(), f"{package.name}: the check blocked"
        assert isinstance(outcome[0], BackendUnavailable), outcome
        assert all(w in str(outcome[0]) for w in words), str(outcome[0])

    spec = ("Data", "com.apple.CoreML", "model.mlmodel")
    fifo = damaged("fifo_spec")
    fifo.joinpath(*spec).unlink()
    os.mkfifo(fifo.joinpath(*spec))
    refused(fifo, "not a regular file")
    fifo_manifest = damaged("fifo_manifest")
    (fifo_manifest / "Manifest.json").unlink()
    os.mkfifo(fifo_manifest / "Manifest.json")
    refused(fifo_manifest, "Manifest.json is not a regular file")
    huge = damaged("huge")
    with huge.joinpath(*spec).open("wb") as f:
        f.truncate(3 * 1024**3)
    refused(huge, "3,221,225,472 bytes")
    dotdot = damaged("dotdot")
    manifest = json.loads((dotdot / "Manifest.json").read_text())
    manifest["itemInfoEntries"][manifest["rootModelIdentifier"]]["path"] = "com.apple.CoreML/../../../outside.mlmodel"
    (dotdot / "Manifest.json").write_text(json.dumps(manifest))
    refused(dotdot, "points outside the package")
    linked = damaged("linked")
    shutil.copyfile(reader_fuzz.PACKAGE.joinpath(*spec), tmp_path / "outside.mlmodel")
    linked.joinpath(*spec).unlink()
    linked.joinpath(*spec).symlink_to(tmp_path / "outside.mlmodel")
    refused(linked, "through a link")

    folder = tmp_path / "models"
    folder.mkdir()
    shutil.copyfile(reader_fuzz.MODEL, folder / "m.tflite")
    (tmp_path / "Manifest.json").write_text("{}")  # the folder above the model's looks like a package
    for name in ("..", "x" * 300 + ".mlpackage", "../other.mlpackage", "/abs/other.mlpackage"):
        (folder / "m.json").write_text(json.dumps({"format": 1, "coreml": name}))
        assert find_mlpackage(load_model_spec(folder / "m.tflite")) is None, name


def _refusal(check, package: Path) -> object:
    try:
        return check(package)
    except Exception as exc:  # the test inspects what came out
        return exc
