"""The machine output's contract (docs/json.md): every kind of JSON output carries schema_version and
validates against the schema that ships in the package; a broken document does not; the schemas are in
the wheel. Each kind is built here once, so every schema is exercised whatever the other tests do."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import pytest

from app.profile.sidecar import write_profile
from app.profile.types import Profile
from app.schemas import SCHEMA_VERSION, OutputKind, schema, versioned
from tests.helpers.cli import CliRun, run_cli
from tests.helpers.forked_cli import ForkedCli
from tests.helpers.paths import PHOTOS, ROOT, TEST_MODELS
from tests.helpers.schemas import kind_of_file, validate, validate_file
from tests.helpers.vulkan import NO_VULKAN

# One worker builds every kind of output once for all the tests here (the module's fixture: ~17 s).
pytestmark = pytest.mark.xdist_group("json_schemas")

COFFEE = str(PHOTOS / "coffee.jpg")


@pytest.fixture(scope="session")  # kept while other modules run between these tests on the worker
def outputs(tmp_path_factory: pytest.TempPathFactory, forked_cli: ForkedCli) -> dict[OutputKind, list[dict]]:
    """One document (or a few) of every kind, from the real commands (forked from one process that imported
    the app: tests/helpers/forked_cli.py), the window's in a fresh one beside them: it waits out --exit-after."""
    tmp = tmp_path_factory.mktemp("outputs")
    got: dict[OutputKind, list[dict]] = {}
    window: list[CliRun] = []
    beside = threading.Thread(target=lambda: window.append(run_cli(
        "gui", "--source", "synthetic", "--exit-after", "3", "--settings", tmp / "s.ini", "--stats",
        tmp / "stats.json", env={"QT_QPA_PLATFORM": "offscreen", **NO_VULKAN}, timeout=180)))  # fmt: skip
    beside.start()
    try:
        _outputs(forked_cli, tmp, got)
    finally:
        beside.join()
    (run,) = window
    assert run.returncode == 0, run.stderr
    got.setdefault(OutputKind.WINDOW_STATS, []).append(json.loads((tmp / "stats.json").read_text(encoding="utf-8")))
    return got


def _outputs(cli: ForkedCli, tmp: Path, got: dict[OutputKind, list[dict]]) -> None:
    run_cli = cli.run

    def stdout(kind: OutputKind, *args: str, code: int = 0) -> dict:
        run = run_cli(*args, env=NO_VULKAN)
        assert run.returncode == code, run.stderr
        got.setdefault(kind, []).append(run.json())
        return run.json()

    def file(kind: OutputKind, path: Path) -> None:
        got.setdefault(kind, []).append(json.loads(path.read_text(encoding="utf-8")))

    stdout(OutputKind.CLASSIFY, "classify", "--json", COFFEE, "/nonexistent/x.jpg", code=4)  # with an error entry
    stdout(OutputKind.CLASSIFY, "classify", "--delegate", "coreml", "--json", COFFEE)  # predicted, pieces
    stdout(OutputKind.PREDICT, "predict", "--json", COFFEE)
    stdout(OutputKind.PREDICT, "predict", "--json", "--model", str(TEST_MODELS / "detector_like.tflite"), COFFEE)
    stdout(OutputKind.INSPECT, "inspect", "--json")
    stdout(OutputKind.INSPECT, "inspect", "--json", "--require", "cpu:full", "coreml:full", code=7)
    stdout(OutputKind.DELEGATES, "delegates", "--json")
    stdout(OutputKind.NUMERICS, "numerics", "--json", "--delegate", "cpu", "--against", "reference")
    profiled = stdout(OutputKind.PROFILE, "profile", "--json", "--runs", "2")
    stdout(OutputKind.PROFILE, "profile", "--json", "--runs", "2", "--model", str(TEST_MODELS / "text_input.tflite"))
    run = run_cli("bench", "--frames", "10", "--warmup", "1", "--source", "synthetic", "--csv", tmp / "b.csv",
                  "--json", tmp / "b.json", env=NO_VULKAN)  # fmt: skip
    assert run.returncode == 0, run.stderr
    file(OutputKind.BENCH, tmp / "b.json")
    file(OutputKind.RECORDING, tmp / "b.csv.meta.json")
    # Against that baseline: the gates' table, and the rounds and power sections, in the schema too.
    run = run_cli("bench", "--frames", "10", "--warmup", "1", "--source", "synthetic", "--json", tmp / "b2.json",
                  "--baseline", tmp / "b.json", "--budget", "inference.p50<=+1000%", env=NO_VULKAN)  # fmt: skip
    assert run.returncode == 0, run.stderr
    gated = json.loads((tmp / "b2.json").read_text())
    assert {"gates", "rounds", "power"} <= set(gated), sorted(gated)
    file(OutputKind.BENCH, tmp / "b2.json")
    stdout(OutputKind.COMPARE, "compare", str(tmp / "b.json"), str(tmp / "b2.json"), "--json")
    run = run_cli("bench", "--frames", "10", "--warmup", "1", "--source", "synthetic", "--compare-with", "cpu",
                  "--compare-model", "efficientnet_lite0_int8", "--compare-alone-seconds", "0", "--csv",
                  tmp / "ab.csv", "--json", tmp / "ab.json", env=NO_VULKAN)  # fmt: skip
    assert run.returncode == 0, run.stderr
    file(OutputKind.BENCH_COMPARE, tmp / "ab.json")
    file(OutputKind.RECORDING, tmp / "ab-a.csv.meta.json")
    run = run_cli("sweep", "--frames", "4", "--warmup", "1", "--model", "efficientnet_lite0_int8", "--json",
                  tmp / "s.json", env=NO_VULKAN)  # fmt: skip
    assert run.returncode == 0, run.stderr
    file(OutputKind.SWEEP, tmp / "s.json")
    # The Ops view writes this beside a recording it profiled (app/live/ops.py): the same writer here.
    file(OutputKind.PROFILE_SIDECAR, write_profile(tmp / "p.csv", Profile.from_dict(profiled["profile"])))


