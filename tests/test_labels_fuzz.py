"""Hostile labels files through the real loader and the real CLI: every one either loads (with a
warning when the count is wrong) or is one clear error line; nothing in a labels file ever runs."""

from __future__ import annotations

import os
import pickle
import random
import re
from pathlib import Path

import pytest

from app.errors import ModelError
from app.model.labels import MAX_LABEL_CHARS, parse_labels
from app.model.spec import load_model_spec
from tests.helpers.cli import assert_one_line_error, run_cli
from tests.helpers.paths import PHOTOS, ROOT

MODEL = ROOT / "models" / "efficientnet_lite0_int8.tflite"
IMAGENET = (ROOT / "models" / "imagenet_labels.txt").read_text(encoding="utf-8").splitlines()
CLASSES = 1000
SEED = 20240611
CASES = 400
# What must never survive loading: C0/C1 controls and line separators (a tab inside a label may stay).
UNPRINTABLE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")


class _Payload:
    """Pickles to "run a shell command": the bytes are harmless unless something unpickles them."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


def _nasty_lines(marker: Path) -> list[str]:
    touch = f"touch {marker}"
    return [
        "=cmd|' /C calc'!A0",
        "@SUM(1)",
        "+1",
        "-1",
        '=HYPERLINK("http://example.invalid")',
        f"__import__('os').system('{touch}')",
        f"eval(\"__import__('os').system('{touch}')\")",
        f"exec(compile('open(\"{marker}\", \"w\")', 'x', 'exec'))",
        f"$(touch {marker})",
        f"`{touch}`",
        f"; {touch}",
        "{{7*7}}",
        "%s%s%n",
        "\x1b[2J\x1b[31mred",
        "\u202eevil\u202c",
        "caf\u00e9 \u2603 \U0001f600",
        "0",
        "",
        "  ",
        "background",
    ]


def _pickles(marker: Path) -> list[bytes]:
    payload = _Payload(f"touch {marker}")
    return [pickle.dumps(payload, protocol=p) for p in range(pickle.HIGHEST_PROTOCOL + 1)]


def _join(lines: list[str], rng: random.Random) -> str:
    return rng.choice(["\n", "\r\n", "\r"]).join(lines) + rng.choice(["", "\n"])


def generate(rng: random.Random, marker: Path) -> list[tuple[str, bytes, int | None]]:
    """(kind, file bytes, expected label count or None when only the invariants can be checked)."""
    nasty, pickles = _nasty_lines(marker), _pickles(marker)
    good = [f"label {i}" for i in range(CLASSES)]
    fixed: list[tuple[str, bytes, int | None]] = [
        ("empty", b"", 0),
        ("only newlines", b"\n\n\r\n\r", 0),
        ("one line", b"espresso", 1),
        ("one line + newline", b"espresso\n", 1),
        ("10x too many", ("\n".join(good * 10)).encode(), 10 * CLASSES),
        ("1 MB single line", b"y" * (1 << 20), 1),
        ("1 MB line among good ones", ("\n".join([*good[:500], "z" * (1 << 20), *good[501:]])).encode(), CLASSES),
        ("CR-only", "\r".join(good).encode(), CLASSES),
        ("utf-16 BOM", "\n".join(good).encode("utf-16"), CLASSES),
        ("utf-16-be BOM", b"\xfe\xff" + "\r\n".join(good).encode("utf-16-be"), CLASSES),
        ("utf-8 BOM", b"\xef\xbb\xbf" + "\n".join(good).encode(), CLASSES),
        ("nasty, exact count", _join((nasty * 50)[:CLASSES], rng).encode(), None),
        ("all NULs", b"\x00" * 5000, 0),
        ("invalid utf-8 lines", b"\n".join([b"\xc3\x28\xa0\xa1\xe2\x28\xa1\xf0\x28"] * CLASSES), CLASSES),
        *[(f"pickle protocol {i}", data, None) for i, data in enumerate(pickles)],
    ]  # fmt: skip
    cases = list(fixed)
    while len(cases) < CASES:
        kind = rng.choice(["random bytes", "random bytes + NULs", "nasty mix", "pickle in lines", "count off"])
        if kind == "random bytes":
            data = rng.randbytes(rng.choice([1, 7, 100, 4096, 65536]))
        elif kind == "random bytes + NULs":
            data = bytes(b if rng.random() > 0.3 else 0 for b in rng.randbytes(rng.randint(1, 8192)))
        elif kind == "nasty mix":
            data = _join([rng.choice(nasty) for _ in range(rng.randint(0, 2 * CLASSES))], rng).encode()
            data = data.decode().encode(rng.choice(["utf-8", "utf-8-sig", "utf-16"]))
        elif kind == "pickle in lines":
            lines = [s.encode() for s in good]
            lines[rng.randrange(CLASSES)] = rng.choice(pickles)  # may itself hold \n or \r bytes
            data = b"\n".join(lines)
        else:  # a good file that lost or gained a few lines: the count is the whole check
            n = CLASSES + rng.choice([-999, -100, -1, 1, 2, 50])
            data = "\n".join(f"name {i}" for i in range(n)).encode()
            cases.append((kind, data, n))
            continue
        cases.append((kind, data, None))
    return cases


def _check_loaded(spec, kind: str, data: bytes, expected: int | None) -> None:
    labels = spec.labels.labels
    assert len(labels) == spec.classes == CLASSES, kind
    for label in labels:
        assert isinstance(label, str) and len(label) <= MAX_LABEL_CHARS, kind
        assert not UNPRINTABLE.search(label), (kind, label)
    mismatch = [w for w in spec.warnings if "labels but the model has 1000 outputs" in w]
    if expected is not None:
        assert bool(mismatch) == (expected != CLASSES), (kind, expected, spec.warnings)
        if mismatch:
            assert f"has {min(expected, 100_000)} labels" in mismatch[0], (kind, mismatch)
    else:  # random content: however many lines it parses to, a count other than 1000 is warned about
        parsed = parse_labels(data)
        conventional = len(parsed) == CLASSES + 1 and parsed[0].lower() == "background"
        assert bool(mismatch) == (len(parsed) != CLASSES and not conventional), (kind, len(parsed), spec.warnings)


@pytest.mark.slow
def test_hundreds_of_hostile_labels_files_load_safely(tmp_path: Path):
    marker = tmp_path / "PWNED"
    rng = random.Random(SEED)
    cases = generate(rng, marker)
    assert len(cases) == CASES
    outcomes = {"loaded": 0, "warned": 0}
    for i, (kind, data, expected) in enumerate(cases):
        path = tmp_path / f"labels_{i:03d}.txt"
        path.write_bytes(data)
        try:
            spec = load_model_spec(MODEL, labels_file=path)
        except ModelError as exc:  # allowed, but only as one plain line naming the file
            assert "\n" not in str(exc) and str(path) in str(exc), (kind, exc)
            continue
        _check_loaded(spec, kind, data, expected)
        outcomes["loaded"] += 1
        outcomes["warned"] += bool(spec.warnings)
        path.unlink()
    assert outcomes["loaded"] == CASES  # nothing under 16 MB is refused
    assert outcomes["warned"] > CASES // 2
    assert not marker.exists(), "a labels file ran code"


def test_fixed_cases_load_the_labels_they_hold(tmp_path: Path):
    """The well-formed files in unusual encodings and line endings load as exactly their labels."""
    good = [f"label {i}" for i in range(CLASSES)]
    for name, data in {
        "cr.txt": "\r".join(good).encode(),
        "utf16.txt": "\r\n".join(good).encode("utf-16"),
        "bom.txt": b"\xef\xbb\xbf" + "\n".join(good).encode(),
    }.items():
        (tmp_path / name).write_bytes(data)
        spec = load_model_spec(MODEL, labels_file=tmp_path / name)
        assert spec.labels.labels == good and spec.warnings == (), name


def _cli_json(run) -> dict:
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    return run.json()


@pytest.mark.slow
def test_cli_classify_with_hostile_labels(tmp_path: Path):
    marker = tmp_path / "PWNED"
    image = PHOTOS / "coffee.jpg"
    espresso = IMAGENET.index("espresso")

    # Windows Notepad "Unicode" (UTF-16 with BOM), CRLF: the right labels, no warning.
    utf16 = tmp_path / "utf16.txt"
    utf16.write_bytes("\r\n".join(IMAGENET).encode("utf-16"))
    out = _cli_json(run_cli("classify", "--labels", utf16, "--json", image))
    top = out["results"][0]["top"][0]
    assert (top["index"], top["label"]) == (espresso, "espresso")
    assert out["warnings"] == []

    # Three lines of formulas and code: loaded as text, one warning line about the count, nothing runs.
    nasty = tmp_path / "nasty.txt"
    nasty.write_text(f"=cmd|' /C calc'!A0\n__import__('os').system('touch {marker}')\n@SUM(1)\n", encoding="utf-8")
    run = run_cli("classify", "--labels", nasty, "--json", image)
    out = _cli_json(run)
    warnings = [line for line in run.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1 and warnings[0].startswith("delegate-scope: warning: "), run.stderr
    assert "has 3 labels but the model has 1000 outputs" in warnings[0]
    assert out["results"][0]["top"][0]["label"] == f"class {espresso}"

    # A pickle that would run a command, as the whole labels file: junk text, never unpickled.
    pickled = tmp_path / "labels.pkl"
    pickled.write_bytes(pickle.dumps(_Payload(f"touch {marker}")))
    run = run_cli("classify", "--labels", pickled, "--json", image)
    out = _cli_json(run)
    assert "labels but the model has 1000 outputs" in " ".join(out["warnings"])
    assert not marker.exists(), "a labels file ran code"


@pytest.mark.parametrize("make", ["folder", "too large"])
def test_cli_unusable_labels_file_is_exit_3_in_one_line(tmp_path: Path, make: str):
    if make == "folder":
        path = tmp_path / "labels.d"
        path.mkdir()
        fragment = "is a folder"
    else:
        path = tmp_path / "huge.txt"
        with path.open("wb") as f:  # sparse: 17 MB on paper, nothing on disk
            f.truncate(17 * 1024 * 1024)
        fragment = "too large"
    run = run_cli("classify", "--labels", path, "--json", PHOTOS / "coffee.jpg")
    assert_one_line_error(run, 3, fragment)
    assert run.stdout == ""
