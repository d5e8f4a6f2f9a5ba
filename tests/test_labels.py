from pathlib import Path

import pytest

from app.errors import ModelError
from app.model.labels import align_labels, parse_labels, read_labels_file
from tests.helpers.cli import run_cli
from tests.helpers.paths import PHOTOS, ROOT


def test_plain_lines_keep_positions_and_drop_trailing_blanks():
    assert parse_labels(b"cat\n\ndog\n\n\n") == ["cat", "", "dog"]


def test_bom_crlf_control_characters_and_binary_junk_are_harmless():
    labels = parse_labels(b"\xef\xbb\xbfcat\r\nd\x00o\x07g\r\n\xff\xfe bird \n")
    assert labels == ["cat", "dog", "\ufffd\ufffd bird"]


def test_enormous_lines_are_capped():
    (label,) = parse_labels(b"x" * 1_000_000)
    assert len(label) == 200


def test_formula_prefixes_are_kept_verbatim_as_plain_text():
    # Labels are data; neutralising spreadsheet formulas is the CSV writer's job, not the loader's.
    assert parse_labels(b"=cmd|' /C calc'!A0\n+1\n@SUM(A1)\n") == ["=cmd|' /C calc'!A0", "+1", "@SUM(A1)"]


def test_files_that_number_their_own_lines_are_unnumbered():
    assert parse_labels(b"0 background\n1 tench\n2: goldfish\n") == ["background", "tench", "goldfish"]
    # Numbers that are not the line index are part of the label.
    assert parse_labels(b"7 up\n0 down\n") == ["7 up", "0 down"]


def test_1001_outputs_with_1000_labels_gets_a_background_class():
    labels = align_labels([f"l{i}" for i in range(1000)], 1001, "test")
    assert labels.background_class
    assert labels.name(0) == "background"
    assert labels.name(1) == "l0"
    assert labels.warnings == []


def test_1000_outputs_with_background_first_drops_it():
    labels = align_labels(["background", *[f"l{i}" for i in range(1000)]], 1000, "test")
    assert labels.name(0) == "l0"
    assert not labels.background_class


def test_mismatched_count_is_warned_about_and_unlabelled_outputs_get_numbers():
    labels = align_labels(["a", "b"], 4, "labels.txt")
    assert labels.name(1) == "b"
    assert labels.name(3) == "class 3"
    assert "has 2 labels but the model has 4 outputs" in labels.warnings[0]
    extra = align_labels(["a", "b", "c", "d", "e", "f"], 4, "labels.txt")
    assert len(extra.labels) == 4
    assert "extra labels ignored" in extra.warnings[0]


def test_empty_label_falls_back_to_class_number():
    assert align_labels(["a", "", "c"], 3, "t").name(1) == "class 1"


def test_missing_folder_and_huge_files_are_model_errors(tmp_path: Path):
    with pytest.raises(ModelError, match="not found"):
        read_labels_file(tmp_path / "nope.txt")
    with pytest.raises(ModelError, match="is a folder"):
        read_labels_file(tmp_path)
    huge = tmp_path / "huge.txt"
    with huge.open("wb") as f:
        f.truncate(17 * 1024 * 1024)
    with pytest.raises(ModelError, match="too large"):
        read_labels_file(huge)


def test_only_real_line_breaks_end_a_label():
    # str.splitlines() also breaks at form feed, \x1c-\x1e, NEL and U+2028: each would push every
    # later label onto the wrong output index. Those characters are removed, not treated as lines.
    data = "cat\u2028s\ndog\x85gy\nfi\x0csh\nbi\x1crd\nmou\u2029se\n".encode()
    assert parse_labels(data) == ["cats", "doggy", "fish", "bird", "mouse"]
    assert parse_labels(b"a\rb\rc\r") == ["a", "b", "c"]  # classic Mac line endings


def test_utf16_files_with_a_bom_are_decoded():
    for codec in ("utf-16", "utf-16-le", "utf-16-be"):
        bom = {"utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}.get(codec, b"")
        assert parse_labels(bom + "caf\u00e9\r\nna\u00efve\r\n".encode(codec)) == ["caf\u00e9", "na\u00efve"], codec


def test_a_last_line_of_control_characters_is_not_an_extra_label():
    assert parse_labels(b"a\nb\n\x00\x00\x07\n") == ["a", "b"]


def test_c1_controls_are_removed_like_c0_controls():
    # \x9b is an 8-bit CSI: `ESC [` to many terminals, where the table of labels is printed.
    assert parse_labels("red\x9b2J\x1b[31m!\n".encode()) == ["red2J[31m!"]


def test_one_label_short_of_a_1000_output_model_is_not_shifted():
    # 999 labels for 1000 outputs must not take the 1001/1000 background convention, which shifts every label
    # onto its neighbour ("mortar and pestle" for "military uniform"): only a 1001-output model has that row.
    labels = align_labels([f"l{i}" for i in range(999)], 1000, "labels.txt")
    assert not labels.background_class
    assert labels.name(0) == "l0" and labels.name(998) == "l998" and labels.name(999) == "class 999"
    assert "has 999 labels but the model has 1000 outputs" in labels.warnings[0]
    assert "class N" in labels.warnings[0] and "background" not in labels.warnings[0]

def test_classify_with_a_labels_file_one_line_short_keeps_every_label_in_place(tmp_path: Path):
    """The real command, as a user ran it: 999 ImageNet labels for the bundled 1000-output model."""
    short = tmp_path / "labels999.txt"
    short.write_text("\n".join((ROOT / "models" / "imagenet_labels.txt").read_text().splitlines()[:999]) + "\n")
    run = run_cli("classify", "--labels", short, "--json", PHOTOS / "grace_hopper.jpg")
    assert run.returncode == 0, run.stderr
    assert run.json()["results"][0]["top"][0]["label"] == "military uniform"
    assert "has 999 labels but the model has 1000 outputs" in run.stderr and "class N" in run.stderr
