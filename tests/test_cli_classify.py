"""`delegate-scope classify` as users and scripts call it: real models, real photos, real bad files. The
refusals and usage errors run in processes forked from one that imported the app (tests/helpers/forked_cli.py),
the answers on photos in a fresh interpreter each."""

import sys
from pathlib import Path

import pytest

from tests.helpers.bad_models import bad_models
from tests.helpers.cli import assert_one_line_error, run_cli
from tests.helpers.forked_cli import ForkedCli
from tests.helpers.paths import PHOTOS, TEST_MODELS

# Top-1 that the bundled models must give on the bundled test photos (docs/models.md has the scores).
EXPECTED_TOP1 = {
    "grace_hopper.jpg": {652},  # military uniform (653 in 1001-class label files)
    "chelsea.jpg": {281, 282, 285},  # tabby / tiger cat / Egyptian Mau: the cat is all three
    "coffee.jpg": {967},  # espresso
    "rocket.jpg": {657, 744},  # missile / projectile
}

# google-coral/test_data README, top-1 per model and photo (index in the 1001-class output).
CORAL_TOP1 = {
    "mobilenet_v2_1.0_224_quant.tflite": {
        "cat.bmp": 286,
        "bird.bmp": 20,
        "grace_hopper.bmp": 653,
        "sunflower.bmp": 986,
    },
    "mobilenet_v1_0.25_128_quant.tflite": {
        "cat.bmp": 286,
        "bird.bmp": 20,
        "grace_hopper.bmp": 401,
        "sunflower.bmp": 986,
    },
}


@pytest.mark.parametrize("model", ["efficientnet_lite0", "efficientnet_lite0_int8"])
def test_bundled_models_are_right_on_real_photos(model: str):
    photos = [PHOTOS / name for name in EXPECTED_TOP1]
    run = run_cli("classify", "--model", model, "--json", *photos, fresh=True)
    assert run.returncode == 0, run.stderr
    out = run.json()
    assert out["model"]["name"] == model
    assert out["model"]["classes"] == 1000
    delegate = out["delegate"]
    assert (delegate["requested"], delegate["used"], delegate["fallback_reason"]) == ("cpu", "cpu", None)
    assert delegate["nodes_total"] >= delegate["nodes_delegated"] > 0
    for result in out["results"]:
        top1 = result["top"][0]
        assert top1["index"] in EXPECTED_TOP1[Path(result["image"]).name], result
        assert top1["score"] > 0.25


def test_json_contract():
    run = run_cli("classify", "--json", "--top-k", "3", PHOTOS / "coffee.jpg", fresh=True)
    assert run.returncode == 0, run.stderr
    out = run.json()
    assert set(out) >= {"model", "delegate", "results"}
    assert set(out["model"]) >= {"name", "path", "sha256", "input", "classes"}
    assert out["model"]["input"] == {"shape": [1, 224, 224, 3], "dtype": "float32"}
    assert len(out["model"]["sha256"]) == 64
    (result,) = out["results"]
    assert result["image"].endswith("coffee.jpg")
    assert [set(t) for t in result["top"]] == [{"index", "label", "score"}] * 3
    assert result["top"][0]["label"] == "espresso"
    scores = [t["score"] for t in result["top"]]
    assert scores == sorted(scores, reverse=True)
    assert set(result["timing_ms"]) >= {"preprocess", "inference"}
    assert all(v >= 0 for v in result["timing_ms"].values())


def test_readable_table_without_json():
    run = run_cli("classify", "--top-k", "2", PHOTOS / "grace_hopper.jpg", fresh=True)
    assert run.returncode == 0, run.stderr
    assert "military uniform" in run.stdout
    assert "nodes delegated" in run.stdout
    assert run.stderr == ""  # the runtime's native INFO lines are captured, not dumped on the user


