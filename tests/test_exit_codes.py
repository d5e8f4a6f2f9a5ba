"""Exit codes are a contract (README, "Exit codes"): one table over every command, each row a process of
its own. Each row: the command, its exit code, and the first words of the one error line. The rows run in
processes forked from one that imported the app once (tests/helpers/forked_cli.py); a row of each exit
code runs as a user runs it too, in a fresh interpreter, and must give the same code, stdout and stderr."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.cli.main import commands
from tests.helpers.cli import assert_one_line_error, run_cli
from tests.helpers.forked_cli import ForkedCli
from tests.helpers.paths import PHOTOS, ROOT, TEST_MODELS
from tests.helpers.vulkan import NO_VULKAN

MISSING = "/nonexistent/nope.tflite"
GATES = ROOT / "tests" / "data" / "gates"  # summaries written by bench, sweep and inspect --json

# (id, argv with {tmp} for a scratch folder, extra environment, exit code, first words of the message)
# fmt: off
TABLE: list[tuple[str, list[str], dict[str, str], int, str | None]] = [
    ("classify: missing model", ["classify", "--model", MISSING, str(PHOTOS / "coffee.jpg")], {}, 3, "nope.tflite"),
    ("classify: not a classifier", ["classify", "--model", str(TEST_MODELS / "detector_like.tflite"),
                                    str(PHOTOS / "coffee.jpg")], {}, 3, "detector_like.tflite"),
    ("classify: missing image", ["classify", "{tmp}/nope.jpg"], {}, 4, "{tmp}/nope.jpg"),
    ("classify: no GPU, --no-fallback", ["classify", "--delegate", "gpu", "--no-fallback", str(PHOTOS / "coffee.jpg")],
     NO_VULKAN, 5, "the gpu delegate is not available"),
    ("classify: Core ML off macOS, --no-fallback", ["classify", "--delegate", "coreml", "--no-fallback",
     str(PHOTOS / "coffee.jpg")], {}, 5, "the coreml delegate is not available"),
    ("classify: usage", ["classify", "--top-k", "0", str(PHOTOS / "coffee.jpg")], {}, 2, None),
    ("predict: missing model", ["predict", "--model", MISSING, str(PHOTOS / "coffee.jpg")], {}, 3, "nope.tflite"),
    ("predict: no image input", ["predict", "--model", str(TEST_MODELS / "text_input.tflite"),
                                 str(PHOTOS / "coffee.jpg")], {}, 3, "text_input.tflite: predict takes image models"),
    ("predict: --task that does not fit", ["predict", "--task", "detection", str(PHOTOS / "coffee.jpg")], {}, 3,
     "efficientnet_lite0.tflite: --task detection does not fit this model"),
    ("predict: missing image", ["predict", "{tmp}/nope.jpg"], {}, 4, "{tmp}/nope.jpg"),
    ("predict: usage", ["predict", "--input-shape", "x=1xAx3", str(PHOTOS / "coffee.jpg")], {}, 2, None),
    ("inspect: missing model", ["inspect", "--model", MISSING], NO_VULKAN, 3, "nope.tflite"),
    ("inspect: dynamic input not fixed", ["inspect", "--model", str(TEST_MODELS / "dynamic_size.tflite")], NO_VULKAN,
     3, "dynamic_size.tflite: input "),
    ("inspect: --input-shape of no input", ["inspect", "--model", str(TEST_MODELS / "dynamic_size.tflite"),
     "--input-shape", "image=1x64x64x3"], NO_VULKAN, 3, "dynamic_size.tflite: --input-shape names 'image'"),
    ("inspect: not TFLite", ["inspect", "--model", str(PHOTOS / "coffee.jpg")], NO_VULKAN, 3, "coffee.jpg"),
    ("inspect: usage", ["inspect", "--coreml-version", "4"], {}, 2, None),
    ("inspect: a rule that does not parse", ["inspect", "--require", "gpu:partial"], {}, 2, None),
    ("inspect: a required rule fails", ["inspect", "--require", "cpu:full", "coreml:full"], NO_VULKAN, 7,
     "1 of 2 required checks failed: coreml:full"),
    ("delegates: usage", ["delegates", "--model", "efficientnet_lite0"], {}, 2, None),
    ("numerics: missing model", ["numerics", "--model", MISSING], {}, 3, "nope.tflite"),
    ("numerics: no GPU", ["numerics", "--delegate", "gpu"], NO_VULKAN, 5, "the gpu delegate is not available"),
    ("numerics: Core ML off macOS", ["numerics", "--delegate", "coreml"], {}, 5,
     "the coreml delegate is not available"),
    ("numerics: XNNPACK against itself", ["numerics", "--delegate", "cpu", "--against", "cpu"], {}, 2,
     "--delegate cpu against --against cpu"),
    ("numerics: images and a source", ["numerics", "--delegate", "cpu", "--against", "reference", "--source", "demo",
     str(PHOTOS / "coffee.jpg")], {}, 2, "give images or --source, not both"),
    ("numerics: missing image", ["numerics", "--delegate", "cpu", "--against", "reference", "{tmp}/nope.jpg"], {}, 4,
     "{tmp}/nope.jpg"),
    ("numerics: camera that does not open", ["numerics", "--delegate", "cpu", "--against", "reference", "--source",
     "camera:42"], {}, 6, "camera 42"),
    ("numerics: images for a model without an image input", ["numerics", "--delegate", "cpu", "--against",
     "reference", "--model", str(TEST_MODELS / "text_input.tflite"), str(PHOTOS / "coffee.jpg")], {}, 3,
     "text_input.tflite takes no image"),
    ("numerics: Model Explorer file in a missing folder", ["numerics", "--delegate", "cpu", "--against", "reference",
     "--model-explorer", "{tmp}/no/such/me.json"], {}, 2, "--model-explorer: cannot write {tmp}/no/such/me.json"),
    ("numerics: usage", ["numerics", "--min-cosine", "2"], {}, 2, None),
    ("bench: camera that does not open", ["bench", "--source", "camera:42", "--frames", "5"], {}, 6, "camera 42"),
    ("bench: missing video", ["bench", "--source", "video:{tmp}/nope.mp4"], {}, 6, "video file not found"),
    ("bench: missing model", ["bench", "--model", MISSING], {}, 3, "nope.tflite"),
    ("bench: no GPU, --no-fallback", ["bench", "--delegate", "gpu", "--no-fallback", "--frames", "5"], NO_VULKAN, 5,
     "the gpu delegate is not available"),
    ("bench: usage", ["bench", "--frames", "0"], {}, 2, None),
    ("bench: a relative budget without a baseline", ["bench", "--budget", "rate>=-5%"], {}, 2,
     "--budget 'rate>=-5%' is relative to a baseline"),
    ("bench: a baseline of another model", ["bench", "--model", "efficientnet_lite0_int8", "--baseline",
     str(GATES / "bench_2threads.json")], {}, 2, f"--baseline {GATES / 'bench_2threads.json'}: model sha256"),
    ("bench A/B: a budget that fails", ["bench", "--source", "synthetic", "--compare-model", "efficientnet_lite0_int8",
     "--frames", "10", "--compare-alone-seconds", "0", "--budget", "agreement.top1>=1.01"], {}, 7,
     "1 budget failed: A/B: agreement.top1>=1.01"),
    ("bench A/B: camera that does not open", ["bench", "--source", "camera:42", "--compare-model",
     "efficientnet_lite0_int8", "--compare-alone-seconds", "0"], {}, 6, "camera 42"),
    ("bench A/B: missing model B", ["bench", "--compare-model", MISSING], {}, 3, "nope.tflite"),
    ("profile: missing model", ["profile", "--model", MISSING], {}, 3, "nope.tflite"),
    ("profile: not TFLite", ["profile", "--model", str(PHOTOS / "coffee.jpg")], {}, 3, "coffee.jpg"),
    ("profile: no GPU, --no-fallback", ["profile", "--delegate", "gpu", "--no-fallback"], NO_VULKAN, 5,
     "the gpu delegate is not available"),
    ("profile: Core ML off macOS, --no-fallback", ["profile", "--delegate", "coreml", "--no-fallback"], {}, 5,
     "the coreml delegate is not available"),
    ("profile: Model Explorer file in a missing folder", ["profile", "--model-explorer", "{tmp}/no/such/me.json"],
     {}, 2, "--model-explorer"),
    ("profile: usage", ["profile", "--runs", "0"], {}, 2, None),
    ("profile: missing --inputs file", ["profile", "--model", str(TEST_MODELS / "text_input.tflite"), "--inputs",
     "{tmp}/nope.npz"], {}, 4, "inputs file not found: {tmp}/nope.npz"),
    ("report: missing recording", ["report", "{tmp}/nope.csv", "--out", "{tmp}/r.html"], {}, 2, "{tmp}/nope.csv"),
    ("report: not a recording", ["report", str(PHOTOS.parent.parent / "conftest.py"), "--out", "{tmp}/r.html"], {},
     2, "{root}/tests/conftest.py: not a Delegate Scope recording"),
    ("report: unsupported output", ["report", "{tmp}/nope.csv", "--out", "{tmp}/r.txt"], {}, 2, "--out"),
    ("sweep: missing model", ["sweep", "--model", MISSING], {}, 3, "nope.tflite"),
    ("sweep: one good model, one missing", ["sweep", "--model", "efficientnet_lite0", "--model", MISSING], {}, 3,
     "nope.tflite"),
    ("sweep: camera that does not open", ["sweep", "--source", "camera:42", "--frames", "5"], {}, 6, "camera 42"),
    ("sweep: missing video", ["sweep", "--source", "video:{tmp}/nope.mp4"], {}, 6, "video file not found"),
    ("sweep: more frames than memory allows", ["sweep", "--frames", "100000"], {}, 2, "100000 frames of 1280x720"),
    ("sweep: report that is not HTML", ["sweep", "--html", "{tmp}/r.png"], {}, 2, "--html {tmp}/r.png"),
    ("sweep: JSON into a missing folder", ["sweep", "--json", "{tmp}/no/s.json"], {}, 2, "--json {tmp}/no/s.json"),
    ("sweep: usage", ["sweep", "--frames", "0"], {}, 2, None),
    ("sweep: a baseline that is not a sweep", ["sweep", "--baseline", str(GATES / "bench_1thread.json")], {}, 2,
     f"--baseline {GATES / 'bench_1thread.json'}: it holds a bench summary, and this is sweep"),
    ("compare: missing file", ["compare", "{tmp}/a.json", str(GATES / "sweep.json")], {}, 2,
     "{tmp}/a.json: no such file"),
    ("compare: not JSON", ["compare", str(PHOTOS / "coffee.jpg"), str(GATES / "sweep.json")], {}, 2, "coffee.jpg: "),
    ("compare: two kinds", ["compare", str(GATES / "sweep.json"), str(GATES / "inspect_efficientnet_lite0.json")], {},
     2, "{root}/tests/data/gates/sweep.json holds a sweep summary"),
    ("compare: a budget that fails", ["compare", str(GATES / "bench_2threads.json"), str(GATES / "bench_1thread.json"),
     "--budget", "inference.p50<=+10%"], {}, 7, "1 budget failed: inference.p50<=+10%"),
    ("compare: usage", ["compare", str(GATES / "sweep.json")], {}, 2, None),
    ("gui: no display", ["gui", "--exit-after", "1"], {"DISPLAY": "", "QT_QPA_PLATFORM": "", "WAYLAND_DISPLAY": ""},
     2, "no display to open the window on"),
    ("gui: screenshot without exit-after", ["gui", "--screenshot", "{tmp}/s.png"], {}, 2, "--screenshot"),
    ("gui: scripted run whose source never opens", ["gui", "--source", "video:{tmp}/nope.mp4", "--settings",
     "{tmp}/s.ini", "--exit-after", "3"], {"QT_QPA_PLATFORM": "offscreen"}, 6, "video file not found: {tmp}/nope.mp4"),
]
# fmt: on


# Also run in a fresh interpreter, as a user runs them: one row of each exit code, the environment's
# variables (no Vulkan device, no display) among them.
FRESH = {
    "classify: missing model",
    "classify: missing image",
    "bench: no GPU, --no-fallback",
    "numerics: camera that does not open",
    "compare: a budget that fails",
    "gui: no display",
    "profile: usage",
}


def _untimed(text: str) -> str:
    return re.sub(r"\d+(\.\d+)? ms\b", "_ ms", text)


# Over 1.5 s: the window runs until its --exit-after.
SLOW = {"gui: scripted run whose source never opens"}


@pytest.mark.parametrize(
    "name,argv,env,code,start",
    [pytest.param(*row, marks=pytest.mark.slow) if row[0] in SLOW else row for row in TABLE],
    ids=[row[0] for row in TABLE],
)
def test_exit_code_contract(
    name: str, argv: list[str], env: dict, code: int, start: str | None, tmp_path: Path, forked_cli: ForkedCli
):
    root = str(Path(__file__).resolve().parent.parent)
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    run = forked_cli.run(*argv, env=env)
    if name in FRESH:
        fresh = run_cli(*argv, env=env, fresh=True)
        assert (fresh.returncode, fresh.stderr) == (run.returncode, run.stderr)
        assert _untimed(fresh.stdout) == _untimed(run.stdout)  # what it printed before the error, timings aside
    if start is None:  # argparse's own usage errors: exit 2 and its usage text
        assert run.returncode == code and "usage:" in run.stderr, (run.returncode, run.stderr)
        return
    message = start.replace("{tmp}", str(tmp_path)).replace("{root}", root)
    assert_one_line_error(run, code)
    first_line = run.stderr.strip().splitlines()[0].removeprefix("delegate-scope: error: ")
    assert first_line.startswith(message) or message in first_line, (first_line, message)


@pytest.fixture(scope="module")
def custom_op_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An image classifier in shape whose node 1 is a custom op no runtime here has (as PoseNet's decoder)."""
    from tests.builders.tflite_builder import GraphBuilder

    g = GraphBuilder()
    image = g.input((1, 8, 8, 3))
    relu = g.tensor((1, 8, 8, 3))
    g.op("RELU", [image], [relu])
    scores = g.tensor((1, 10))
    g.custom("PosenetDecoderOp", [relu], [scores])
    path = tmp_path_factory.mktemp("custom") / "custom_op.tflite"
    path.write_bytes(g.build([scores]))
    return path


