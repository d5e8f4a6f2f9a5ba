"""The desktop bundle (packaging/, docs/packaging.md): built with the one documented command, then run.

The slow tests build the PyInstaller bundle into a temporary folder with `packaging/build.py` (which
fails when the Linux bundle is over budget or lacks a model, the demo clip or a LiteRT library), then
run its executable from outside the source tree and compare what it says with the installed package:
`delegates --json` (the GPU probe runs as a child of the bundle too), `classify --json` (top-k labels
and scores exactly), `bench --source demo --frames 50` (model hash, delegation facts, and the labels
and scores of every frame both runs inferred), `gui` on a virtual display (screenshot not blank,
frames displayed) and `report`. CI runs them (.ci/run runs the whole suite); the same test runs on
macOS and Windows in .github/workflows/bundle.yml.
"""

from __future__ import annotations

import csv
import json
import os
import plistlib
import shutil
import subprocess
import sys
from configparser import ConfigParser
from pathlib import Path

import cv2
import numpy as np
import pytest

from tests.helpers.bundle_build import BundleBuild
from tests.helpers.paths import PHOTOS, ROOT

# One worker runs both modules: the rebuild starts the bundle's build beside its own (tests/helpers/bundle_build.py).
pytestmark = pytest.mark.xdist_group("bundle")

PACKAGING = ROOT / "packaging"
LINUX = sys.platform.startswith("linux")

# Timing and where-it-ran figures differ between any two runs; everything else must be equal.
VARYING = {"init_ms", "first_inference_ms", "cpu_per_wall", "native_log", "timing_ms", "inference_cpu_ms", "path"}
DEV_ONLY_BACKENDS = {"reference"}  # app/backends/reference.py: needs TensorFlow, which the bundle leaves out


def _without(obj: object, keys: set[str] = VARYING) -> object:
    if isinstance(obj, dict):
        return {k: _without(v, keys) for k, v in obj.items() if k not in keys}
    if isinstance(obj, list):
        return [_without(v, keys) for v in obj]
    return obj


# --- the packaging files themselves (fast) ---------------------------------------------------------


def test_info_plist_declares_the_camera_use() -> None:
    with open(PACKAGING / "Info.plist", "rb") as f:
        info = plistlib.load(f)
    assert len(info["NSCameraUsageDescription"]) > 20  # macOS kills an app that opens the camera without it
    assert info["CFBundleExecutable"] == "delegate-scope"
    assert info["CFBundlePackageType"] == "APPL"
    assert info["CFBundleIdentifier"].count(".") >= 2


def test_desktop_entry_and_icons() -> None:
    entry = ConfigParser(interpolation=None)
    entry.optionxform = str  # keys are case-sensitive
    entry.read(PACKAGING / "delegate-scope.desktop", encoding="utf-8")
    desktop = entry["Desktop Entry"]
    assert desktop["Type"] == "Application"
    assert desktop["Exec"].split()[0] == "delegate-scope"
    assert desktop["Icon"] == "delegate-scope"
    assert desktop["Categories"].endswith(";")
    png = cv2.imread(str(PACKAGING / "icon.png"), cv2.IMREAD_UNCHANGED)
    assert png.shape == (256, 256, 4) and png[..., 3].std() > 50  # a shape on a transparent background
    assert (PACKAGING / "icon.ico").read_bytes()[:4] == b"\x00\x00\x01\x00"
    assert (PACKAGING / "icon.icns").read_bytes()[:4] == b"icns"


# --- the bundle, built and run (slow) ------------------------------------------------------------------


