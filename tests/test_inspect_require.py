"""`inspect --require RULE ...` as a CI job runs it: each rule one line (ok or failed, naming the nodes that
break it and why the delegate refuses them), exit 7 when any fails, the rules in the JSON, usage errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.coverage import Coverage, NodeCoverage
from app.coverage.requirements import Comparison, RuleError, RuleKind, evaluate, parse_requirement
from app.system.names import Delegate
from tests.helpers.cli import CliRun, assert_one_line_error, run_cli
from tests.helpers.vulkan import NO_VULKAN

SSD = "coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite"


def _rule_lines(run: CliRun) -> list[str]:
    return [line for line in run.stdout.splitlines() if line.startswith("required ")]


@pytest.mark.slow
def test_coreml_full_fails_on_mobilenet_v1_naming_reshape_and_softmax(mobilenet_v1: Path):
    run = run_cli("inspect", "--model", mobilenet_v1, "--require", "coreml:full", "coreml:nodes>=29", env=NO_VULKAN)
    assert_one_line_error(run, 7, "1 of 2 required checks failed: coreml:full")
    assert _rule_lines(run) == [
        "required coreml:full failed: 2 of 31 nodes not delegated: "
        "#29 RESHAPE (the delegate takes no Reshape when it builds Core ML 3 models (its default); coreml_version 2 "
        "would not either: its target shape has 2 dimensions; Core ML 2 reshape takes 3 or 4), "
        "#30 SOFTMAX (supported, but its partition has 1 node; the delegate keeps partitions of at least 2)",
        "required coreml:nodes>=29 ok: 29 of 31 nodes delegated",
    ]
    # Combined with the Core ML version: v2 refuses the Reshape for its rank, the same outcome.
    v2 = run_cli("inspect", "--model", mobilenet_v1, "--require", "coreml:full", "--coreml-version", "2", "--json",
                 env=NO_VULKAN)  # fmt: skip
    assert v2.returncode == 7, v2.stderr
    (rule,) = v2.json()["requirements"]
    assert (rule["rule"], rule["passed"], rule["checked"]) == ("coreml:full", False, True)
    assert [(n["index"], n["op"]) for n in rule["nodes"]] == [(29, "RESHAPE"), (30, "SOFTMAX")]
    assert "Core ML 2 reshape takes 3 or 4" in rule["nodes"][0]["reason"]


@pytest.mark.slow
def test_gpu_full_fails_on_the_ssd_under_swiftshader_naming_the_post_processing(vision: Path, swiftshader: dict):
    run = run_cli("inspect", "--model", vision / SSD, "--require", "gpu:full", "gpu:partitions<=1", env=swiftshader)
    assert_one_line_error(run, 7, "1 of 2 required checks failed: gpu:full")
    assert _rule_lines(run) == [
        "required gpu:full failed: 1 of 64 nodes not delegated: #63 CUSTOM:TFLite_Detection_PostProcess "
        "(the GPU accelerator refuses it: TFLite_Detection_PostProcess (this node compiled alone))",
        "required gpu:partitions<=1 ok: 1 partition delegated",
    ]


@pytest.mark.slow
def test_counted_and_op_rules_pass_and_fail_on_the_bundled_models():
    run = run_cli("inspect", "--require", "cpu:full", "cpu:partitions<=1", "cpu:nodes==61", "coreml:partitions==2",
                  "--require", "coreml:nodes>=61", "coreml:no-op=MEAN", "coreml:no-op=CUSTOM_THING",
                  env=NO_VULKAN)  # fmt: skip
    assert_one_line_error(run, 7, "2 of 7 required checks failed: coreml:nodes>=61, coreml:no-op=MEAN")
    mean = "#58 MEAN (keep_dims is false; the delegate takes Mean only with keep_dims (as global average pooling))"
    assert _rule_lines(run) == [
        "required cpu:full ok: all 61 nodes delegated",
        "required cpu:partitions<=1 ok: 1 partition delegated",
        "required cpu:nodes==61 ok: 61 of 61 nodes delegated",
        "required coreml:partitions==2 ok: 2 partitions delegated",
        f"required coreml:nodes>=61 failed: 60 of 61 nodes delegated: {mean}",
        f"required coreml:no-op=MEAN failed: 1 MEAN node left on the CPU: {mean}",
        "required coreml:no-op=CUSTOM_THING ok: 0 CUSTOM_THING nodes left on the CPU",
    ]
    # All hold: exit 0, and the JSON carries each verdict.
    ok = run_cli("inspect", "--model", "efficientnet_lite0_int8", "--json", "--require", "cpu:nodes<=60",
                 "coreml:nodes==0", "coreml:partitions<=0", env=NO_VULKAN)  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    assert [(r["rule"], r["passed"], r["nodes"]) for r in ok.json()["requirements"]] == [
        ("cpu:nodes<=60", True, []),
        ("coreml:nodes==0", True, []),
        ("coreml:partitions<=0", True, []),
    ]


def test_partitions_over_the_bound_name_the_nodes_that_split_the_graph(vision: Path):
    run = run_cli("inspect", "--model", vision / SSD, "--require", "cpu:partitions<=1",
                  "cpu:no-op=TFLite_Detection_PostProcess", env=NO_VULKAN)  # fmt: skip
    assert run.returncode == 7, run.stderr
    xnnpack = "(XNNPACK did not take it (the runtime does not say why); LiteRT's built-in CPU kernel runs it)"
    assert _rule_lines(run) == [
        "required cpu:partitions<=1 failed: 2 partitions delegated, split by the nodes left on the CPU: "
        f"#57 CONCATENATION {xnnpack}, #61 CONCATENATION {xnnpack}",
        "required cpu:no-op=TFLite_Detection_PostProcess failed: 1 TFLite_Detection_PostProcess node left on the "
        f"CPU: #63 TFLite_Detection_PostProcess {xnnpack}",
    ]


@pytest.mark.slow
def test_a_delegate_whose_coverage_is_unknown_fails_its_rules_unchecked():
    run = run_cli("inspect", "--require", "gpu:nodes>=0", "--json", env=NO_VULKAN)
    assert_one_line_error(run, 7, "1 of 1 required checks failed: gpu:nodes>=0")
    (rule,) = run.json()["requirements"]
    assert (rule["passed"], rule["checked"]) == (False, False)
    assert rule["detail"].startswith("could not be checked, the gpu coverage is unknown: no GPU here: ")
    text = run_cli("inspect", "--require", "gpu:nodes>=0", env=NO_VULKAN)
    assert _rule_lines(text) == [f"required gpu:nodes>=0 failed: {rule['detail']}"]


@pytest.mark.slow
def test_without_require_the_json_has_no_requirements_key():
    run = run_cli("inspect", "--json", env=NO_VULKAN)
    assert run.returncode == 0 and "requirements" not in run.json()


@pytest.mark.parametrize(
    "rule,fragment",
    [
        ("gpu", "'gpu' is not a rule (DELEGATE:RULE)"),
        ("tpu:full", "'tpu' is not a delegate inspect reports; delegates: cpu, gpu, coreml"),
        ("reference:full", "'reference' is not a delegate inspect reports"),
        ("gpu:partial", "'partial' is not a rule; rules: DELEGATE:full, DELEGATE:partitions<=N"),
        ("gpu:nodes<3", "'nodes<3' is not a rule"),
        ("gpu:nodes>=x", "'nodes>=x' is not a rule"),
        ("cpu:no-op=", "'no-op=' is not a rule"),
    ],
)
def test_a_rule_that_does_not_parse_is_a_usage_error_naming_it(rule: str, fragment: str):
    run = run_cli("inspect", "--require", "cpu:full", rule)
    assert run.returncode == 2 and "usage:" in run.stderr, run.stderr
    assert f"argument --require: '{rule}'" in run.stderr and fragment in run.stderr
    assert "Traceback" not in run.stderr


def test_rules_spell_back_as_typed():
    for text in ("gpu:full", "coreml:partitions<=1", "cpu:nodes>=60", "gpu:nodes==3", "cpu:no-op=CUSTOM:X"):
        assert str(parse_requirement(text)) == text
    r = parse_requirement("COREML:partitions>=2")
    assert (r.delegate, r.kind, r.comparison, r.bound) == (Delegate.COREML, RuleKind.PARTITIONS, Comparison.AT_LEAST, 2)
    with pytest.raises(RuleError):
        parse_requirement("gpu: full")


def test_nodes_whose_delegation_is_not_reported_fail_unchecked():
    """A GPU coverage with open nodes (equal partitions, one taken) never passes `full` by omission."""
    nodes = (NodeCoverage(0, "ADD", 1, True, 0, None), NodeCoverage(1, "MUL", 1, None, None, "open"))
    coverage = Coverage("gpu", "measured", None, 2, 1, 1, 1, None, nodes)
    for rule in ("gpu:full", "gpu:nodes>=1", "gpu:no-op=MUL"):
        verdict = evaluate(parse_requirement(rule), coverage)
        assert (verdict.passed, verdict.checked) == (False, False), rule
        assert "which nodes it delegates is not reported" in verdict.line()
    # A rule on an op the open nodes are not: it reads only known nodes.
    assert evaluate(parse_requirement("gpu:no-op=SUB"), coverage).passed


def test_a_counted_rule_on_a_delegate_that_takes_no_node_fails_as_vacuous():
    """Core ML refuses every node of an integer model: `partitions<=1` holds of its 0 partitions only
    vacuously and fails, saying so; a rule that asks for none (`nodes==0`, `partitions<=0`) is met."""
    ops = ("CONV_2D", "SOFTMAX")
    nodes = tuple(NodeCoverage(i, op, 1, False, None, "its input is uint8") for i, op in enumerate(ops))
    coverage = Coverage("coreml", "predicted", None, 2, 0, 0, 0, None, nodes)
    for rule in ("coreml:partitions<=1", "coreml:nodes<=5", "coreml:nodes>=0", "coreml:partitions>=0"):
        verdict = evaluate(parse_requirement(rule), coverage)
        body = rule.partition(":")[2]
        assert (verdict.passed, verdict.checked) == (False, True), rule
        why = f"coreml takes no node of this model: {body} holds only vacuously"
        assert verdict.line() == f"required {rule} failed: {why}"
    for rule in ("coreml:nodes==0", "coreml:partitions<=0", "coreml:partitions==0", "coreml:nodes<=0"):
        assert evaluate(parse_requirement(rule), coverage).passed, rule
    # Rules that fail on their own say their own reason.
    assert evaluate(parse_requirement("coreml:nodes>=1"), coverage).detail == "0 of 2 nodes delegated"
    assert not evaluate(parse_requirement("coreml:no-op=SOFTMAX"), coverage).passed


def test_coreml_partitions_on_an_integer_model_fails_the_gate(coral: Path):
    """Core ML takes none of the 31 nodes of a uint8 MobileNet: the rule that read "ok: 0 partitions
    delegated" fails with exit 7."""
    run = run_cli("inspect", "--model", coral / "mobilenet_v1_0.25_128_quant.tflite", "--require",
                  "coreml:partitions<=1", env=NO_VULKAN)  # fmt: skip
    assert_one_line_error(run, 7, "1 of 1 required checks failed: coreml:partitions<=1")
    assert _rule_lines(run) == [
        "required coreml:partitions<=1 failed: coreml takes no node of this model: partitions<=1 holds only vacuously"
    ]
