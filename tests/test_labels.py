from pathlib import Path

import pytest

from app.errors import ModelError
from app.labels import align_labels, parse_labels, read_labels_file


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
