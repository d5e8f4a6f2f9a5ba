"""`delegate-scope inspect`: what each backend would take of a model, node by node."""

from __future__ import annotations

import argparse
import json
import sys

from app.cli.command import Command
from app.cli.options import add_model_options, model_options
from app.cli.output import warn
from app.coverage.coreml_rules import DEFAULT_COREML_VERSION, CoreMLOptions
from app.coverage.requirements import RULE_FORMS, Requirement, RuleError, Verdict, evaluate_all, parse_requirement
from app.errors import CheckFailed
from app.model.spec import ModelSpec, load_model_spec
from app.schemas import versioned
from app.tasks.inspect import ModelCoverage, inspect_model
from app.tflite.memory_plan import MemoryPlan, plan_memory


def add_arguments(i: argparse.ArgumentParser) -> None:
    add_model_options(i)
    i.add_argument(
        "--coreml-version",
        type=int,
        choices=(2, 3),
        default=DEFAULT_COREML_VERSION,
        help=f"the Core ML delegate's coreml_version option (default {DEFAULT_COREML_VERSION}, as the delegate's)",
    )
    i.add_argument("--json", action="store_true", help="print one JSON object on stdout")
    i.add_argument(
        "--require",
        nargs="+",
        action="extend",
        type=_requirement,
        default=[],
        metavar="RULE",
        help=f"fail (exit 7) unless each rule holds: {RULE_FORMS}; DELEGATE is cpu, gpu or coreml "
        "(e.g. gpu:full coreml:partitions<=1); a delegate whose coverage is unknown here fails its rules",
    )


def _requirement(text: str) -> Requirement:
    try:
        return parse_requirement(text)
    except RuleError as exc:  # argparse's usage error (exit 2), naming the rule and the forms allowed
        raise argparse.ArgumentTypeError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    from app.coreml_mil.split import coreml_pieces, pieces_to_dict
    from app.coverage.text import render
    from app.tflite.graph import read_graph

    spec = load_model_spec(args.model, labels_file=args.labels, options=model_options(args))
    result = inspect_model(spec, CoreMLOptions(coreml_version=args.coreml_version))
    # How the Core ML backend runs it on a Mac: the delegate's partitions in Core ML, the rest in LiteRT.
    graph = read_graph(spec.content)
    plan = coreml_pieces(graph, result.coreml)  # the window's panel shows the same line (app/ui/panels/delegation.py)
    for warning in spec.warnings:
        warn(warning)
    verdicts = evaluate_all(args.require, result.by_delegate())
    memory = _memory_plan(spec, result)
    if args.json:
        out = {
            "model": spec.as_json(),
            "coverage": result.to_dict(),
            "gpu_adapter": {"name": result.gpu_adapter, "software": result.gpu_software}
            if result.gpu_adapter
            else None,
            "coreml_pieces": pieces_to_dict(plan.pieces) if plan.runs_core_ml else None,
        }
        out["memory"] = memory.to_dict()
        if result.missing_op is not None:  # only for a model the runtime cannot load: others keep their keys
            out["missing_custom_op"] = result.missing_op.to_dict()
        if args.require:  # only when asked: the JSON without rules keeps its keys
            out["requirements"] = [v.to_dict() for v in verdicts]
        json.dump(versioned(out), sys.stdout, indent=2)
        print()
        return _gate(verdicts)
    inp = spec.input
    print(f"model     {spec.display_name}  ({spec.path})")
    print(f"          input {'x'.join(str(d) for d in inp.shape)} {inp.dtype}, {len(spec.op_types)} nodes")
    for line in _task_lines(spec):
        print(line)
    if (missing := result.missing_op) is not None:
        nodes = ", ".join(map(str, missing.nodes)) or "?"
        print(f"          node{'s' if len(missing.nodes) > 1 else ''} {nodes} CUSTOM:{missing.op}: needs a custom op "
              "this LiteRT runtime does not have; no backend here runs the model")  # fmt: skip
    if result.gpu_adapter:
        print(f"          GPU adapter {result.gpu_adapter}" + (" [SOFTWARE RENDERER]" if result.gpu_software else ""))
    print()
    for line in render(result.by_delegate()):
        print(line)
    if plan.runs_core_ml or plan.not_split:
        print()
        print(plan.sentence())
    print()
    print("memory, what the file implies:")
    for line in memory.lines():
        print(f"  {line}")
    if verdicts:
        print()
        for verdict in verdicts:
            print(verdict.line())
    return _gate(verdicts)


def _memory_plan(spec: ModelSpec, result: ModelCoverage) -> MemoryPlan:
    """Weights, TFLite's arena plan, the largest tensors, and what each delegate would hold of the nodes it
    takes here (measured coverage; a delegate not measured is predicted as taking every node it may)."""
    delegated = {
        name: {n.index for n in cov.nodes if n.delegated}
        for name, cov in (("cpu", result.cpu), ("gpu", result.gpu))
        if cov.nodes_delegated is not None and cov.nodes
    }
    return plan_memory(spec.content, delegated)


def _gate(verdicts: list[Verdict]) -> int:
    """0 when every rule held; else CheckFailed (exit 7) naming the failed rules (each line printed above)."""
    failed = [str(v.requirement) for v in verdicts if not v.passed]
    if failed:
        raise CheckFailed(f"{len(failed)} of {len(verdicts)} required checks failed: {', '.join(failed)}")
    return 0


def _task_lines(spec: ModelSpec) -> list[str]:
    """The task with its evidence and every input and output, for the models that are not plain
    classifiers (a classifier's text stays as it was)."""
    if not spec.task_json():
        return []
    task = spec.task
    lines = [f"          task {spec.kind.value}" + (f": {task.evidence}" if task else "")]
    for what, tensors in (("input", spec.inputs), ("output", spec.outputs)):
        for i, t in enumerate(tensors):
            quant = f", scale {t.scale:g} zero point {t.zero_point}" if t.scale is not None else ""
            image = " (the image)" if what == "input" and i == spec.image_input else ""
            shape = "x".join(map(str, t.shape)) or "[] (no shape declared)"
            lines.append(f"          {what} {i} '{t.name}' {shape} {t.dtype}{quant}{image}")
    return lines


COMMAND = Command(
    name="inspect",
    help="what each backend would take of a model, node by node",
    description="Show what each backend takes of a model without running a source: CPU (XNNPACK, measured), "
    "GPU (measured where a GPU adapter exists, software renderers flagged) and Core ML (predicted on every OS "
    "from the TFLite Core ML delegate's rules): nodes delegated, partitions, and why each node left on the CPU "
    "stays there.",
    add_arguments=add_arguments,
    run=run,
)
