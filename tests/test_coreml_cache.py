"""The on-disk cache of converted Core ML programs (app/coreml_mil/cache.py).

The cache checks what it reads, not what it stores: most tests here build entries with a small
builder writing real files; one test runs the real translator and converter in a child process.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.coreml_mil.cache import IO, MANIFEST, CachedPiece, CacheKey, ProgramCache, tree_sha256
from tests.helpers.paths import ROOT


def _key(n: int = 0, precision: str = "fp16") -> CacheKey:
    return CacheKey(f"{n:064x}", precision, 3, 1, "9.0")


class Builder:
    """Writes piece0.mlpackage with one file of `size` bytes; counts its calls."""

    def __init__(self, size: int = 100) -> None:
        self.size, self.calls = size, 0

    def __call__(self, folder: Path) -> list[CachedPiece]:
        self.calls += 1
        package = folder / "piece0.mlpackage" / "Data"
        package.mkdir(parents=True)
        (package / "model.mlmodel").write_bytes(os.urandom(self.size))
        return [CachedPiece(0, "piece0.mlpackage", (IO("in_0", 0, (1, 4)),), (IO("out_3", 3, (1, 2)),))]


def test_second_load_is_a_hit_with_the_same_pieces(tmp_path: Path):
    cache, build = ProgramCache(tmp_path), Builder()
    first = cache.load_or_build(_key(), build)
    second = cache.load_or_build(_key(), build)
    assert (first.hit, second.hit, build.calls) == (False, True, 1)
    assert second.pieces == first.pieces and second.pieces[0].inputs[0] == IO("in_0", 0, (1, 4))
    assert cache.load_or_build(_key(precision="fp32"), build).hit is False  # options are part of the key


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda e: (e / MANIFEST).write_text("{not json"), "does not parse"),
        (lambda e: (e / MANIFEST).write_bytes(b"\xff\xfe\x00"), "does not parse"),
        (lambda e: (e / "piece0.mlpackage" / "Data" / "model.mlmodel").write_bytes(b"other"), "changed"),
        (lambda e: _edit(e, lambda m: m["key"].update(model_sha256="f" * 64)), "another model"),
        (lambda e: _edit(e, lambda m: m["pieces"][0].update(package="../../elsewhere")), "bad package name"),
        (lambda e: _edit(e, lambda m: m.update(format="other")), "not one this version writes"),
        (lambda e: _edit(e, lambda m: m["pieces"][0]["inputs"][0].update(name="x; rm")), "bad input/output name"),
        (lambda e: (e / MANIFEST).unlink(), "no manifest"),
    ],
)
def test_a_damaged_entry_is_rebuilt_with_the_reason(tmp_path: Path, damage, reason: str):
    cache, build = ProgramCache(tmp_path), Builder()
    entry = cache.load_or_build(_key(), build)
    damage(entry.path)
    again = cache.load_or_build(_key(), build)
    assert again.hit is False and build.calls == 2
    assert reason in (again.rebuilt_because or ""), again.rebuilt_because
    assert cache.load_or_build(_key(), build).hit is True


def _edit(entry: Path, change) -> None:
    manifest = json.loads((entry / MANIFEST).read_text())
    change(manifest)
    (entry / MANIFEST).write_text(json.dumps(manifest))


def test_a_link_in_a_package_is_refused(tmp_path: Path):
    cache, build = ProgramCache(tmp_path / "cache"), Builder()
    entry = cache.load_or_build(_key(), build)
    secret = tmp_path / "secret"
    secret.write_text("not the cache's")
    (entry.path / "piece0.mlpackage" / "link").symlink_to(secret)
    again = cache.load_or_build(_key(), build)
    assert again.hit is False and "link" in again.rebuilt_because
    assert secret.read_text() == "not the cache's"


def test_foreign_files_are_left_alone(tmp_path: Path):
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "other-folder").mkdir()
    (tmp_path / ("a" * 63 + "Z")).mkdir()  # looks almost like an entry
    cache = ProgramCache(tmp_path, max_entries=1)
    for n in range(3):
        cache.load_or_build(_key(n), Builder())
    assert (tmp_path / "notes.txt").read_text() == "mine"
    assert (tmp_path / "other-folder").is_dir() and (tmp_path / ("a" * 63 + "Z")).is_dir()
    assert len(cache.entries()) == 1


def test_the_cache_is_bounded_least_recently_used_first(tmp_path: Path):
    cache = ProgramCache(tmp_path, max_entries=2)
    for n in range(2):
        cache.load_or_build(_key(n), Builder())
        time.sleep(0.02)  # distinct modification times
    cache.load_or_build(_key(0), Builder())  # key 0 used again: key 1 is now the oldest
    time.sleep(0.02)
    cache.load_or_build(_key(2), Builder())
    names = {p.name for p in cache.entries()}
    assert names == {_key(0).digest(), _key(2).digest()}
    small = ProgramCache(tmp_path / "bytes", max_entries=10, max_bytes=3500)  # two entries of ~1.6 kB fit
    for n in range(4):
        small.load_or_build(_key(n), Builder(size=1000))
        time.sleep(0.02)
    assert [p.name for p in small.entries()] == [_key(2).digest(), _key(3).digest()]


def test_a_failed_build_leaves_nothing_behind(tmp_path: Path):
    cache = ProgramCache(tmp_path)

    def fails(folder: Path) -> list[CachedPiece]:
        (folder / "piece0.mlpackage").mkdir()
        raise RuntimeError("conversion failed")

    with pytest.raises(RuntimeError):
        cache.load_or_build(_key(), fails)
    assert list(tmp_path.iterdir()) == []


def test_tree_hash_sees_names_and_bytes(tmp_path: Path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x").write_bytes(b"1")
    before = tree_sha256(tmp_path / "a")
    (tmp_path / "a" / "x").rename(tmp_path / "a" / "y")
    assert tree_sha256(tmp_path / "a") != before


_REAL = """
import json, sys, time
from pathlib import Path
from app.coreml_mil.cache import ProgramCache
from app.coreml_mil.programs import load_or_convert
data = Path(sys.argv[1]).read_bytes()
cache = ProgramCache(Path(sys.argv[2]))
runs = [load_or_convert(data, "fp16", cache=cache) for _ in range(2)]
print(json.dumps({"hits": [r.entry.hit for r in runs], "seconds": [r.seconds for r in runs],
                  "packages": [p.package for p in runs[1].entry.pieces], "tf": "tensorflow" in sys.modules}))
"""


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("coremltools") is None, reason="needs coremltools (the convert extra)")
def test_real_programs_are_cached(tmp_path: Path):
    from app.model.spec import bundled_models

    path = bundled_models()["efficientnet_lite0"]
    proc = subprocess.run(
        [sys.executable, "-c", _REAL, str(path), str(tmp_path)], capture_output=True, text=True, timeout=600, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["hits"] == [False, True]
    assert result["packages"] == ["piece0.mlpackage", "piece2.mlpackage"]
    assert result["seconds"][1] < result["seconds"][0]
    assert result["tf"] is False  # the app's path converts without importing TensorFlow