@pytest.mark.parametrize("command", ["classify", "predict", "profile", "bench", "numerics"])
@pytest.mark.parametrize("delegate", ["cpu", "gpu"])
def test_an_unresolved_custom_op_is_exit_3_naming_the_op_and_its_node(
    custom_op_model: Path, command: str, delegate: str, forked_cli: ForkedCli
):
    """On any delegate, available or not, and without a fallback: the model is the problem, so its refusal
    (exit 3) wins over the GPU's absence (exit 5). (`inspect` shows what the file says: test_inspect_custom_op.py.)"""
    # bench: its capture thread said RUNNING after the inference thread's ERROR, and bench waited forever
    # (2 runs of 4); an ERROR is now final (app/pipeline/run_log.py).
    images = [str(PHOTOS / "coffee.jpg")] if command in ("classify", "predict") else []
    images += ["--frames", "5", "--no-fallback"] if command == "bench" else []
    against = ["--against", "reference"] if command == "numerics" and delegate == "cpu" else []
    run = forked_cli.run(command, "--model", custom_op_model, "--delegate", delegate, *against, *images, env=NO_VULKAN)
    assert_one_line_error(run, 3, "the custom op 'PosenetDecoderOp' (node 1)")


def test_the_table_covers_every_command():
    named = {row[1][0] for row in TABLE}
    assert named == {command.name for command in commands()}  # a new command brings its rows
    assert {row[3] for row in TABLE} == {2, 3, 4, 5, 6, 7}
    fresh = [row for row in TABLE if row[0] in FRESH]
    assert len(fresh) == len(FRESH) and {row[3] for row in fresh} == {2, 3, 4, 5, 6, 7}