@pytest.mark.parametrize("model_name", sorted(CORAL_TOP1))
def test_third_party_uint8_1001_class_models(coral: Path, model_name: str):
    expected = CORAL_TOP1[model_name]
    run = run_cli("classify", "--model", coral / model_name, "--json", *(coral / name for name in expected), fresh=True)
    assert run.returncode == 0, run.stderr
    out = run.json()
    assert out["model"]["classes"] == 1001
    assert out["model"]["input"]["dtype"] == "uint8"
    for result in out["results"]:
        assert result["top"][0]["index"] == expected[Path(result["image"]).name], result


def test_third_party_model_with_our_1000_line_labels_keeps_its_own_indices(coral: Path, tmp_path: Path):
    """A 1001-class model read with a 1000-line labels file: index 0 is background, labels shift by one."""
    labels = Path(__file__).parent.parent / "models" / "imagenet_labels.txt"
    run = run_cli(
        "classify",
        "--model",
        coral / "mobilenet_v2_1.0_224_quant.tflite",
        "--labels",
        labels,
        "--json",
        "--top-k",
        "1",
        coral / "bird.bmp",
        fresh=True,
    )
    assert run.returncode == 0, run.stderr
    top = run.json()["results"][0]["top"][0]
    assert (top["index"], top["label"]) == (20, "chickadee")


# ---- exit codes, each with a real bad input ---------------------------------------------------


def test_usage_errors_exit_2(forked_cli: ForkedCli):
    assert forked_cli.run("classify").returncode == 2
    assert forked_cli.run("classify", "--top-k", "0", PHOTOS / "coffee.jpg").returncode == 2
    assert forked_cli.run("classify", "--threads", "two", PHOTOS / "coffee.jpg").returncode == 2
    assert forked_cli.run("classify", "--delegate", "tpu", PHOTOS / "coffee.jpg").returncode == 2
    assert forked_cli.run("classify", "--mean", "1,2", PHOTOS / "coffee.jpg").returncode == 2
    assert forked_cli.run("frobnicate").returncode == 2


@pytest.mark.parametrize(
    "case",
    [
        "missing",
        "unknown name",
        "folder",
        "empty",
        "truncated",
        "not tflite",
        "a jpeg",
        "dynamic size",
    ],
)
def test_model_problems_exit_3_with_one_line(tmp_path: Path, case: str, forked_cli: ForkedCli):
    path, fragment = bad_models(tmp_path)[case]
    assert_one_line_error(forked_cli.run("classify", "--model", path, PHOTOS / "coffee.jpg"), 3, fragment)


@pytest.mark.parametrize("model", ["detector_like", "text_input"])
def test_a_model_that_is_no_classifier_is_exit_3_naming_its_task_and_predict(model: str, forked_cli: ForkedCli):
    run = forked_cli.run("classify", "--model", TEST_MODELS / f"{model}.tflite", PHOTOS / "coffee.jpg")
    assert_one_line_error(run, 3, "reads as raw (structure: ")
    assert "use `predict`" in run.stderr


@pytest.mark.slow
def test_runtime_refusal_exits_3(coral: Path, tmp_path: Path, forked_cli: ForkedCli):
    """Bytes that parse as a flatbuffer but that LiteRT refuses to prepare (a corrupted quantization field)."""
    data = bytearray((coral / "mobilenet_v1_0.25_128_quant.tflite").read_bytes())
    # Found by the seeded bit-flip search in tests/test_tflite_file.py's style: flip bits until LiteRT refuses.
    import random

    from app.backends import BackendOptions, get_backend
    from app.errors import ModelError
    from app.model.spec import load_model_spec

    rng = random.Random(7)
    target = tmp_path / "refused.tflite"
    for _ in range(200):
        mutated = bytearray(data)
        for _ in range(20):
            mutated[rng.randrange(len(mutated))] ^= 1 << rng.randrange(8)
        target.write_bytes(bytes(mutated))
        try:
            get_backend("cpu").open(load_model_spec(target), BackendOptions(threads=1)).close()
        except ModelError as exc:
            if "LiteRT runtime refused" in str(exc):
                break
    else:
        pytest.fail("no mutation was refused by the runtime")
    run = forked_cli.run("classify", "--model", target, PHOTOS / "coffee.jpg")
    assert_one_line_error(run, 3, "LiteRT runtime refused")


