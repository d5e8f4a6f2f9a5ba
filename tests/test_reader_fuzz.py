"""Seeded structure-aware fuzzing of every reader of a file the user hands over (tests/reader_fuzz.py):
each case must load (a damaged optional part becomes a warning) or be refused with the app's own
one-line error; never another exception. benchmarks/fuzz_readers.py runs thousands of cases."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import reader_fuzz
from tests.conftest import run_cli

CASES = 200


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real recording (CSV + sidecar) made by bench, the seed the recording mutations start from."""
    path = tmp_path_factory.mktemp("recording") / "seed.csv"
    run = run_cli("bench", "--source", "synthetic", "--frames", "30", "--warmup", "2", "--csv", path)
    assert run.returncode == 0, run.stderr
    return path


@pytest.mark.parametrize("reader", [r for r in reader_fuzz.READERS if r != "recording"])
def test_model_side_readers(reader: str, tmp_path: Path):
    tally = getattr(reader_fuzz, f"fuzz_{reader}")(tmp_path, seed=11, cases=CASES)
    assert tally.outcomes["exception"] == 0, tally.failures[:5]
    assert sum(tally.outcomes.values()) == CASES
    assert tally.outcomes["warned"] + tally.outcomes["refused"] > 0  # the mutations reach the reader


def test_recordings_fed_to_report_and_review(recording: Path, tmp_path: Path):
    tally = reader_fuzz.fuzz_recording(tmp_path, seed=11, cases=CASES, base=recording)
    assert tally.outcomes["exception"] == 0, tally.failures[:5]
    assert tally.outcomes["refused"] > 0 and tally.outcomes["ok"] > 0  # the mutations reach both outcomes


def test_regressions_found_by_the_reader_fuzzing(tmp_path: Path):
    """Each of these ended in an internal error (exit 1) before."""
    import csv
    import json
    import shutil

    from app.model import load_model_spec
    from app.recording import read_recording, sidecar_path
    from app.report_data import load_session
    from app.session_series import session_series

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
    # A recording with an unreadable time and one claiming a span of 10^19 s: the review's resampling
    # divided by NaN ("arange: cannot compute length") or would ask for ~10^20 samples.
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
