"""`delegate-scope inspect` (what each backend would take of a model, node by node) and
`delegate-scope delegates` (which backends can run here)."""

from __future__ import annotations

import argparse
import json
import sys

from app.cli.output import warn
from app.coverage.coreml_rules import CoreMLOptions
from app.model.spec import load_model_spec
from app.tasks.delegates import delegate_statuses


def cmd_inspect(args: argparse.Namespace) -> int:
    from app.coreml_mil.split import coreml_pieces, pieces_to_dict
    from app.coverage.text import render
    from app.tasks.inspect import inspect_model
    from app.tflite.graph import read_graph

    spec = load_model_spec(args.model, labels_file=args.labels)
    result = inspect_model(spec, CoreMLOptions(coreml_version=args.coreml_version))
    # How the Core ML backend runs it on a Mac: the delegate's partitions in Core ML, the rest in LiteRT.
    graph = read_graph(spec.content)
    plan = coreml_pieces(graph, result.coreml)  # the window's panel shows the same line (app/ui/panels/delegation.py)
    for warning in spec.warnings:
        warn(warning)
    if args.json:
        out = {
            "model": spec.as_json(),
            "coverage": result.to_dict(),
            "gpu_adapter": {"name": result.gpu_adapter, "software": result.gpu_software}
            if result.gpu_adapter
            else None,
            "coreml_pieces": pieces_to_dict(plan.pieces) if plan.runs_core_ml else None,
        }
        json.dump(out, sys.stdout, indent=2)
        print()
        return 0
    inp = spec.input
    print(f"model     {spec.display_name}  ({spec.path})")
    print(f"          input {'x'.join(str(d) for d in inp.shape)} {inp.dtype}, {len(spec.op_types)} nodes")
    if result.gpu_adapter:
        print(f"          GPU adapter {result.gpu_adapter}" + (" [SOFTWARE RENDERER]" if result.gpu_software else ""))
    print()
    for line in render(result.by_delegate()):
        print(line)
    if plan.runs_core_ml or plan.not_split:
        print()
        print(plan.sentence())
    return 0


def cmd_delegates(args: argparse.Namespace) -> int:
    statuses = delegate_statuses()
    if args.json:
        json.dump(statuses, sys.stdout, indent=2)
        print()
        return 0
    for st in statuses:
        state = "available" if st["available"] else "not available"
        print(f"{st['name']:<7} {st['label']:<16} {state}" + (f": {st['reason']}" if st.get("reason") else ""))
        for key in ("adapter", "devices", "threads"):
            if st.get(key):
                value = "; ".join(st[key]) if isinstance(st[key], list) else str(st[key])
                print(f"        {key}: {value}")
    return 0
