"""Security basics: nothing in app/ evaluates or unpickles data, and the CLI writes only where told."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

APP = ROOT / "app"

# Module attributes that turn bytes or text into code or objects: never on data from a user's file.
FORBIDDEN_CALLS = {
    ("pickle", "load"), ("pickle", "loads"), ("pickle", "Unpickler"),
    ("cPickle", "load"), ("cPickle", "loads"), ("dill", "load"), ("dill", "loads"),
    ("joblib", "load"), ("marshal", "load"), ("marshal", "loads"),
    ("shelve", "open"), ("shelve", "Shelf"), ("shelve", "DbfilenameShelf"),
    ("yaml", "load"), ("yaml", "load_all"), ("yaml", "unsafe_load"), ("yaml", "full_load"), ("yaml", "Loader"),
    ("os", "system"), ("os", "popen"), ("torch", "load"),
}  # fmt: skip
FORBIDDEN_BUILTINS = {"eval", "exec", "__import__"}
FORBIDDEN_MODULES = {"shelve", "marshal", "dill", "cPickle"}  # no legitimate use in the app at all
NUMPY = {"numpy", "np"}
SUBPROCESS = {"subprocess"}
# Narrow, explained exceptions: (file relative to the repo, line text fragment). None needed today.
ALLOWED: set[tuple[str, str]] = set()


def unsafe_calls(source: str, filename: str = "<test>") -> list[str]:
    """Every forbidden call or import in `source`, as "file:line: what"."""
    tree = ast.parse(source, filename)
    aliases: dict[str, str] = {}  # local name -> "module" or "module.attr"
    found: list[str] = []

    def flag(node: ast.AST, what: str) -> None:
        found.append(f"{filename}:{getattr(node, 'lineno', 0)}: {what}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name
                if a.name.split(".")[0] in FORBIDDEN_MODULES:
                    flag(node, f"import {a.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            root = node.module.split(".")[0]
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
                if root in FORBIDDEN_MODULES or (root, a.name) in FORBIDDEN_CALLS:
                    flag(node, f"from {node.module} import {a.name}")
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func, aliases)
        if name is None:
            continue
        parts = name.split(".")
        if len(parts) == 1 and parts[0] in FORBIDDEN_BUILTINS:
            flag(node, f"{parts[0]}()")
        elif len(parts) >= 2 and (parts[0], parts[-1]) in FORBIDDEN_CALLS:
            if not (parts[0] == "yaml" and parts[-1] == "load" and _safe_yaml_loader(node)):
                flag(node, f"{name}()")
        if parts[0] in NUMPY and parts[-1] == "load" and _keyword_true(node, "allow_pickle"):
            flag(node, f"{name}(allow_pickle=True)")
        if parts[0] in SUBPROCESS and _keyword_true(node, "shell"):
            flag(node, f"{name}(shell=True)")
    return found


def _dotted(func: ast.expr, aliases: dict[str, str]) -> str | None:
    """`pickle.loads`, `p.loads` (import pickle as p), `loads` (from pickle import loads) -> pickle.loads.
    A method on an object (`app.exec()`, Qt's event loop) resolves to nothing forbidden."""
    attrs: list[str] = []
    while isinstance(func, ast.Attribute):
        attrs.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    base = func.id
    if base in aliases:
        base = aliases[base]
    elif attrs:  # a local object's method, not a module's function
        return None
    return ".".join([base, *reversed(attrs)])


def _keyword_true(node: ast.Call, name: str) -> bool:
    for kw in node.keywords:
        if kw.arg == name:  # anything but a literal False counts: shell=flag could be True
            return not (isinstance(kw.value, ast.Constant) and kw.value.value in (False, None))
        if kw.arg is None:  # **options could carry it
            return True
    return False


def _safe_yaml_loader(node: ast.Call) -> bool:
    loader = next(
        (kw.value for kw in node.keywords if kw.arg == "Loader"), node.args[1] if len(node.args) > 1 else None
    )
    return isinstance(loader, ast.Attribute) and loader.attr in ("SafeLoader", "CSafeLoader")


def test_the_checker_catches_each_forbidden_pattern():
    """It must be able to fail: each snippet below is flagged, the harmless ones are not."""
    bad = [
        "eval(text)",
        "exec(code)",
        "__import__(name)",
        "import pickle\npickle.loads(data)",
        "import pickle as p\np.load(f)",
        "from pickle import loads\nloads(data)",
        "import marshal",
        "import shelve",
        "import yaml\nyaml.load(text)",
        "import yaml\nyaml.load(text, Loader=yaml.Loader)",
        "import yaml\nyaml.unsafe_load(text)",
        "import numpy as np\nnp.load(path, allow_pickle=True)",
        "import numpy\nnumpy.load(path, allow_pickle=flag)",
        "import subprocess\nsubprocess.run(cmd, shell=True)",
        "import subprocess as sp\nsp.Popen(cmd, shell=True)",
        "from subprocess import check_output\ncheck_output(cmd, shell=True)",
        "import subprocess\nsubprocess.run(cmd, **kwargs)",
        "import os\nos.system(cmd)",
    ]
    for source in bad:
        assert unsafe_calls(source), (source, unsafe_calls(source))
    harmless = [
        "app.exec()",
        "import pickle\npickle.dumps(obj)",
        "import yaml\nyaml.safe_load(text)",
        "import yaml\nyaml.load(text, Loader=yaml.SafeLoader)",
        "import numpy as np\nnp.load(path)",
        "import numpy as np\nnp.load(path, allow_pickle=False)",
        "import subprocess\nsubprocess.run([sys.executable, '-c', code], shell=False)",
        "re.compile(pattern)",
        "stub.loads(data)",
    ]
    for source in harmless:
        assert unsafe_calls(source) == [], source


@pytest.mark.slow
def test_no_module_in_app_evaluates_or_unpickles_anything():
    files = sorted(APP.rglob("*.py"))
    assert len(files) > 30  # the whole package, not an empty glob
    found = []
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        for finding in unsafe_calls(source, rel):
            line = lines[int(finding.split(":")[1]) - 1]
            if not any(rel == f and fragment in line for f, fragment in ALLOWED):
                found.append(f"{finding}    {line.strip()}")
    assert not found, "\n".join(found)


def _snapshot(root: Path) -> dict[str, int]:
    return {p.relative_to(root).as_posix(): p.stat().st_size for p in root.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_bench_and_report_write_only_into_the_chosen_folder(tmp_path: Path):
    home, config, cache, tmp, cwd, out = (tmp_path / n for n in ("home", "config", "cache", "tmp", "cwd", "out"))
    for folder in (home, config, cache, tmp, cwd, out):
        folder.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "MPL", "DELEGATE_SCOPE"))}
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(config),
        XDG_CACHE_HOME=str(cache),
        TMPDIR=str(tmp),
        PYTHONPATH=str(ROOT),  # cwd is an empty folder, so `python -m app` needs the checkout on the path
        PYTHONDONTWRITEBYTECODE="1",
    )

    def run(*args: str | Path) -> subprocess.CompletedProcess:
        proc = subprocess.run(
            [sys.executable, "-m", "app", *map(str, args)],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert proc.returncode == 0, proc.stderr
        return proc

    before = _snapshot(tmp_path)
    assert before == {}
    run("bench", "--frames", "20", "--source", "synthetic", "--threads", "1",
        "--csv", out / "run.csv", "--json", out / "summary.json")  # fmt: skip
    run("report", out / "run.csv", "--out", out / "r.html")
    after = _snapshot(tmp_path)
    outside = sorted(p for p in after if not p.startswith(("out/", "cache/matplotlib/")))
    assert outside == [], f"files written outside the output folder: {outside}"
    assert {"out/run.csv", "out/run.csv.meta.json", "out/summary.json", "out/r.html"} <= set(after)
    assert all(size > 0 for p, size in after.items() if p.startswith("out/"))
    assert not any(p.startswith("tmp/") for p in after)  # the native-log file is removed at exit
