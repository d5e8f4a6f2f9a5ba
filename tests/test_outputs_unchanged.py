"""The documented JSON and CSV outputs hold to golden files: a format changes only on purpose, with its
golden rewritten.

Each case runs the real command on fixed inputs and compares its output with a golden file under
tests/data/golden/, written by this same module from a checkout whose outputs are the reference:

    python tests/test_outputs_unchanged.py --write-goldens /path/to/old/checkout

What is compared, and how it is normalised (everything else is compared byte for byte):
- every command: the tree's own path reads `<ROOT>`, a test's temporary folder `<TMP>`, why no GPU
  adapter was found `<: the machine's reason>` (a Vulkan loader or a software driver installed or not),
  and `delegates`' list of Vulkan devices `<list of str>`;
- what the optional `convert` extra (TensorFlow, coremltools) installs: `delegates`' TensorFlow reference
  entry's `available` and `reason` read `<the convert extra's>` (checked first: available with no reason,
  or not with the documented one), and the sidecar lists coremltools' version exactly when it is installed,
  `<version, when installed>`: the golden holds with or without the extra;
- `delegates`, `inspect`, `classify` (deterministic on one machine: XNNPACK on fixed files): the JSON text
  exactly, but for timings (`*_ms` numbers and the numbers inside a `*_ms` object, `cpu_per_wall`),
  which read `<float>`: their key, place and type stay checked;
- `bench` (timings everywhere): the summary's skeleton (every key, in order, each number replaced by its
  type, strings with their digits replaced by 9, lists as their distinct elements) and the CSV's header
  exactly, the sequence of event rows, each kind of row's shape (per column, the shapes of its non-empty
  cells: a number as `%.6g` writes it, text, or the timestamp and t_s patterns) and which columns hold
  6 significant digits somewhere; the sidecar's skeleton likewise;
- `report` on two fixed recordings (tests/data/golden/input/, recorded by bench): the HTML page
  byte for byte but for its `generated` time, each embedded PNG as its size and sha256 (the goldens
  hold digests, not 400 kB of images; they follow the pinned matplotlib, as classify's scores follow
  the pinned LiteRT).
A key, a column, an order or a number's formatting that changes fails the test.
"""

from __future__ import annotations

import base64
import csv
import difflib
import hashlib
import importlib.util
import io
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent.parent
GOLDEN = HERE / "tests" / "data" / "golden"
INPUT = GOLDEN / "input"
PHOTOS = "tests/data/photos"
TEST_MODELS = ("detector_like", "dynamic_batch_logits", "dynamic_size", "text_input")
TIMING_KEYS = re.compile(r"^(.*_ms|.*_ms_\w+|wall_s|cpu_per_wall)$")


def _run(tree: Path, tmp: Path, *args: str, timeout: float = 300) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "app", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=tree,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    return proc.returncode, _paths(proc.stdout, tree, tmp), _paths(proc.stderr, tree, tmp)


def _paths(text: str, tree: Path, tmp: Path) -> str:
    text = text.replace(str(tmp), "<TMP>").replace(str(tree), "<ROOT>")
    # Why there is no GPU is the machine's (whether a Vulkan loader, a software driver are installed).
    return re.sub(r"no GPU adapter found[^\"\n]*", "no GPU adapter found<: the machine's reason>", text)


def _timings_out(value: object, timing: bool = False) -> object:
    """JSON with each timing value (a timing key's number, or the numbers of a timing key's object,
    such as classify's `timing_ms`) replaced by its type; key order kept."""
    if isinstance(value, dict):
        return {k: _timings_out(v, timing or bool(TIMING_KEYS.match(k))) for k, v in value.items()}
    if timing and isinstance(value, int | float) and not isinstance(value, bool):
        return f"<{type(value).__name__}>"
    if isinstance(value, list):
        return [_timings_out(v) for v in value]
    return value


