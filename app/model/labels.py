"""Reading class labels from untrusted files and matching them to a model's outputs.

Labels come from user files, so reading them must never fail on content: bytes
are decoded leniently, control characters removed, and absurd sizes capped. A
mismatch between the number of labels and the number of outputs is explained,
not silently papered over.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from app.errors import ModelError

MAX_LABELS_BYTES = 16 * 1024 * 1024  # ImageNet-21k labels are ~0.5 MB; 16 MB is clearly not a labels file
MAX_LABEL_CHARS = 200
MAX_LABELS = 100_000

# C0 and C1 controls (an 8-bit CSI is as much a terminal escape as ESC [) and Unicode line separators.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
# Only real line breaks end a label: str.splitlines() also splits on form feeds, \x1c-\x1e, NEL and
# U+2028, which would shift every later label onto the wrong output index.
_NEWLINE = re.compile(r"\r\n|\r|\n")
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")  # Windows Notepad's "Unicode"
# "0 tench" / "1: goldfish" style files carry their own index before the label.
_INDEXED = re.compile(r"^\s*(\d+)\s*[:\t ]\s*(.*)$")
_IMAGENET_WITH_BACKGROUND = 1001
_BACKGROUND_NAMES = {"background", "???", "unused", "__background__"}
# How a labels file the user named is introduced in the labels' source and warnings: the command line's flag
# ("--labels PATH has 10 labels but …"). The window says it its own way (app/live/events.py).
CHOSEN_LABELS_FLAG = "--labels"


def chosen_labels_source(path: Path) -> str:
    return f"{CHOSEN_LABELS_FLAG} {path}"


@dataclass(frozen=True)
class LabelSet:
    """Labels aligned to output indices (len(labels) == number of outputs)."""

    labels: list[str]
    source: str
    background_class: bool = False
    warnings: list[str] = field(default_factory=list)

    def name(self, index: int) -> str:
        label = self.labels[index] if 0 <= index < len(self.labels) else ""
        return label or f"class {index}"


def parse_labels(data: bytes) -> list[str]:
    """Split a labels file into one label per line; positions are kept (index = line)."""
    codec = "utf-16" if data.startswith(_UTF16_BOMS) else "utf-8-sig"
    text = data.decode(codec, errors="replace")
    lines = _NEWLINE.split(text, maxsplit=MAX_LABELS)[:MAX_LABELS]
    labels = [_CONTROL.sub("", line).strip()[:MAX_LABEL_CHARS] for line in lines]
    while labels and not labels[-1]:  # after cleaning: a last line of NULs is blank too
        labels.pop()
    return _strip_own_indices(labels)


def _strip_own_indices(labels: list[str]) -> list[str]:
    """Drop a leading "N " only when every line starts with its own line number."""
    matches = [_INDEXED.match(label) for label in labels]
    if labels and all(m and int(m.group(1)) == i for i, m in enumerate(matches)):
        return [m.group(2).strip() for m in matches if m]
    return labels


def read_labels_file(path: Path) -> list[str]:
    try:
        size = path.stat().st_size
        if size > MAX_LABELS_BYTES:
            raise ModelError(f"labels file {path} is {size} bytes: too large to be a labels file")
        return parse_labels(path.read_bytes())
    except FileNotFoundError:
        raise ModelError(f"labels file not found: {path}") from None
    except IsADirectoryError:
        raise ModelError(f"labels path is a folder, not a file: {path}") from None
    except OSError as exc:
        raise ModelError(f"cannot read labels file {path}: {exc.strerror or exc}") from None


def align_labels(labels: list[str], classes: int, source: str) -> LabelSet:
    """Map labels to output indices, handling the 1001-output "background" convention."""
    n = len(labels)
    first_is_background = n > 0 and labels[0].lower() in _BACKGROUND_NAMES
    if n == classes:
        return LabelSet(labels, source, background_class=first_is_background)
    if classes == _IMAGENET_WITH_BACKGROUND and n == classes - 1 and not first_is_background:
        # The 1001-output convention (index 0 = background) with a 1000-line ImageNet file: the only
        # case where one label short means a background row. Elsewhere (1000 outputs, a file that lost
        # a line) shifting would put every label on its neighbour: the labels do not fit, said below.
        return LabelSet(["background", *labels], source, background_class=True)
    if n == classes + 1 and first_is_background:
        return LabelSet(labels[1:], source)
    warning = f"{source} has {n} labels but the model has {classes} outputs; " + (
        "extra labels ignored" if n > classes else "outputs without a label are shown as 'class N'"
    )
    padded = (labels + [""] * classes)[:classes]
    return LabelSet(padded, source, warnings=[warning])


def numbered_labels(classes: int) -> LabelSet:
    return LabelSet([""] * classes, "none (no labels found; outputs shown as 'class N')")
