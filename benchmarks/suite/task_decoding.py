"""Does each task's decoding keep up with the accelerator? For one model of each kind, side by side in one
run: `bench --source demo --no-pace` against the model alone (the ratio), and bench's queue, inference,
postprocess and end-to-end p50s, the end to end's mean split into its parts (bench's e2e line: queue +
inference + postprocess + the rest), with the results the results thread dropped (a live source only;
the demo clip read unpaced keeps every result), beside the decoding alone on one real output.

"Alone" runs the model back to back reading its first output (`run`, a classifier's path); "alone, every
output" reads them all (`run_all`), as the pipeline does for a model that is not a classifier: on a GPU
each output is a buffer of its own to read back, so for a detector of two outputs that is the fair
reference. `--before CHECKOUT` runs each bench leg in that checkout too, interleaved over `--rounds`
(medians over the rounds): the tree before a change against this one, on one machine in one call.

Models (third-party ones from the fixtures folder, `--fixtures`):
- classifiers: the bundled EfficientNet-Lite0, float and int8;
- detectors: SSD MobileNet v1 (quantized, the post-processing op) and MediaPipe's face detection (anchors);
- segmenters: DeepLab v3 (257x257x21 scores) and a two-class 512x512 one (tests/builders/two_class_segmenter.py,
  shaped as MediaPipe's hair segmentation answers; `--two-class PATH`, built with TensorFlow when missing);
- keypoints: MoveNet single pose lightning.

Each leg runs in its own process: "alone" is benchmarks/suite/capture_keeps_up_child.py (the app's session on
the delegate, one fixed input back to back); "bench" is the app's bench. With `--gpu-process`, segmenters
also get a bench leg with `--gpu-process on` (the session in a child of its own; a segmenter's outputs come
back through run_all, not the queued slots a classifier uses).

"decode p50" is `TaskDecoder.decode` alone on one output of the model (run once on the CPU), in this process,
100 times; for a segmenter of many classes also with its argmax on one thread ("1 thread").

On the GPU host (the fixtures copied to .fx/, the two-class model built beforehand):

    python -m benchmarks.suite.task_decoding --delegate gpu --fixtures .fx/vision \\
        --two-class build/segdecode/two_class_512.tflite --frames 600 --gpu-process --json decoding.json

Before and after a change (a checkout of the revision before it beside this one):

    python -m benchmarks.suite.task_decoding --delegate gpu --fixtures .fx/vision --frames 1000 --rounds 3 \\
        --before ../before --no-decode

Here (CPU, quick):

    python -m benchmarks.suite.task_decoding --frames 150 --only deeplabv3 two_class_512 --decode-before HEAD
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.harness.children import bench_summary, last_json, run_module, write_json
from benchmarks.harness.paths import DEMO_CLIP, ROOT, VISION, model_path

TWO_CLASS = ROOT / "build" / "segdecode" / "two_class_512.tflite"


def models(fixtures: Path, two_class: Path) -> list[tuple[str, str, Path]]:
    """(name, task, path) of every model the run measures, the segmenters (the heaviest decoding) first."""
    return [
        ("deeplabv3", "segmenter", fixtures / "deeplabv3.tflite"),
        ("two_class_512", "segmenter", two_class),
        ("ssd_mobilenet_v1", "detector", fixtures / "coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite"),
        ("face_detection_front", "detector", fixtures / "face_detection_front.tflite"),
        ("efficientnet_lite0", "classifier", model_path("efficientnet_lite0")),
        ("efficientnet_lite0_int8", "classifier", model_path("efficientnet_lite0_int8")),
        ("movenet", "keypoints", fixtures / "movenet_single_pose_lightning_ptq.tflite"),
    ]


def alone(path: Path, delegate: str, frames: int, all_outputs: bool = False) -> dict[str, Any]:
    every = ["--all-outputs"] if all_outputs else []
    return last_json(
        run_module("benchmarks.suite.capture_keeps_up_child", str(path), delegate, "0", str(frames), *every)
    )


_FIGURES = ("rate", "queue_p50_ms", "inference_p50_ms", "postprocess_p50_ms", "end_to_end_p50_ms",
            "queue_mean_ms", "inference_mean_ms", "postprocess_mean_ms", "end_to_end_mean_ms")  # fmt: skip


def bench(
    path: Path, delegate: str, frames: int, gpu_process: str | None = None, checkout: Path = ROOT
) -> dict[str, Any]:
    flags = ["--model", str(path), "--delegate", delegate, "--source", "demo", "--no-pace", "--throttle-ms", "0"]
    flags += ["--frames", str(frames), "--warm-seconds", "1", "--idle-seconds", "0"]
    if gpu_process:
        flags += ["--gpu-process", gpu_process]
    try:
        s = bench_summary(flags, checkout=checkout)
    except SystemExit as exc:  # one leg's failure is a row that says so, not the end of the run
        return {"error": str(exc).strip().splitlines()[-1]}
    m, bound = s["metrics"], s.get("bottleneck") or {}
    latency = m["latency"]
    return {
        "rate": m["inference_fps"],
        **{f"{k}_p50_ms": latency[k]["p50"] for k in ("queue", "inference", "postprocess", "end_to_end")},
        **{f"{k}_mean_ms": latency[k]["mean"] for k in ("queue", "inference", "postprocess", "end_to_end")},
        "results_dropped": m.get("results_dropped_total", 0),
        "used": (s.get("delegate") or {}).get("used"),
        "process": ((s.get("delegate") or {}).get("options") or {}).get("process", "this"),
        "stage": bound.get("stage"),
        "sentence": (bound.get("evidence") or {}).get("sentence"),
        "sm_clock_mhz": m.get("gpu_sm_clock_mhz"),
    }


def median_of(legs: list[dict[str, Any]]) -> dict[str, Any]:
    """One leg's rounds: each figure's median, the rest as the middle round (by rate) says."""
    ok = [leg for leg in legs if "error" not in leg]
    if not ok:
        return legs[0]
    middle = sorted(ok, key=lambda leg: leg["rate"])[len(ok) // 2]
    return {**middle, **{k: statistics.median(leg[k] for leg in ok) for k in _FIGURES}, "rounds": len(ok),
            "rates": [round(leg["rate"], 1) for leg in ok]}  # fmt: skip


def _decoder_at(revision: str) -> Any:
    """The TaskDecoder class of app/model/decode.py as it was at a git revision (imported beside today's)."""
    import importlib.util

    source = subprocess.run(["git", "show", f"{revision}:app/model/decode.py"], cwd=ROOT, capture_output=True,
                            text=True, check=True).stdout  # fmt: skip
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location("decode_before", f.name)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["decode_before"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module.TaskDecoder


def decode_alone(path: Path, runs: int = 100, before: str | None = None) -> dict[str, Any]:
    """TaskDecoder.decode's p50 on one real output (the demo clip's first frame, run on the CPU); with
    `before` (a git revision), that revision's decoder too, interleaved, and whether their JSON agrees."""
    import cv2

    from app.backends import open_session
    from app.model import segmentation
    from app.model.decode import TaskDecoder
    from app.model.preprocess import CropBox, Preprocessor
    from app.model.spec import load_model_spec

    spec = load_model_spec(path)
    capture = cv2.VideoCapture(str(DEMO_CLIP))
    ok, frame = capture.read()
    capture.release()
    if not ok:
        return {"error": f"cannot read {DEMO_CLIP}"}
    session = open_session(spec, "cpu", {})
    try:
        outputs = session.run_all([np.array(Preprocessor(spec)(frame), copy=True)])
    finally:
        session.close()
    height, width = frame.shape[:2]
    crop = CropBox(0, 0, width, height)

    def p50(call: Any) -> float:
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        return statistics.median(times) * 1e3

    if spec.kind.value == "classification":
        from app.model.postprocess import Postprocessor

        post = Postprocessor(spec)
        raw = outputs[0].reshape(-1)
        return {"decode_p50_ms": p50(lambda: post.top_k(post.scores(raw), 5))}
    decoder = TaskDecoder(spec)
    out: dict[str, Any] = {"decode_p50_ms": p50(lambda: decoder.decode(outputs, crop, (width, height)))}
    result = decoder.decode(outputs, crop, (width, height))
    if before is not None:
        old = _decoder_at(before)(spec)
        now_times: list[float] = []
        old_times: list[float] = []
        for _ in range(runs * 2):
            for decode, times in ((old.decode, old_times), (decoder.decode, now_times)):
                t0 = time.perf_counter()
                decode(outputs, crop, (width, height))
                times.append(time.perf_counter() - t0)
        out["before_p50_ms"] = statistics.median(old_times) * 1e3
        out["after_p50_ms"] = statistics.median(now_times) * 1e3
        out["same_json"] = old.decode(outputs, crop, (width, height)).to_dict() == result.to_dict()
    if result.class_map is not None and result.task.value == "segmentation":
        out["summary"] = result.summary()
        scores = outputs[0].reshape(outputs[0].shape[1], outputs[0].shape[2], -1)
        if scores.shape[2] > 2:
            out["argmax_threads"] = segmentation._parts()
            out["argmax_p50_ms"] = p50(lambda: segmentation.class_map(scores, True))
            out["argmax_1_thread_p50_ms"] = p50(lambda: segmentation.class_map(scores, True, parts=1))
        out["numpy_argmax_p50_ms"] = p50(lambda: np.argmax(scores, axis=2).astype(np.int32))
    return out


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def table(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| model | leg | alone /s | alone, every output /s | bench /s | ratio | ratio, every output | bound "
        "| queue p50 ms | inference p50 ms | postprocess p50 ms | end to end p50 ms | post / inf | e2e / inf "
        "| e2e mean = queue + inf + post + rest ms | results dropped | decode alone p50 ms |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        b, a, d = r["bench"], r["alone"], r.get("decode", {})
        every = r.get("alone_all") or a
        if "error" in b or "error" in a or "error" in every:
            why = b.get("error") or a.get("error") or every.get("error")
            lines.append(f"| {r['model']} | {r['leg']} | failed: {why} |")
            continue
        inf = b["inference_p50_ms"] or float("nan")
        rest = b["end_to_end_mean_ms"] - b["queue_mean_ms"] - b["inference_mean_ms"] - b["postprocess_mean_ms"]
        parts = (f"{b['end_to_end_mean_ms']:.2f} = {b['queue_mean_ms']:.2f} + {b['inference_mean_ms']:.2f} + "
                 f"{b['postprocess_mean_ms']:.2f} + {rest:.2f}")  # fmt: skip
        lines.append(
            f"| {r['model']} | {r['leg']} ({b['process']} process) | {a['rate']:.1f} | {every['rate']:.1f} | "
            f"{b['rate']:.1f} | {b['rate'] / a['rate']:.3f} | {b['rate'] / every['rate']:.3f} | {b['stage']} | "
            f"{_ms(b['queue_p50_ms'])} | {_ms(b['inference_p50_ms'])} | {_ms(b['postprocess_p50_ms'])} | "
            f"{_ms(b['end_to_end_p50_ms'])} | {b['postprocess_p50_ms'] / inf:.2f} | "
            f"{b['end_to_end_p50_ms'] / inf:.2f} | {parts} | {b['results_dropped']} | {_ms(d.get('decode_p50_ms'))} |"
        )
    return lines


def _ensure_two_class(path: Path) -> None:
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    proc = run_module("tests.builders.two_class_segmenter", str(path))
    if proc.returncode != 0:
        sys.exit(f"cannot build the two-class segmenter (TensorFlow needed): {proc.stderr.strip()[-500:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--delegate", default="cpu", help="cpu, gpu, ... (as bench's --delegate)")
    parser.add_argument("--frames", type=int, default=600, help="runs of the model alone, inferences of each bench")
    parser.add_argument("--fixtures", type=Path, default=VISION, help="the third-party vision fixtures' folder")
    parser.add_argument("--two-class", type=Path, default=TWO_CLASS, help="the two-class 512x512 segmenter")
    parser.add_argument("--only", nargs="*", default=[], metavar="NAME", help="these models only (by name)")
    parser.add_argument("--gpu-process", action="store_true", help="also segmenters with bench --gpu-process on")
    parser.add_argument("--decode-before", metavar="REV", help="also time the decoding of this git revision")
    parser.add_argument("--before", type=Path, metavar="CHECKOUT", help="also each bench leg in this checkout")
    parser.add_argument("--rounds", type=int, default=1, help="bench legs interleaved this many times (medians)")
    parser.add_argument("--no-decode", action="store_true", help="skip the decoding alone (a CPU run of each model)")
    parser.add_argument("--json", type=Path, help="write every leg's figures here")
    args = parser.parse_args(argv)
    chosen = [m for m in models(args.fixtures, args.two_class) if not args.only or m[0] in args.only]
    if any(name == "two_class_512" for name, _, _ in chosen):
        _ensure_two_class(args.two_class)
    machine = subprocess.run(["uname", "-srm"], capture_output=True, text=True).stdout.strip()
    print(f"{os.cpu_count()} cores, {machine}; delegate {args.delegate}; {args.frames} runs or inferences per leg; "
          f"load {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
    rows: list[dict[str, Any]] = []
    trees = [("bench", ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    for name, task, path in chosen:
        legs = [(tree, checkout, None) for tree, checkout in trees]
        if args.gpu_process and task == "segmenter":
            legs.append(("bench --gpu-process on", ROOT, "on"))
        base = alone(path, args.delegate, args.frames)
        every = alone(path, args.delegate, args.frames, all_outputs=True) if task != "classifier" else base
        decoded = {} if args.no_decode else decode_alone(path, before=args.decode_before)
        runs: dict[str, list[dict[str, Any]]] = {leg: [] for leg, _, _ in legs}
        for _ in range(args.rounds):
            for leg, checkout, gpu_process in legs:
                runs[leg].append(bench(path, args.delegate, args.frames, gpu_process, checkout))
        for leg, _, _ in legs:
            row = {"model": name, "task": task, "leg": leg, "alone": base, "alone_all": every, "decode": decoded,
                   "bench": median_of(runs[leg]), "rounds": runs[leg]}  # fmt: skip
            rows.append(row)
            print(table([row])[-1], flush=True)
    print()
    print("\n".join(table(rows)))
    for r in {r["model"]: r for r in rows}.values():  # once per model
        d = r["decode"]
        if "numpy_argmax_p50_ms" in d:
            split = (f"; split argmax ({d['argmax_threads']} threads) {d['argmax_p50_ms']:.2f} ms, on one "
                     f"{d['argmax_1_thread_p50_ms']:.2f} ms") if "argmax_p50_ms" in d else ""  # fmt: skip
            print(f"{r['model']}: numpy argmax + int32 {d['numpy_argmax_p50_ms']:.2f} ms{split}; {d.get('summary')}")
        if "before_p50_ms" in d:
            print(
                f"{r['model']}: decoding {d['before_p50_ms']:.2f} ms at {args.decode_before}, "
                f"{d['after_p50_ms']:.2f} ms now (p50, interleaved); JSON the same: {d['same_json']}"
            )
    write_json(args.json, {"args": vars(args), "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
