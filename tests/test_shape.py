"""The shape the project promises (docs/architecture.md), checked: typed seams (few functions hand a
bare dict across a module boundary), every type: ignore explained, and CI running exactly the README's
test command. The layers, cycles and the top of app/ are tests/test_import_rule.py's."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app"

# Functions whose job is to build the JSON/CSV edge: a dict is their point.
EDGE_NAMES = {"to_dict", "as_json", "to_json", "as_dict", "to_row", "as_row"}
MAX_DICT_RETURNS = 15  # data crosses layers as frozen dataclasses; what remains should be private helpers at an edge


def bare_dict_returns(folder: Path = APP) -> list[str]:
    hits = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
                returns = ast.unparse(node.returns)
                bare = returns == "dict" or returns.startswith(("dict[str, Any]", "dict | None"))
                if bare and node.name not in EDGE_NAMES:
                    hits.append(f"{path.relative_to(folder.parent)}:{node.lineno} {node.name} -> {returns}")
    return hits


def test_few_functions_return_a_bare_dict():
    hits = bare_dict_returns()
    assert len(hits) <= MAX_DICT_RETURNS, "\n".join(hits)


def test_the_counter_sees_a_bare_dict(tmp_path):
    """The bound above means something only if the scan finds what it looks for."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "m.py").write_text(
        "from typing import Any\n"
        "def f() -> dict:\n    return {}\n"
        "def g() -> dict[str, Any]:\n    return {}\n"
        "def h() -> dict[str, int]:\n    return {}\n"  # typed values: not bare
        "def to_dict() -> dict:\n    return {}\n"  # the JSON edge, by name
    )
    assert [hit.split(" ")[1] for hit in bare_dict_returns(pkg)] == ["f", "g"]


def readme_test_command() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split("## Test it", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return block.strip()


def test_ci_runs_exactly_the_readme_test_command():
    command = readme_test_command()
    assert "mypy" in command and "pytest" in command and "ruff" in command
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert command in [line.strip() for line in ci_lines]


def test_every_type_ignore_says_why_on_its_line():
    silent = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in sorted(APP.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "# type: ignore" in line and "  # " not in line.split("# type: ignore", 1)[1]
    ]
    assert silent == []