def test_missing_labels_file_exits_3(tmp_path: Path, forked_cli: ForkedCli):
    run = forked_cli.run("classify", "--labels", tmp_path / "labels.txt", PHOTOS / "coffee.jpg")
    assert_one_line_error(run, 3, "labels file not found")


def test_image_problems_exit_4(tmp_path: Path, forked_cli: ForkedCli):
    text = tmp_path / "notes.jpg"
    text.write_text("not an image")
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    damaged = tmp_path / "damaged.png"
    damaged.write_bytes((PHOTOS / "coffee.jpg").read_bytes()[:200])
    for path, fragment in [
        (tmp_path / "nope.jpg", "not found"),
        (text, "not a readable image"),
        (empty, "empty"),
        (damaged, "not a readable image"),
        (tmp_path, "folder"),
    ]:
        assert_one_line_error(forked_cli.run("classify", path), 4, fragment)


def test_one_bad_image_among_good_ones_still_reports_the_good_ones(tmp_path: Path, forked_cli: ForkedCli):
    run = forked_cli.run("classify", "--json", PHOTOS / "coffee.jpg", tmp_path / "missing.jpg", PHOTOS / "rocket.jpg")
    assert run.returncode == 4
    out = run.json()
    assert [Path(r["image"]).name for r in out["results"]] == ["coffee.jpg", "rocket.jpg"]
    assert out["errors"][0]["image"].endswith("missing.jpg")
    assert "Traceback" not in run.stderr


def test_debug_shows_the_traceback(tmp_path: Path, forked_cli: ForkedCli):
    run = forked_cli.run("classify", "--debug", "--model", tmp_path / "nope.tflite", PHOTOS / "coffee.jpg")
    assert run.returncode == 3
    assert "Traceback" in run.stderr


@pytest.mark.parametrize("model", ["efficientnet_lite0", "efficientnet_lite0_int8"])
def test_bundled_models_agree_with_a_third_party_classifier_on_its_photos(coral: Path, model: str):
    """MobileNet v2's answers (1001-class indices) shifted to our 1000-class indices."""
    expected = {name: index - 1 for name, index in CORAL_TOP1["mobilenet_v2_1.0_224_quant.tflite"].items()}
    photos = [coral / name for name in expected]
    run = run_cli("classify", "--model", model, "--json", "--top-k", "1", *photos, fresh=True)
    assert run.returncode == 0, run.stderr
    got = {Path(r["image"]).name: r["top"][0]["index"] for r in run.json()["results"]}
    assert got == expected


@pytest.mark.slow
def test_inference_cpu_is_the_inference_threads_not_the_whole_process():
    """Process CPU time also counted OpenCV's worker pool spinning after the resize ("2.00x wall" with
    one thread). The figure is now the calling thread plus the threads the runtime started at open;
    the rest of the process is reported apart."""
    one = run_cli("classify", "--threads", "1", "--json", *sorted(PHOTOS.glob("*.jpg")), fresh=True)
    assert one.returncode == 0, one.stderr
    for r in one.json()["results"]:
        split = r["inference_cpu_ms"]
        assert set(split) == {"inference_thread", "runtime_threads", "rest_of_process", "waited_for_a_core"}
        if sys.platform.startswith("linux"):  # schedstat: the thread's wait for a core, within its wall time
            assert 0 <= split["waited_for_a_core"] <= r["timing_ms"]["inference"] + 0.01, r
        # One thread cannot use more CPU than wall time (5% for clock granularity).
        assert r["cpu_per_wall"] <= 1.05, r
        assert r["timing_ms"]["inference_cpu"] == pytest.approx(
            split["inference_thread"] + (split["runtime_threads"] or 0), abs=0.002
        )
    two = run_cli("classify", "--threads", "2", "--json", *sorted(PHOTOS.glob("*.jpg")), fresh=True)
    runtime = [r["inference_cpu_ms"]["runtime_threads"] for r in two.json()["results"]]
    if sys.platform.startswith("linux"):  # XNNPACK's second thread is a worker the runtime started
        assert all(ms is not None for ms in runtime) and max(runtime) > 0.5, runtime
