"""Whether two classifiers' answers can be compared, and how: by class, never by label text.

Two label files can spell one ImageNet class differently ("Egyptian Mau" / "Egyptian cat",
"bobsleigh" / "bobsled, bobsleigh, bob"), so comparing label strings called agreeing models
different (69% where their classes agreed on 94%). The rules, in order:

1. the same number of outputs: the same class space, compared by output index;
2. 1001 outputs against 1000 where the 1001's first is a background row (the TF-slim ImageNet
   convention): the same classes shifted by one;
3. otherwise by label, normalised (case, spacing, and only the first of comma-separated synonyms):
   when at least `MIN_SHARED` of the smaller model's labels name exactly one class on each side;
4. otherwise "classes not comparable": no agreement figure is given.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from app.model.spec import ModelSpec

MIN_SHARED = 0.9
_IMAGENET = 1000
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class ClassSpace:
    """How side B's class indices map onto side A's."""

    comparable: bool
    how: str  # said beside every agreement figure
    offset: int = 0  # rule 1 and 2: A's index = B's index - offset
    by_label: Mapping[int, int] = field(default_factory=dict)  # rule 3: B's index -> A's index

    def agree(self, a_index: int, b_index: int) -> bool | None:
        """Whether the two top-1 answers name one class; None when the classes are not comparable."""
        if not self.comparable:
            return None
        if self.by_label:
            return self.by_label.get(b_index) == a_index
        return b_index - self.offset == a_index

    def a_index(self, b_index: int) -> int | None:
        """A's index for B's class; None where it has none."""
        if not self.comparable:
            return None
        if self.by_label:
            return self.by_label.get(b_index)
        return b_index - self.offset

    def to_dict(self) -> dict[str, object]:
        return {"comparable": self.comparable, "how": self.how}


def normalised(label: str) -> str:
    return _SPACES.sub(" ", label.split(",")[0]).strip().lower()


def _background_first(spec: ModelSpec) -> bool:
    first = spec.labels.labels[0] if spec.labels.labels else ""
    return spec.labels.background_class or normalised(first) in ("background", "???", "unused")


def class_space(a: ModelSpec, b: ModelSpec) -> ClassSpace:
    if a.classes == b.classes:
        return ClassSpace(True, f"by class index (both have {a.classes} outputs)")
    if {a.classes, b.classes} == {_IMAGENET, _IMAGENET + 1}:
        wide = a if a.classes == _IMAGENET + 1 else b
        if _background_first(wide):
            offset = 1 if wide is b else -1
            side = "B" if wide is b else "A"
            return ClassSpace(
                True, f"by class index, {side}'s output 0 being a background row (1001 against 1000)", offset
            )
    return _by_label(a, b)


def _by_label(a: ModelSpec, b: ModelSpec) -> ClassSpace:
    def unique(spec: ModelSpec) -> dict[str, int]:
        names = [normalised(label) for label in spec.labels.labels]
        counts = Counter(names)
        return {name: i for i, name in enumerate(names) if name and counts[name] == 1}

    on_a, on_b = unique(a), unique(b)
    shared = {on_b[name]: on_a[name] for name in on_a.keys() & on_b.keys()}
    smaller = min(a.classes, b.classes)
    if smaller > 0 and len(shared) >= MIN_SHARED * smaller:
        return ClassSpace(True, f"by label ({len(shared)} of {smaller} classes named alike on both sides)",
                          by_label=shared)  # fmt: skip
    return ClassSpace(
        False,
        f"classes not comparable: {a.classes} against {b.classes} outputs, and only {len(shared)} labels name "
        "one class on both sides",
    )