# Prose with figures and a direction; A/B's disagreeing labels; the stage that bounds the rate (the
# capture or the model, as the machine's other work has it: a fresh clone's run read "inference" once).
_VOLATILE_TEXT = {"sentence", "a", "b", "stage"}
# The power state: a number where the machine exposes the counter (cpufreq, NVML), null where not.
_MACHINE_NUMBERS = {"gpu_sm_clock_mhz", "gpu_power_w", "cpu_mhz"}


def _skeleton(value: object, key: str = "") -> object:
    """Keys in order; numbers as their type; strings with digits as 9 (messages carry figures), or
    `<str>` where the words themselves follow timing; a list as its distinct element skeletons, in
    order (how many frames disagree, say, is the run's)."""
    if key == "power":  # each figure a number or null with its reason, as the machine's counters allow
        return "<the machine's power figures>"
    if key == "memory" and isinstance(value, dict) and "reasons" in value:  # NVML's figure, or why none
        value = {k: v for k, v in value.items() if k not in ("gpu_mb", "reasons")}
        return {**{k: _skeleton(v, k) for k, v in value.items()}, "gpu_mb": "<number or null, with its reason>"}
    if isinstance(value, dict):
        return {k: _skeleton(v, k) for k, v in value.items()}
    if isinstance(value, list):
        distinct: list[object] = []
        for element in (_skeleton(v) for v in value):
            if element not in distinct:
                distinct.append(element)
        return distinct
    if key in _MACHINE_NUMBERS and (value is None or isinstance(value, int | float)):
        return "<number or null>"
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int | float):
        return f"<{type(value).__name__}>"
    return "<str>" if key in _VOLATILE_TEXT else re.sub(r"\d+", "9", str(value))


def _cell_shape(column: str, cell: str) -> str:
    if column == "timestamp":
        return re.sub(r"\d", "9", cell)
    if column == "t_s":
        return re.sub(r"^9+", "9", re.sub(r"\d", "9", cell))
    try:
        number = float(cell)
    except ValueError:
        return "text"
    if f"{number:.6g}" == cell:
        return "g6"  # the writer's format for numbers (integers below 1e6 read the same)
    return "int" if re.fullmatch(r"-?\d+", cell) else "number, not as %.6g"


def _recording_shape(csv_text: str) -> dict[str, object]:
    """The header, the event rows in order, and per kind of row (an event, `-` for an inference) the
    shapes each column's non-empty cells take (whether a cell is empty follows timing: the sampler's
    first reading, a thread's CPU time)."""
    rows = list(csv.reader(io.StringIO(csv_text)))
    header, body = rows[0], rows[1:]
    shapes: dict[str, dict[str, set[str]]] = {}
    for row in body:
        cells = dict(zip(header, row, strict=True))
        kind = cells.get("event") or "-"
        seen = shapes.setdefault(kind, {c: set() for c in header})
        for column, cell in cells.items():
            if cell and column not in _MACHINE_NUMBERS:  # the power columns: the machine's counters decide
                seen[column].add(_cell_shape(column, cell))
    full = sorted(
        {c for row in body for c, cell in zip(header, row, strict=True) if c in _PER_ROW and _significant(cell) == 6}
    )
    return {
        "header": header,
        "events": [r[header.index("event")] for r in body if r[header.index("event")]] if "event" in header else None,
        "row_shapes": {k: {c: sorted(v) for c, v in cols.items()} for k, cols in sorted(shapes.items())},
        # Of the floats measured per row (_PER_ROW), those written to 6 significant digits somewhere
        # (%.6g): a shorter format would still read as %.6g cell by cell.
        "six_digit_columns": full,
    }


# Floats that differ from row to row (the per-row fps, CPU % and RSS repeat a snapshot's few values,
# and may all be short by chance). Not the queue, preprocess and postprocess times: timed in whole
# nanoseconds, a value under 0.1 ms has at most 5 significant digits in any format, and under load
# every postprocess of a 20-frame run can be that short (a fresh-clone run saw it).
_PER_ROW = {"inference_ms", "end_to_end_ms", "inference_cpu_ms", "top1_score", "a_inference_ms", "b_inference_ms",
            "a_cpu_ms", "b_cpu_ms"}  # fmt: skip


