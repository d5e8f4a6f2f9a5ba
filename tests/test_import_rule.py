"""The core never imports Qt or TensorFlow: checked statically (ruff TID251 in CI) and here at run time;
and imports go one way (import-linter's contracts in pyproject.toml, docs/architecture.md)."""

import pkgutil
import subprocess
import sys
from pathlib import Path

import app
from tests.conftest import ROOT


def core_modules() -> list[str]:
    return [
        m.name
        for m in pkgutil.walk_packages(app.__path__, "app.")
        if not m.name.startswith("app.ui") and m.name != "app.__main__"
    ]


def test_importing_every_core_module_loads_no_qt_and_no_tensorflow():
    modules = core_modules()
    assert "app.model" in modules and "app.cli" in modules
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "banned = ('PySide6', 'shiboken6', 'pyqtgraph', 'tensorflow')\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in banned)\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == ""


def test_classify_end_to_end_never_imports_tensorflow():
    code = (
        "import sys\n"
        "from app.cli import main\n"
        "rc = main(['classify', '--top-k', '1', 'tests/data/photos/coffee.jpg'])\n"
        "assert rc == 0, rc\n"
        "print('tensorflow' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False"


def lint_imports(*config: str) -> subprocess.CompletedProcess:
    tool = Path(sys.executable).parent / "lint-imports"
    return subprocess.run([str(tool), *config], capture_output=True, text=True, cwd=ROOT)


def test_imports_go_one_way():
    run = lint_imports()
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert "0 broken" in run.stdout


def test_the_contract_check_catches_an_import_that_goes_up(tmp_path):
    """The pipeline does import the backends: a contract forbidding it must fail, or the check
    above would pass without looking."""
    config = tmp_path / "contracts.toml"
    config.write_text(
        '[tool.importlinter]\nroot_package = "app"\n\n[[tool.importlinter.contracts]]\n'
        'name = "upside down"\ntype = "layers"\nlayers = ["app.backends", "app.pipeline"]\n',
        encoding="utf-8",
    )
    run = lint_imports("--config", str(config))
    assert run.returncode != 0 and "app.pipeline" in run.stdout and "BROKEN" in run.stdout
