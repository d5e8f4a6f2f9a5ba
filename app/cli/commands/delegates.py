"""`delegate-scope delegates`: every backend, whether it can run on this machine, and why not."""

from __future__ import annotations

import argparse
import json
import sys

from app.cli.command import Command
from app.schemas import versioned
from app.tasks.delegates import delegate_statuses


def add_arguments(d: argparse.ArgumentParser) -> None:
    d.add_argument("--json", action="store_true", help="print JSON on stdout")


def run(args: argparse.Namespace) -> int:
    statuses = delegate_statuses()
    if args.json:
        json.dump(versioned({"delegates": [st.to_dict() for st in statuses]}), sys.stdout, indent=2)
        print()
        return 0
    # Columns as wide as their longest entry ("reference", "TensorFlow reference" overflowed fixed widths).
    name_width = max(len(st.name) for st in statuses)
    label_width = max(len(st.label) for st in statuses)
    indent = " " * (name_width + 1)
    for st in statuses:
        state = "available" if st.available else "not available"
        print(f"{st.name:<{name_width}} {st.label:<{label_width}} {state}" + (f": {st.reason}" if st.reason else ""))
        facts = (
            ("adapter", st.gpu.adapter if st.gpu else None),
            ("devices", "; ".join(st.gpu.devices) if st.gpu else None),
            ("threads", st.threads),
        )
        for key, value in facts:
            if value:
                print(f"{indent}{key}: {value}")
    return 0


COMMAND = Command(
    name="delegates",
    help="list backends and whether they can run here",
    description="List every backend with whether it can run on this machine, and why not.",
    add_arguments=add_arguments,
    run=run,
)
