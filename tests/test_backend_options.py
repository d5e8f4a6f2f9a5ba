"""The names the command line, the settings and the JSON/CSV files spell (app/backends/options.py), and
the report's typed Core ML mode at its JSON edge."""

from __future__ import annotations

import argparse
import json

import pytest

from app.backends import BACKENDS
from app.backends.base import CoreMLMode, DelegationReport
from app.backends.options import BackendOptions, ComputeUnits, Delegate, GpuPrecision


def test_names_read_as_their_values_in_text_json_and_messages():
    for name in (*Delegate, *GpuPrecision, *ComputeUnits):
        assert str(name) == f"{name}" == name.value and repr(name) == repr(name.value)
    assert json.dumps({Delegate.GPU: GpuPrecision.FP32}) == '{"gpu": "fp32"}'
    parser = argparse.ArgumentParser(exit_on_error=False)
    parser.add_argument("--units", choices=list(ComputeUnits))
    with pytest.raises(argparse.ArgumentError, match=r"choose from 'all', 'cpu_and_ne', 'cpu_and_gpu', 'cpu_only'\)"):
        parser.parse_args(["--units", "gpu"])


def test_the_registry_and_the_lower_layers_spell_the_same_names():
    assert list(BACKENDS) == list(Delegate)
    # One place: app/system/names.py, below coreml_mil, which spells the translation's precision with it.
    import app.coreml_mil.translate as translate
    import app.system.names as names

    assert translate.GpuPrecision is names.GpuPrecision is GpuPrecision
    assert ComputeUnits.CPU_AND_NE.coremltools_name == "CPU_AND_NE"


def test_options_from_a_mapping_keep_the_strings_given_and_name_an_unknown_key():
    options = BackendOptions.of({"precision": "fp32", "compute_units": None, "threads": None})
    assert options == BackendOptions(precision=GpuPrecision.FP32) and options.compute_units is ComputeUnits.ALL
    with pytest.raises(TypeError, match=r"unknown backend option.*: units"):
        BackendOptions.of({"units": "all"})


@pytest.mark.parametrize(
    "mode, second", [(CoreMLMode.PARTITIONED, "precision"), (CoreMLMode.EXPORTED_PACKAGE, "mlpackage")]
)
def test_the_core_ml_mode_is_a_field_and_third_in_the_json_options(mode: CoreMLMode, second: str):
    options = {"compute_units": "all", second: "x", "threads": 1}
    report = DelegationReport("coreml", "coreml", "Core ML (compute units: all)", options=options, coreml_mode=mode)
    written = json.dumps(report.to_dict())
    assert list(json.loads(written)["options"]) == ["compute_units", second, "mode", "threads"]
    assert json.loads(written)["options"]["mode"] == mode.value and "coreml_mode" not in json.loads(written)
    back = DelegationReport.from_dict(json.loads(written))
    assert back.coreml_mode is mode and back.options == options and json.dumps(back.to_dict()) == written
    cpu = DelegationReport("cpu", "cpu", "XNNPACK", options={"threads": 2})
    assert cpu.to_dict()["options"] == {"threads": 2} and DelegationReport.from_dict(cpu.to_dict()) == cpu