def _significant(cell: str) -> int | None:
    """How many significant digits a number cell holds (None: not a plain number)."""
    if not re.fullmatch(r"-?\d+(\.\d+)?(e[+-]\d+)?", cell):
        return None
    digits = re.sub(r"e.*$", "", cell).lstrip("-").replace(".", "").lstrip("0")
    return len(digits)


def _json_text(value: object) -> str:
    return json.dumps(value, indent=2) + "\n"


# ---- the cases: each returns {golden file name: normalised text} ------------------------------


def case_delegates(tree: Path, tmp: Path) -> dict[str, str]:
    rc, out, err = _run(tree, tmp, "delegates", "--json")
    for status in json.loads(out)["delegates"]:  # a list of strings, whose entries are the machine's Vulkan devices
        assert all(isinstance(d, str) for d in status.get("devices", []))
    out = re.sub(r'"devices": \[[^\]]*\]', '"devices": <list of str>', out)  # the text kept as printed
    return {"delegates.json": f"rc={rc}\n{err}{_extra_out(out)}"}


# The TensorFlow reference's entry as `delegates --json` prints it; whether it is available is the extra's.
_REFERENCE = re.compile(
    r'("name": "reference",\n\s*"label": "[^"]*",\n\s*)"available": (true|false),(\n\s*)"reason": (null|"[^"]*")'
)


def _extra_out(out: str) -> str:
    """The reference entry's availability as `<the convert extra's>`, after checking it says what
    app/backends/reference.py does: available, or not with the install command of the extra."""
    match = _REFERENCE.search(out)
    assert match, out
    available, reason = match.group(2) == "true", json.loads(match.group(4))
    assert (reason is None) if available else reason.endswith("not installed: pip install -e '.[convert]'"), reason
    extra = json.dumps("<the convert extra's>")
    return _REFERENCE.sub(rf'\1"available": {extra},\3"reason": {extra}', out, count=1)


def case_inspect(tree: Path, tmp: Path) -> dict[str, str]:
    files = {}
    models = ["efficientnet_lite0", "efficientnet_lite0_int8", *(f"tests/data/models/{m}.tflite" for m in TEST_MODELS)]
    for model in models:
        rc, out, err = _run(tree, tmp, "inspect", "--json", "--model", model)
        body = _json_text(_timings_out(json.loads(out))) if rc == 0 else out
        files[f"inspect_{Path(model).stem}.json"] = f"rc={rc}\n{err}{body}"
    return files


def case_classify(tree: Path, tmp: Path) -> dict[str, str]:
    photos = sorted(str(p.relative_to(tree)) for p in (tree / PHOTOS).glob("*.jpg"))
    rc, out, err = _run(tree, tmp, "classify", "--json", *photos)
    body = _json_text(_timings_out(json.loads(out))) if rc == 0 else out
    return {"classify.json": f"rc={rc}\n{err}{body}"}


def case_bench(tree: Path, tmp: Path) -> dict[str, str]:
    csv_path, json_path = tmp / "bench.csv", tmp / "bench.json"
    rc, _out, err = _run(
        tree, tmp, "bench", "--frames", "20", "--source", "synthetic", "--csv", str(csv_path), "--json", str(json_path)
    )
    assert rc == 0, err
    summary = json.loads(_paths(json_path.read_text(), tree, tmp))
    sidecar = json.loads(_paths((tmp / "bench.csv.meta.json").read_text(), tree, tmp))
    # The machine's own facts and package versions are the machine's, not the format's.
    sidecar["machine"] = {k: "<machine>" for k in sidecar["machine"]}
    packages = sidecar["packages"]
    # coremltools (the convert extra) is listed exactly when installed; its place stays checked when it is.
    assert ("coremltools" in packages) == (importlib.util.find_spec("coremltools") is not None), packages
    sidecar["packages"] = {k: "<version>" for k in packages if k != "coremltools"}
    sidecar["packages"]["coremltools"] = "<version, when installed>"
    if "coremltools" in packages:
        assert list(packages)[-1] == "coremltools", packages
    return {
        "bench_summary.json": _json_text(_skeleton(summary)),
        "bench_recording.json": _json_text(_recording_shape(csv_path.read_text())),
        "bench_sidecar.json": _json_text(_skeleton(sidecar)),
    }