@pytest.mark.slow
def test_every_kind_of_output_is_versioned_and_valid(outputs: dict[OutputKind, list[dict]]):
    assert set(outputs) == set(OutputKind)  # a new kind of output brings its schema and a case here
    for kind, documents in outputs.items():
        for document in documents:
            assert next(iter(document)) == "schema_version" and document["schema_version"] == SCHEMA_VERSION
            validate(document, kind, kind.value)


@pytest.mark.slow
def test_a_broken_document_fails_its_schema(outputs: dict[OutputKind, list[dict]]):
    inspected = outputs[OutputKind.INSPECT][0]
    breakages = {
        "no schema_version": lambda d: d.pop("schema_version"),
        "another version": lambda d: d.update(schema_version=2),
        "a count as text": lambda d: d["coverage"]["cpu"].update(nodes_delegated="61"),
        "a required key gone": lambda d: d["coverage"].pop("gpu"),
        "a node's index missing": lambda d: d["coverage"]["coreml"]["nodes"][0].pop("index"),
        "an unknown coverage source": lambda d: d["coverage"]["coreml"].update(source="guessed"),
    }
    for name, breaking in breakages.items():
        broken = copy.deepcopy(inspected)
        breaking(broken)
        with pytest.raises(AssertionError, match=r"breaks inspect\.schema\.json"):
            validate(broken, OutputKind.INSPECT, name)
    listed = outputs[OutputKind.DELEGATES][0]["delegates"]  # the list delegates --json printed before version 1
    with pytest.raises(AssertionError, match=r"breaks delegates\.schema\.json"):
        validate(listed, OutputKind.DELEGATES)
    bench = copy.deepcopy(outputs[OutputKind.BENCH][0])
    bench["metrics"]["latency"]["inference"]["count"] = 1.5
    with pytest.raises(AssertionError, match="at metrics/latency/inference/count"):
        validate(bench, OutputKind.BENCH)


@pytest.mark.slow
def test_adding_a_key_is_not_a_breaking_change(outputs: dict[OutputKind, list[dict]]):
    """The policy docs/json.md states: new keys (bench and sweep baselines' rounds, say) keep version 1."""
    for kind, documents in outputs.items():
        validate({**documents[0], "a_new_key": {"rounds": 5}}, kind, kind.value)


@pytest.mark.slow
def test_the_teardown_check_finds_files_by_name_and_by_keys(tmp_path: Path, outputs: dict[OutputKind, list[dict]]):
    sweep = tmp_path / "anything.json"
    sweep.write_text(json.dumps(outputs[OutputKind.SWEEP][0]))
    assert validate_file(sweep) is OutputKind.SWEEP
    sidecar = tmp_path / "r.csv.meta.json"
    sidecar.write_text(json.dumps({**outputs[OutputKind.RECORDING][0], "rows": "many"}))
    with pytest.raises(AssertionError, match=r"breaks recording\.schema\.json: at rows"):
        validate_file(sidecar)
    sidecar.unlink()  # else this test's own teardown check fails on it, as it should
    assert kind_of_file(tmp_path / "m.json", {"graphs": []}) is None  # not ours: no schema_version
    with pytest.raises(AssertionError, match="of no known kind"):
        kind_of_file(tmp_path / "x.json", versioned({"something": 1}))


def test_each_kind_has_a_draft_2020_12_schema_with_version_and_open_top_level():
    from jsonschema import Draft202012Validator

    files = {p.name for p in (ROOT / "app" / "schemas").glob("*.schema.json")}
    assert files == {k.schema_file for k in OutputKind} | {"common.schema.json"}
    for kind in OutputKind:
        document = schema(kind)
        Draft202012Validator.check_schema(document)
        assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        assert document["properties"]["schema_version"] == {"type": "integer", "const": SCHEMA_VERSION}
        assert "schema_version" in document["required"] and "additionalProperties" not in document


@pytest.mark.slow
def test_the_schemas_ship_in_the_wheel(tmp_path: Path):
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", tmp_path, ROOT],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    (wheel,) = tmp_path.glob("delegate_scope-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"app/schemas/{k.schema_file}" for k in OutputKind} | {"app/schemas/common.schema.json"} <= names
