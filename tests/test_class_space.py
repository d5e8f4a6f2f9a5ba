"""Agreement between two classifiers compares classes, not label strings (app/model/classes.py)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from app.model.classes import class_space
from app.model.labels import LabelSet
from app.model.spec import load_model_spec


def test_1000_against_1001_with_a_background_row_is_one_class_space(coral: Path):
    ours = load_model_spec("efficientnet_lite0")  # 1000 outputs, "Egyptian Mau"
    theirs = load_model_spec(coral / "mobilenet_v2_1.0_224_quant.tflite")  # 1001, "Egyptian cat"
    space = class_space(ours, theirs)
    assert space.comparable and space.offset == 1 and "background row" in space.how
    assert ours.label(285) != theirs.label(286)  # the strings differ...
    assert space.agree(285, 286) and not space.agree(285, 285)  # ...the class is the same
    back = class_space(theirs, ours)
    assert back.agree(286, 285)


def test_other_label_sets_compare_by_normalised_label_or_not_at_all():
    base = load_model_spec("efficientnet_lite0")
    names = [f"thing {i}" for i in range(1000)]
    a = replace(base, classes=10, labels=LabelSet([f"Thing {i}, synonym" for i in range(10)], "a"))
    b = replace(base, classes=12, labels=LabelSet(["extra one", "extra two", *[f"thing  {i}" for i in range(10)]], "b"))
    space = class_space(a, b)
    assert space.comparable and "by label" in space.how
    assert space.agree(0, 2) and not space.agree(0, 0)
    c = replace(base, classes=12, labels=LabelSet(names[:12], "c"))
    d = replace(base, classes=10, labels=LabelSet([f"other {i}" for i in range(10)], "d"))
    none = class_space(c, d)
    assert not none.comparable and none.agree(0, 0) is None and "not comparable" in none.how


@pytest.mark.slow
def test_bench_a_b_of_two_imagenet_classifiers_agrees_by_class(coral: Path, tmp_path: Path):
    """Found demoing: "top-1 agrees on 69.4%" where 74 of 92 disagreements were "Egyptian Mau" against
    "Egyptian cat" (one class, two label files); by class it is about 94%."""
    from tests.helpers.cli import run_cli

    summary = tmp_path / "ab.json"
    theirs = coral / "mobilenet_v2_1.0_224_quant.tflite"
    run = run_cli("bench", "--model", "efficientnet_lite0", "--compare-model", theirs, "--frames", "40",
                  "--threads", "1", "--compare-alone-seconds", "0", "--json", summary)  # fmt: skip
    assert run.returncode == 0, run.stderr
    agreement = json.loads(summary.read_text())["agreement"]
    assert agreement["classes"]["comparable"] and "background row" in agreement["classes"]["how"]
    assert agreement["top1_agreement"] >= 0.85, agreement  # the demo clip: the same cup for both
    assert "top-1 agrees on" in run.stdout and "(by class index, B's output 0 being a background row" in run.stdout


@pytest.mark.slow
def test_the_report_of_two_classifiers_compares_their_classes(coral: Path, tmp_path: Path):
    from tests.helpers.cli import run_cli

    recordings = []
    for name, model in (("ours", "efficientnet_lite0"), ("theirs", str(coral / "mobilenet_v2_1.0_224_quant.tflite"))):
        recordings.append(tmp_path / f"{name}.csv")
        run = run_cli("bench", "--model", model, "--frames", "30", "--threads", "1", "--csv", recordings[-1])
        assert run.returncode == 0, run.stderr
    page = tmp_path / "pair.html"
    assert run_cli("report", *recordings, "--out", page).returncode == 0
    text = page.read_text(encoding="utf-8")
    found = re.search(r"([\d.]+)% of (\d+) common frames \(by class\)", text)
    assert found is not None, "the agreement is not said by class"
    assert float(found.group(1)) >= 85.0  # by label text, "espresso" against "espresso" agreed, the rest did not
