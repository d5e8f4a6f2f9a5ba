"""The core never imports Qt or TensorFlow: checked statically (ruff TID251 in CI) and here at run time;
and imports go one way (import-linter's contracts in pyproject.toml, docs/architecture.md)."""

import pkgutil
import subprocess
import sys
from pathlib import Path

import app
from tests.helpers.paths import ROOT


def core_modules() -> list[str]:
    return [
        m.name
        for m in pkgutil.walk_packages(app.__path__, "app.")
        if not m.name.startswith("app.ui") and m.name != "app.__main__"
    ]


def test_importing_every_core_module_loads_no_qt_and_no_tensorflow():
    modules = core_modules()
    assert "app.model.spec" in modules and "app.cli.main" in modules
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
        "from app.cli.main import main\n"
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


def test_a_package_of_app_that_no_layer_names_breaks_the_contract(tmp_path):
    """The layered contract is exhaustive: leaving a package out of it (here `tasks`) must fail,
    so a new module cannot sit outside every rule."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    layered = next(c for c in config["contracts"] if c.get("containers") == ["app"])
    assert layered["exhaustive"] is True
    layers = [layer for layer in layered["layers"] if layer != "tasks"]
    body = ",\n".join(f'    "{layer}"' for layer in layers)
    (tmp_path / "contracts.toml").write_text(
        '[tool.importlinter]\nroot_package = "app"\n\n[[tool.importlinter.contracts]]\n'
        f'name = "missing one"\ntype = "layers"\ncontainers = ["app"]\nexhaustive = true\nlayers = [\n{body}\n]\n',
        encoding="utf-8",
    )
    run = lint_imports("--config", str(tmp_path / "contracts.toml"))
    assert run.returncode != 0 and "app.tasks" in run.stdout


def import_cycles(package: str = "app") -> list[list[str]]:
    """Strongly connected components of more than one module in the import graph (grimp, the
    library under import-linter), TYPE_CHECKING and function-level imports included."""
    import grimp

    graph = grimp.build_graph(package, cache_dir=None)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's algorithm; the graph is ~150 modules deep at most
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return cycles


def test_no_module_of_app_is_in_an_import_cycle():
    assert import_cycles() == []


def test_the_cycle_check_finds_a_cycle(tmp_path):
    pkg = tmp_path / "cyclic"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from cyclic import b\n")
    (pkg / "b.py").write_text("def f():\n    from cyclic import a\n")
    sys.path.insert(0, str(tmp_path))
    try:
        assert import_cycles("cyclic") == [["cyclic.a", "cyclic.b"]]
    finally:
        sys.path.remove(str(tmp_path))


def test_at_most_eight_modules_sit_directly_in_app():
    top = sorted(p.name for p in (ROOT / "app").glob("*.py"))
    assert len(top) <= 8, top