def _env() -> dict[str, str]:
    """The caller's environment without what would point either program at other files or another display."""
    drop = {"DELEGATE_SCOPE_MODELS", "QT_QPA_PLATFORM", "PYTHONPATH"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def _installed() -> list[str]:
    script = Path(sys.executable).parent / ("delegate-scope.exe" if sys.platform == "win32" else "delegate-scope")
    return [str(script)] if script.exists() else [sys.executable, "-m", "app"]


def _run(cmd: list[str], cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=_env())
    assert proc.returncode == 0, f"{cmd}: exit {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory, bundle_build: BundleBuild) -> dict:
    """The bundle built into a temporary folder (started early when tests/test_build_models.py runs too:
    tests/helpers/bundle_build.py); DELEGATE_SCOPE_BUNDLE=build.json (from `build.py --json`) tests one
    built before instead (the CI workflow builds once, tests it, then uploads it)."""
    prebuilt = os.environ.get("DELEGATE_SCOPE_BUNDLE")
    if prebuilt:
        info = json.loads(Path(prebuilt).read_text(encoding="utf-8"))
    else:
        if not BundleBuild.possible():
            if os.environ.get("CI"):
                pytest.fail("CI is set but PyInstaller is missing: install the `test` extra")
            pytest.skip("PyInstaller is not installed (pip install -e '.[package]')")
        info = dict(bundle_build.wait())
    info["work"] = tmp_path_factory.mktemp("bundle_run")  # every command runs from here: outside the source tree
    return info


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_bundle_builds_within_budget_with_its_files(bundle: dict) -> None:
    assert bundle["problems"] == []
    if LINUX:
        assert bundle["size_bytes"] <= 450e6, bundle["breakdown"]
        exe_dir = Path(bundle["executable"]).parent
        for name in ("delegate-scope.desktop", "delegate-scope.png", "install-desktop-entry.sh"):
            assert (exe_dir / name).is_file(), name
    if sys.platform == "darwin":  # the built .app carries the camera usage description
        with open(Path(bundle["bundle"]) / "Contents" / "Info.plist", "rb") as f:
            assert f.read().count(b"NSCameraUsageDescription") == 1
    internal = Path(bundle["executable"]).parent / "_internal"
    if internal.is_dir():  # Linux, Windows: what must not be in it
        names = {p.name for p in internal.iterdir()}
        for unwanted in ("tensorflow", "torch", "keras", "pytest", "_pytest", "PyInstaller", "scipy"):
            assert unwanted not in names, unwanted
        assert not list(internal.rglob("*QtNetwork*")) and not list(internal.rglob("*Qt6Quick*"))


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_bundle_reports_the_same_delegates(bundle: dict) -> None:
    cwd = bundle["work"]
    frozen = json.loads(_run([bundle["executable"], "delegates", "--json"], cwd).stdout)["delegates"]
    installed = json.loads(_run([*_installed(), "delegates", "--json"], cwd).stdout)["delegates"]
    # The TensorFlow reference (A/B ground truth) runs only with the convert extra (a checkout or an installed
    # package): the bundle, which carries no TensorFlow by design, must say so instead of offering it.
    for entry in frozen:
        if entry["name"] in DEV_ONLY_BACKENDS:
            assert entry["available"] is False and "source checkout" in entry["reason"], entry
    frozen = [e for e in frozen if e["name"] not in DEV_ONLY_BACKENDS]
    installed = [e for e in installed if e["name"] not in DEV_ONLY_BACKENDS]
    assert _without(frozen) == _without(installed)
    gpu = next(d for d in frozen if d["name"] == "gpu")
    assert "probe crashed" not in str(gpu["reason"])  # the probe child (`-m app.backends.gpu.probe`) ran
    assert _run([bundle["executable"], "--version"], cwd).stdout == _run([*_installed(), "--version"], cwd).stdout


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("model", ["efficientnet_lite0", "efficientnet_lite0_int8"])
def test_bundle_classifies_like_the_installed_package(bundle: dict, model: str) -> None:
    photos = [str(PHOTOS / name) for name in ("grace_hopper.jpg", "coffee.jpg", "chelsea.jpg")]
    args = ["classify", "--json", "--model", model, "--top-k", "5", *photos]
    frozen = json.loads(_run([bundle["executable"], *args], bundle["work"]).stdout)
    installed = json.loads(_run([*_installed(), *args], bundle["work"]).stdout)
    assert [r["top"] for r in frozen["results"]] == [r["top"] for r in installed["results"]]  # labels and scores
    assert frozen["results"][0]["top"][0]["label"] == "military uniform"
    assert _without(frozen) == _without(installed)  # model hash, input, delegation facts, errors, warnings
    bundled_model = Path(frozen["model"]["path"]).resolve()
    assert Path(bundle["bundle"]).resolve() in bundled_model.parents  # its own copy, not the source tree's


def _inferences(path: Path) -> dict[str, tuple[str, str, str]]:
    with open(path, encoding="utf-8", newline="") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return {r["frame_id"]: (r["top_indices"], r["top_labels"], r["top_scores"]) for r in rows if r["frame_id"]}


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_bundle_benches_like_the_installed_package(bundle: dict) -> None:
    cwd = bundle["work"]
    out = {}
    for name, program in (("frozen", [bundle["executable"]]), ("installed", _installed())):
        summary, rec = cwd / f"bench-{name}-summary.json", cwd / f"bench-{name}.csv"
        _run([*program, "bench", "--source", "demo", "--frames", "50", "--json", str(summary), "--csv", str(rec)], cwd)
        out[name] = (json.loads(summary.read_text(encoding="utf-8")), _inferences(rec))
    (frozen, frozen_rows), (installed, installed_rows) = out["frozen"], out["installed"]
    assert frozen["metrics"]["inferences_total"] >= 50
    assert _without(frozen["delegate"]) == _without(installed["delegate"])
    assert frozen["config"] == installed["config"]
    for key in ("spec", "kind", "width", "height", "fps", "frame_count"):
        assert frozen["source"][key] == installed["source"][key], key
    sha = [next(e["model"]["sha256"] for e in s["events"] if e["kind"] == "open") for s in (frozen, installed)]
    assert sha[0] == sha[1]
    # The same frame of the demo clip gets the same labels and scores; which frames each run reached differs.
    common = sorted(set(frozen_rows) & set(installed_rows), key=int)
    assert len(common) >= 10, (sorted(frozen_rows, key=int)[:20], sorted(installed_rows, key=int)[:20])
    assert [frozen_rows[k] for k in common] == [installed_rows[k] for k in common]
    assert frozen_rows[common[0]][1].split("|")[0] == installed_rows[common[0]][1].split("|")[0]

    help_text = _run([bundle["executable"], "--help"], cwd).stdout
    try:
        import matplotlib  # noqa: F401  (the bundle carries it only when the environment it was built from has it)
    except ImportError:
        return
    if "report" in help_text:  # the `report` command (matplotlib) exists in this version of the app
        png = cwd / "report.png"
        _run([bundle["executable"], "report", str(cwd / "bench-frozen.csv"), "--out", str(png)], cwd)
        image = cv2.imread(str(png))
        assert image is not None and image.shape[0] > 200 and image.std() > 10


def _gui_prefix() -> list[str]:
    if not LINUX:
        return []  # macOS and Windows runners have a desktop session
    xvfb = shutil.which("xvfb-run")
    if xvfb is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set but xvfb-run is missing (apt-get install xvfb)")
        pytest.skip("xvfb-run is not installed")
    return [xvfb, "-a"]


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_bundle_opens_the_window(bundle: dict) -> None:
    cwd = bundle["work"]
    stats = {}
    for name, program in (("frozen", [bundle["executable"]]), ("installed", _installed())):
        shot, stats_file = cwd / f"window-{name}.png", cwd / f"window-{name}.json"
        args = [
            "gui",
            "--source",
            "demo",
            "--settings",
            str(cwd / f"settings-{name}.ini"),
            "--exit-after",
            "5",
            "--screenshot",
            str(shot),
            "--stats",
            str(stats_file),
        ]
        _run([*_gui_prefix(), *program, *args], cwd, timeout=240)
        image = cv2.imread(str(shot))
        assert image is not None, f"{name}: no screenshot"
        assert image.shape[0] >= 400 and image.shape[1] >= 600
        assert image.std() > 20 and len(np.unique(image.reshape(-1, 3), axis=0)) > 1000, f"{name}: blank window"
        stats[name] = json.loads(stats_file.read_text(encoding="utf-8"))
        assert stats[name]["frames_displayed"] > 0, stats[name]
    assert set(stats["frozen"]) == set(stats["installed"])
