"""The first breaking node has one definition under every mode and against every reference: the first
node, in execution order, among those measured, whose row crosses the threshold, the rule that marks a
row "BREAKS". The search's bisection proposes it; a measured row before it that crosses (the error is not
monotone: a later node can bring it back under) is the first, said in a note. On the real CLI and LiteRT."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.builders.tflite_builder import GraphBuilder, options
from tests.helpers.cli import run_cli
from tests.helpers.vulkan import NO_VULKAN

pytestmark = pytest.mark.xdist_group("numerics")

STRICT = ("--min-snr-db", "200")  # XNNPACK's fp32 convolution against the reference kernels: about 130 dB


def _conv(g: GraphBuilder, x: int, rng: np.random.Generator) -> int:
    w = g.const(rng.standard_normal((8, 3, 3, 8)).astype(np.float32))
    b = g.const(rng.standard_normal(8).astype(np.float32))
    out = g.tensor((1, 16, 16, 8))
    conv = options("Conv2DOptions", padding=0, strideW=1, strideH=1, dilationWFactor=1, dilationHFactor=1)
    g.op("CONV_2D", [x, w, b], [out], conv)
    return out


def _times_zero(g: GraphBuilder, x: int) -> int:
    """x * 0: exactly 0 on every kernel, so the error a node before it carries ends here."""
    out = g.tensor((1, 16, 16, 8))
    g.op("MUL", [x, g.const(np.zeros((1, 1, 1, 8), np.float32))], [out], options("MulOptions"))
    return out


@pytest.fixture(scope="module")
def healed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Node 0 (a convolution) crosses a strict threshold, node 1 (x * 0) brings the error back to nothing,
    nodes 2-7 keep it at nothing, node 8 (a convolution) crosses again, and the outputs (node 9) with it."""
    rng = np.random.default_rng(3)
    g = GraphBuilder()
    x = g.input((1, 16, 16, 8))
    t = _times_zero(g, _conv(g, x, rng))
    for _ in range(6):
        nxt = g.tensor((1, 16, 16, 8))
        g.op("ADD", [t, x], [nxt], options("AddOptions"))
        t = nxt
    t = _conv(g, t, rng)
    out = g.tensor((1, 16, 16, 8))
    g.op("RELU", [t], [out])
    path = tmp_path_factory.mktemp("numerics") / "healed.tflite"
    path.write_bytes(g.build([out]))
    return path


@pytest.fixture(scope="module")
def ends_exact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Node 0 crosses a strict threshold and node 1 (x * 0) ends exact: the outputs do not break."""
    g = GraphBuilder()
    x = g.input((1, 16, 16, 8))
    out = _times_zero(g, _conv(g, x, np.random.default_rng(3)))
    path = tmp_path_factory.mktemp("numerics") / "ends_exact.tflite"
    path.write_bytes(g.build([out]))
    return path


def _numerics(model: Path, *args: str, env: dict | None = None) -> dict:
    run = run_cli("numerics", "--model", model, *args, "--json", env=env or NO_VULKAN)
    assert run.returncode == 0, run.stderr
    out = run.json()
    # The one definition: the summary is the first row marked as breaking.
    marked = [r["node"] for r in out["rows"] if r["breaks"]]
    assert out["first_breaking"] == (marked[0] if marked else None), (out["first_breaking"], marked)
    return out


@pytest.mark.parametrize("mode", [(), ("--all",)], ids=["search", "all"])
def test_a_node_that_breaks_though_the_outputs_do_not_is_the_first_breaking(ends_exact: Path, mode: tuple):
    out = _numerics(ends_exact, "--delegate", "cpu", "--against", "reference", *STRICT, *mode)
    assert (out["first_breaking"], out["output_breaks"]) == (0, False)
    assert [(r["node"], r["breaks"]) for r in out["rows"]] == [(0, True), (1, False)]
    if not mode:
        assert out["notes"] == [
            "node 0 crosses the threshold though the outputs do not: the error is not monotone here, so the "
            "bisection had nothing to search; --all measures every node"
        ]


@pytest.mark.slow
def test_a_measured_row_before_the_bisections_node_is_the_first(healed: Path):
    """The bisection lands on node 8; a window wide enough to measure node 0 makes node 0 the first."""
    narrow = _numerics(healed, "--delegate", "cpu", "--against", "reference", *STRICT, "--window", "1")
    assert narrow["first_breaking"] == 8 and narrow["notes"] == []  # node 0 is not measured: the search's answer
    wide = _numerics(healed, "--delegate", "cpu", "--against", "reference", *STRICT, "--window", "8")
    assert wide["first_breaking"] == 0
    assert wide["notes"] == [
        "node 0 crosses the threshold before node 8, the one the bisection found: the error is not monotone "
        "here; --all measures every node"
    ]
    every = _numerics(healed, "--delegate", "cpu", "--against", "reference", *STRICT, "--all")
    assert every["first_breaking"] == 0 and [r["node"] for r in every["rows"] if r["breaks"]] == [0, 8, 9]


def test_the_text_names_the_first_row_it_marks(ends_exact: Path):
    run = run_cli("numerics", "--model", ends_exact, "--delegate", "cpu", "--against", "reference", *STRICT,
                  env=NO_VULKAN)  # fmt: skip
    assert run.returncode == 0, run.stderr
    first = next(line for line in run.stdout.splitlines() if line.startswith("first breaking node"))
    assert first.startswith("first breaking node 0 (CONV_2D, ") and "< 200 dB" in first


@pytest.mark.slow
def test_against_the_cpu_the_gpu_s_first_breaking_is_its_first_marked_row(swiftshader: dict, healed: Path):
    """The GPU at fp16 against XNNPACK fp32: the same rule, under both modes."""
    for mode in ((), ("--all",)):
        out = _numerics(healed, "--delegate", "gpu", "--allow-software-gpu", *STRICT, "--window", "8", *mode,
                        env=swiftshader)  # fmt: skip
        assert out["first_breaking"] == 0, out["rows"]


@pytest.mark.slow
def test_an_int8_classifier_on_a_photo_names_the_node_its_rows_mark(coral: Path):
    """Measured: XNNPACK's uint8 MobileNet v1 0.25/128 against the reference kernels on bird.bmp crosses
    30 dB at node 20 (29.4 dB) and node 26, while the outputs stay at 32.2 dB: the search said "first
    breaking node: none" beside rows marked BREAKS."""
    model, image = coral / "mobilenet_v1_0.25_128_quant.tflite", coral / "bird.bmp"
    for mode in ((), ("--all",)):
        out = _numerics(model, "--delegate", "cpu", "--against", "reference", str(image), *mode)
        assert (out["first_breaking"], out["output_breaks"]) == (20, False)