def case_bench_compare(tree: Path, tmp: Path) -> dict[str, str]:
    csv_path, json_path = tmp / "ab.csv", tmp / "ab.json"
    rc, _out, err = _run(
        tree,
        tmp,
        "bench",
        "--frames",
        "20",
        "--source",
        "synthetic",
        "--compare-with",
        "cpu",
        "--compare-model",
        "efficientnet_lite0_int8",
        "--compare-alone-seconds",
        "0.5",
        "--csv",
        str(csv_path),
        "--json",
        str(json_path),
    )
    assert rc == 0, err
    summary = json.loads(_paths(json_path.read_text(), tree, tmp))
    files = {"bench_compare_summary.json": _json_text(_skeleton(summary))}
    for path in sorted(tmp.glob("*.csv")):  # the per-frame comparison and each side's recording
        files[f"bench_compare_{path.stem}.json"] = _json_text(_recording_shape(path.read_text()))
    return files


def case_report(tree: Path, tmp: Path) -> dict[str, str]:
    sessions = [tmp / "cpu_fp32.csv", tmp / "cpu_int8.csv"]
    for path in sessions:
        for suffix in ("", ".meta.json"):
            (path.parent / (path.name + suffix)).write_bytes((INPUT / (path.name + suffix)).read_bytes())
    out = tmp / "report.html"
    rc, stdout, err = _run(tree, tmp, "report", "--out", str(out), *map(str, sessions))
    page = _paths(out.read_text(encoding="utf-8"), tree, tmp) if rc == 0 else ""
    page = re.sub(r"generated \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", "generated <time>", page)
    page = re.sub(r"src='data:image/png;base64,[A-Za-z0-9+/=]+'", _png_digest, page)
    # The page's size holds the temporary folder's path (its length varies by run and worker): not compared.
    stdout = re.sub(r"\d+ KiB\)", "<size> KiB)", stdout)
    return {"report.html": f"rc={rc}\n{err}{stdout}{page}"}


def _png_digest(match: re.Match[str]) -> str:
    data = base64.b64decode(match.group(0).split(",", 1)[1].rstrip("'"))
    width, height = struct.unpack(">II", data[16:24])  # the IHDR chunk
    return f"src='<png {width}x{height} sha256 {hashlib.sha256(data).hexdigest()[:16]}>'"


CASES: dict[str, Callable[[Path, Path], dict[str, str]]] = {
    "delegates": case_delegates,
    "inspect": case_inspect,
    "classify": case_classify,
    "bench": case_bench,
    "bench_compare": case_bench_compare,
    "report": case_report,
}


@pytest.mark.parametrize("case", list(CASES))
def test_output_matches_the_golden_from_before(case: str, tmp_path: Path) -> None:
    produced = CASES[case](HERE, tmp_path)
    for name, text in produced.items():
        golden = (GOLDEN / name).read_text(encoding="utf-8")
        diff = "".join(difflib.unified_diff(golden.splitlines(True), text.splitlines(True), "golden", "now", n=2))
        assert text == golden, f"{name} differs from the golden (the documented output):\n{diff[:4000]}"


if __name__ == "__main__":
    # Produce the goldens from a checkout whose outputs are the reference: the same commands,
    # the same normalisation, the inputs of this tree.
    if len(sys.argv) != 3 or sys.argv[1] != "--write-goldens":
        sys.exit("usage: python tests/test_outputs_unchanged.py --write-goldens OLD_TREE")
    old = Path(sys.argv[2]).resolve()
    GOLDEN.mkdir(parents=True, exist_ok=True)
    for run in CASES.values():
        with tempfile.TemporaryDirectory() as folder:
            for name, text in run(old, Path(folder)).items():
                (GOLDEN / name).write_text(text, encoding="utf-8")
                print("wrote", GOLDEN / name)
