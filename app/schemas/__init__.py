"""The machine output's contract: every JSON document a command writes carries `schema_version`
(`versioned`), and a JSON Schema (draft 2020-12) per kind of output ships beside this module, as
package data. What may change between versions: docs/json.md.

Model Explorer exports (`profile --model-explorer`) are Model Explorer's own format and carry no
version of ours; the children's stdout protocols (GPU probe, GPU coverage) are internal."""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import StrEnum
from importlib import resources

# Bumped when a key is renamed or removed, or its type or meaning changes; adding a key keeps it.
SCHEMA_VERSION = 1


class OutputKind(StrEnum):
    """Each kind of JSON output, named as its schema file is (`<value>.schema.json`)."""

    CLASSIFY = "classify"  # classify --json
    PREDICT = "predict"  # predict --json
    INSPECT = "inspect"  # inspect --json
    DELEGATES = "delegates"  # delegates --json
    PROFILE = "profile"  # profile --json
    BENCH = "bench"  # bench --json FILE
    BENCH_COMPARE = "bench-compare"  # bench --compare-... --json FILE
    SWEEP = "sweep"  # sweep --json FILE
    RECORDING = "recording"  # NAME.csv.meta.json beside a recording (an A/B comparison's too)
    PROFILE_SIDECAR = "profile-sidecar"  # NAME.profile.json beside a recording made while profiling
    WINDOW_STATS = "window-stats"  # gui --stats FILE
    COMPARE = "compare"  # compare A.json B.json --json
    NUMERICS = "numerics"  # numerics --json

    @property
    def schema_file(self) -> str:
        return f"{self.value}.schema.json"


def versioned(document: Mapping[str, object]) -> dict[str, object]:
    """The document with `schema_version` first: what every JSON writer of the app writes."""
    return {"schema_version": SCHEMA_VERSION, **document}


def schema(kind: OutputKind) -> dict[str, object]:
    """The JSON Schema of one kind of output, read from the installed package."""
    loaded: dict[str, object] = json.loads(resources.files(__name__).joinpath(kind.schema_file).read_text("utf-8"))
    return loaded
