"""The Core ML backend on any float .tflite: Core ML pieces and LiteRT pieces in order.

Off macOS: the backend converts (or reads from its cache) every delegated partition and stops,
in one line, where Core ML would load them. On macOS (the CI workflow's macOS job): predictions,
per-piece timings, compute units and the compute plan, against the CPU backend.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from app.backends import open_session
from app.backends.coreml.backend import CoreMLBackend
from app.backends.cpu import CpuBackend
from app.backends.options import BackendOptions, ComputeUnits
from app.model.spec import load_model_spec
from tests.builders.coreml_models import every_op_model
from tests.helpers.paths import ROOT

on_macos = pytest.mark.skipif(sys.platform != "darwin", reason="Core ML predictions need macOS")
HAS_COREMLTOOLS = importlib.util.find_spec("coremltools") is not None

_OPEN = """
import json, sys
from app.backends.coreml.partitioned import PartitionedCoreMLSession
from app.errors import BackendUnavailable
from app.model.spec import load_model_spec
try:
    PartitionedCoreMLSession(load_model_spec(sys.argv[1]), "all", "fp16", 1)
except BackendUnavailable as exc:
    print(json.dumps({"error": str(exc), "tensorflow": "tensorflow" in sys.modules}))
"""


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "darwin", reason="checks the failure off macOS")
@pytest.mark.skipif(not HAS_COREMLTOOLS, reason="needs coremltools (the convert extra)")
def test_off_macos_the_programs_are_built_and_cached_then_core_ml_is_missing(tmp_path: Path):
    env = {**os.environ, "DELEGATE_SCOPE_CACHE": str(tmp_path)}
    for _ in range(2):  # the second open reads the cache
        proc = subprocess.run(
            [sys.executable, "-c", _OPEN, "efficientnet_lite0"], capture_output=True, text=True, cwd=ROOT, env=env,
            timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-3000:]
        result = json.loads(proc.stdout)
        assert result["error"] == (
            "Core ML cannot load the program of piece 0: no Core ML runtime here (ML programs need macOS 13 or later)"
        )
        assert result["tensorflow"] is False
    (entry,) = (tmp_path / "coreml").iterdir()
    assert sorted(p.name for p in entry.iterdir()) == ["manifest.json", "piece0.mlpackage", "piece2.mlpackage"]


_UNTRANSLATABLE = """
import sys
from pathlib import Path
from app.backends.coreml.partitioned import PartitionedCoreMLSession
from app.errors import BackendUnavailable
from app.model.spec import load_model_spec
from tests.builders.coreml_models import untranslatable_model
path = Path(sys.argv[1])
path.write_bytes(untranslatable_model())
try:
    PartitionedCoreMLSession(load_model_spec(path), "all", "fp16", 1)
except BackendUnavailable as exc:
    print(exc)
"""


@pytest.mark.slow
@pytest.mark.skipif(not HAS_COREMLTOOLS, reason="needs coremltools (the convert extra)")
def test_a_delegated_node_without_a_translation_is_backend_unavailable_naming_it(tmp_path: Path):
    env = {**os.environ, "DELEGATE_SCOPE_CACHE": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-c", _UNTRANSLATABLE, str(tmp_path / "m.tflite")], capture_output=True, text=True,
        cwd=ROOT, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == (
        "a delegated node has no Core ML translation here: node 0 (TRANSPOSE_CONV): output size 9 is not what "
        "its padding gives"
    )


def test_off_macos_a_core_ml_request_falls_back_with_the_reason():
    if sys.platform == "darwin":
        pytest.skip("checks the fallback off macOS")
    session = open_session(load_model_spec("efficientnet_lite0"), "coreml", BackendOptions(threads=1))
    try:
        assert (session.report.used, session.report.fallback_reason) == ("cpu", "Core ML needs macOS")
        assert session.report.predicted.nodes_delegated == 60
    finally:
        session.close()


# ---------------------------------------------------------------- macOS: real Core ML


def _run(backend, spec, options: BackendOptions, inputs: list[np.ndarray]) -> tuple[list[np.ndarray], object]:
    session = backend.open(spec, options)
    try:
        return [session.run(x).copy() for x in inputs], session
    finally:
        session.close()


def _inputs(spec, n: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.uniform(-1, 1, (1, spec.input_height, spec.input_width, 3)).astype(np.float32) for _ in range(n)]


@on_macos
@pytest.mark.parametrize("units", ComputeUnits)
def test_partitioned_core_ml_runs_the_bundled_float_model(units: str):
    spec = load_model_spec("efficientnet_lite0")
    inputs = _inputs(spec)
    ours, session = _run(CoreMLBackend(), spec, BackendOptions(compute_units=units, threads=1), inputs)
    cpu, _ = _run(CpuBackend(), spec, BackendOptions(threads=1), inputs)
    r = session.report
    assert (r.requested, r.used, r.accelerator) == ("coreml", "coreml", f"Core ML (compute units: {units})")
    assert r.coreml_mode == "partitioned" and r.options["compute_units"] == units
    assert [(p["where"], p["nodes"]) for p in r.options["pieces"]] == [("coreml", 58), ("cpu", 1), ("coreml", 2)]
    assert (r.nodes_total, r.nodes_delegated, r.partitions, r.cpu_ops) == (61, 60, 2, ("MEAN",))
    assert len(r.options["first_inference_pieces_ms"]) == 3
    assert [t.where for t in session.last_timings] == ["coreml", "cpu", "coreml"]
    for a, b in zip(ours, cpu, strict=True):
        assert float(np.max(np.abs(a - b))) < 0.03  # fp16 Core ML vs float32 XNNPACK, probabilities


@on_macos
def test_partitioned_core_ml_fp32_matches_litert_closely(tmp_path: Path):
    path = tmp_path / "every_op.tflite"
    path.write_bytes(every_op_model())
    spec = load_model_spec(path)
    inputs = _inputs(spec)
    ours, session = _run(CoreMLBackend(), spec, BackendOptions(compute_units="cpu_only", precision="fp32"), inputs)
    cpu, _ = _run(CpuBackend(), spec, BackendOptions(threads=1), inputs)
    assert [p["where"] for p in session.report.options["pieces"]] == ["coreml", "cpu", "coreml"]
    for a, b in zip(ours, cpu, strict=True):
        assert float(np.max(np.abs(a - b))) < 1e-4


@on_macos
def test_second_open_reads_the_cache(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("DELEGATE_SCOPE_CACHE", str(tmp_path))
    spec = load_model_spec("efficientnet_lite0")
    first = CoreMLBackend().open(spec, BackendOptions())
    first.close()
    second = CoreMLBackend().open(spec, BackendOptions())
    second.close()
    assert (first.report.options["programs"], second.report.options["programs"]) == ("converted now", "cache hit")
    assert second.report.options["prepare_ms"] < first.report.options["prepare_ms"]


@on_macos
def test_the_int8_model_runs_its_exported_package():
    session = CoreMLBackend().open(load_model_spec("efficientnet_lite0_int8"), BackendOptions())
    try:
        assert session.report.coreml_mode == "exported package"
    finally:
        session.close()
