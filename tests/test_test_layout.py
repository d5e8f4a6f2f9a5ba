"""The test folder's own shape: code shared between tests lives in tests/helpers, tests/builders and
tests/harness; a test module never imports another test module, nor conftest.py (fixtures reach tests
through pytest, not imports), so each test file can be read, moved and run on its own."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.helpers.paths import ROOT

TESTS = ROOT / "tests"
# `python -c` code handed to child processes imports too: "from tests.test_x import y" in a string.
IMPORT_IN_TEXT = re.compile(r"\b(?:from|import)\s+((?:tests\.)?[\w.]+)")


def _is_test_module(dotted: str) -> bool:
    last = dotted.rsplit(".", 1)[-1]
    return last.startswith("test_") or last == "conftest"


def imported_test_modules(source: str, strings: bool = True) -> list[str]:
    """The test modules (test_*.py, conftest.py) that this Python source imports, at any depth,
    relative imports and (with `strings`) child-process code in string constants included."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if _is_test_module(alias.name)]
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            if node.module and _is_test_module(node.module):
                found.append(module)
            found += [f"{module}.{a.name}" for a in node.names if _is_test_module(a.name)]
        elif strings and isinstance(node, ast.Constant) and isinstance(node.value, str) and "import" in node.value:
            found += [m for m in IMPORT_IN_TEXT.findall(node.value) if m.startswith("tests.") and _is_test_module(m)]
    return found


def python_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("*.py") if "data" not in p.relative_to(TESTS).parts)


def test_no_test_module_imports_another_test_module_or_conftest():
    files = python_files()
    assert TESTS / "test_test_layout.py" in files and TESTS / "helpers" / "wait.py" in files
    offenders = {
        str(path.relative_to(ROOT)): found
        for path in files
        # This file's own strings are the examples below, each an import the check must catch.
        if (found := imported_test_modules(path.read_text(encoding="utf-8"), strings=path.name != Path(__file__).name))
    }
    assert offenders == {}, "move what they share to tests/helpers/ (or builders/, harness/)"


def test_the_check_sees_each_way_of_importing_a_test_module():
    """Each of these must be caught, or the test above would pass without looking."""
    caught = [
        "from tests.test_pipeline import start",
        "import tests.test_sources",
        "from tests.conftest import ROOT",
        "from tests import test_sources",
        "from .test_window import wait_for_results",
        "from . import conftest",
        "def f():\n    from tests.ui.test_window import wait_for_results",
        "CODE = 'import json; from tests.test_sources import write_video; print(1)'",
    ]
    for source in caught:
        assert imported_test_modules(source), source
    fine = [
        "from tests.helpers.wait import wait_until",
        "from tests.harness import reader_fuzz",
        "import pytest",
        "CODE = 'from tests.harness.switch_soak import run_switches'",
        "X = 'test_ data, no import here'",
    ]
    for source in fine:
        assert not imported_test_modules(source), source


# tests/README.md, "Where a module's tests are": by name, or a row of its map.
MAP_ROW = re.compile(r"^\| `(app/[\w/]+\.py)` \| (.+) \|$", re.MULTILINE)


def app_modules() -> list[Path]:
    """The app's modules with code of their own (a package's __init__.py that only re-exports is not one)."""
    found = []
    for path in sorted((ROOT / "app").rglob("*.py")):
        if "__pycache__" in path.parts or path.name == "__main__.py":
            continue
        body = ast.parse(path.read_text(encoding="utf-8")).body
        if path.name != "__init__.py" or any(isinstance(n, ast.FunctionDef | ast.ClassDef) for n in body):
            found.append(path)
    return found


def named_tests(module: Path) -> list[Path]:
    parts = module.relative_to(ROOT / "app").with_suffix("").parts
    parts = parts[:-1] if parts[-1] == "__init__" else parts
    folder = TESTS / "ui" if parts[0] == "ui" else TESTS
    names = [parts[-1]]
    if len(parts) > 1:
        names += [f"{parts[-2]}_{parts[-1]}", f"{parts[-2].removesuffix('s')}_{parts[-1]}"]
    return [folder / f"test_{name}.py" for name in names if (folder / f"test_{name}.py").exists()]


def test_every_app_module_has_its_tests_by_name_or_in_the_map():
    rows = dict(MAP_ROW.findall((TESTS / "README.md").read_text(encoding="utf-8")))
    assert "app/pipeline/capture.py" in rows  # the map was read
    modules = [str(m.relative_to(ROOT)) for m in app_modules() if not named_tests(m)]
    assert [m for m in modules if m not in rows] == [], "add tests/test_<module>.py or a row to tests/README.md's map"
    named = {f for files in rows.values() for f in re.findall(r"`([^`]+)`", files)}
    gone = sorted(p for p in {*rows, *named} if not (ROOT / p).is_file())
    assert gone == [], "tests/README.md's map names files that do not exist"
