"""Agreement between two classifiers compares classes, not label strings (app/model/classes.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

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
