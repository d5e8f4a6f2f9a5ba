"""A session's DelegationReport is built once, by the backend that opened it, and never patched: a fallback
or a failover is a new report (app/backends/__init__.py: fell_back, continue_on_cpu) that the session holds
instead. Real sessions on the real LiteRT runtime; the GPU on SwiftShader, in a child process."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from app.backends import continue_on_cpu, fell_back, open_session
from app.backends.base import CoreMLMode, DelegationReport
from app.backends.options import BackendOptions
from app.errors import RunFailed
from app.model.spec import load_model_spec
from tests.helpers.paths import ROOT


@pytest.fixture(scope="module")
def cpu_session():
    spec = load_model_spec("efficientnet_lite0_int8")
    session = open_session(spec, "cpu", BackendOptions(threads=1))
    yield spec, session
    session.close()


def test_a_report_cannot_be_patched(cpu_session):
    _, session = cpu_session
    report = session.report
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.used = "gpu"  # type: ignore[misc]
    with pytest.raises(TypeError):
        report.options["threads"] = 4  # type: ignore[index]
    assert isinstance(report.cpu_ops, tuple) and isinstance(report.warnings, tuple)
    assert isinstance(report.native_log, tuple)
    assert report.cpu_ops == ("SOFTMAX",) and report.options == {"threads": 1}


def test_lists_given_are_kept_as_tuples_and_written_as_json_lists():
    options = {"compute_units": "all", "precision": "fp16", "pieces": [{"piece": 0, "where": "coreml"}]}
    report = DelegationReport("coreml", "coreml", "Core ML (compute units: all)", cpu_ops=["MEAN"],
                              options=options, warnings=["w"], native_log=["l"],
                              coreml_mode=CoreMLMode.PARTITIONED)  # fmt: skip
    options["precision"] = "fp32"  # the caller's dict is not the report's
    assert report.cpu_ops == ("MEAN",) and report.options["precision"] == "fp16"
    d = report.to_dict()
    assert (d["cpu_ops"], d["warnings"], d["native_log"]) == (["MEAN"], ["w"], ["l"])
    assert list(d["options"]) == ["compute_units", "precision", "mode", "pieces"]
    d["options"]["pieces"][0]["where"] = "cpu"  # to_dict hands out a copy
    assert report.options["pieces"][0]["where"] == "coreml"
    written = json.dumps(report.to_dict())
    assert json.dumps(DelegationReport.from_dict(json.loads(written)).to_dict()) == written


def test_a_fallback_is_a_new_report_with_the_reason_said_once(cpu_session):
    _, session = cpu_session
    before = session.report
    after = fell_back(before, "gpu", "no GPU adapter found")
    assert (after.requested, after.used, after.fallback_reason) == ("gpu", "cpu", "no GPU adapter found")
    assert after.warnings == (*before.warnings, "fell back to CPU: no GPU adapter found")
    assert before.requested == "cpu" and before.fallback_reason is None  # untouched
    quiet = fell_back(before, "gpu", "gpu failed mid-run: lost", warn=False)
    assert quiet.fallback_reason == "gpu failed mid-run: lost" and quiet.warnings == before.warnings
    assert dataclasses.replace(after, fallback_reason=None, requested="cpu", warnings=before.warnings) == before


def test_a_failure_on_the_cpu_is_the_models_and_keeps_the_session(cpu_session):
    spec, session = cpu_session
    failure = RunFailed("the LiteRT runtime failed to run the model")
    with pytest.raises(RunFailed) as raised:
        continue_on_cpu(session, failure, spec, "cpu", BackendOptions(threads=1), fallback=True)
    assert raised.value is failure
    assert session.run(np.zeros(spec.input.shape, spec.input_dtype)).size == spec.classes  # still open


_CHILD = """
import sys
import numpy as np
from app.backends import continue_on_cpu, open_session
from app.backends.options import BackendOptions
from app.errors import BackendUnavailable, ModelError, RunFailed
from app.model.spec import load_model_spec

spec = load_model_spec("efficientnet_lite0_int8")
options = BackendOptions(threads=1, allow_software=True)
gpu = open_session(spec, "gpu", options, fallback=False)
assert gpu.report.used == "gpu", gpu.report
try:
    continue_on_cpu(gpu, RunFailed("the GPU run failed: lost"), spec, "gpu", options, fallback=False)
except BackendUnavailable as exc:
    print("no-fallback:", exc)
cpu, threads = continue_on_cpu(gpu, RunFailed("the GPU run failed: lost"), spec, "gpu", options, fallback=True)
r = cpu.report
print("report:", r.requested, r.used, "|", r.fallback_reason, "|", r.warnings[-1])
print("runs:", cpu.run(np.zeros(spec.input.shape, spec.input_dtype)).size == spec.classes)
try:
    gpu.run(np.zeros(spec.input.shape, spec.input_dtype))
except ModelError as exc:
    print("old:", exc)
cpu.close()
"""


@pytest.mark.slow
def test_an_accelerator_failing_mid_run_goes_on_on_the_cpu_and_its_report_says_so(swiftshader: dict):
    run = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, **swiftshader}, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    lines = dict(line.split(": ", 1) for line in run.stdout.splitlines() if ": " in line)
    assert lines["no-fallback"] == "the gpu delegate failed mid-run: the GPU run failed: lost"
    assert lines["report"] == (
        "gpu cpu | gpu failed mid-run: the GPU run failed: lost | "
        "fell back to CPU: gpu failed mid-run: the GPU run failed: lost"
    )
    assert lines["runs"] == "True"
    assert lines["old"] == "the GPU run failed: the session is closed"  # the failed session was closed
