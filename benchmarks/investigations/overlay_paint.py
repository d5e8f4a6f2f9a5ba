"""What the video view's paint costs with each task's overlay, side by side: top-k labels (a
classifier, the window before tasks), boxes (SSD), a class mask (DeepLab), a skeleton (MoveNet) and a
MediaPipe detector's boxes with keypoints (BlazeFace), each from a real result of the model on the same
photo.

The view is sized as it is in a 1280x860 window (914x537, `window.video.size()` at the window's
default layout) and repainted `--paints` times per variant and round, the variants in turn paint by
paint, a new frame each paint (converted once, as a new camera frame is); "new result" variants give
every paint a new result too (a new mask each paint: the worst case, a result per frame), the others
repaint the same result (frames faster than inferences). The window's mask is built and resized off the
GUI thread (app/live/mask.py, on the results thread): "mask, new result" does that before each repaint,
outside the timed part, as the results thread would; "mask, new result, built by the GUI" is a view
without it, building each mask in its paint (the window before). Figures: the view's own paintEvent
wall time (the window's `paint_ms` in --stats) and the GUI thread's CPU time per repaint (what the
machine's other load cannot inflate).

--windows S adds the real window: `gui --exit-after S --stats` at its default 1280x860 on the photo
with the classifier, the SSD and DeepLab in turn (rotated, `--rounds` rounds), each throttled to
`--throttle-ms` so the models infer at similar rates (DeepLab alone takes ~100 ms a frame here), and
their --stats' paint p50 / p95 and GUI-thread CPU per displayed frame, median over the rounds. A
control leg runs DeepLab read as `raw` (overlay_paint_child.py): the same inference load on the
machine, a statistics panel instead of the mask. --baseline CHECKOUT adds the classifier's and
DeepLab's windows of another checkout (one that builds each mask in the paint, for instance). The mask legs also
print how many masks the window drew and how many its GUI thread built itself.

    QT_QPA_PLATFORM=offscreen python -m benchmarks.investigations.overlay_paint [--paints 300] [--rounds 3]
        [--windows 20] [--throttle-ms 150] [--baseline CHECKOUT] [--vision DIR] [--photo FILE] [--json FILE]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PySide6.QtWidgets import QApplication

from app.live.controller import LiveController
from app.live.mask import MaskPreparer
from app.pipeline import InferenceConfig, Result
from app.sources import Frame
from app.ui.views.video import VideoView
from benchmarks.harness.children import app_command, module_command, run_checked
from benchmarks.harness.paths import CORAL, ROOT, VISION
from benchmarks.harness.rounds import alternate, rotated

BUILT_BY_GUI = "mask, new result, built by the GUI"
VIEW = (914, 537)  # the video view in a 1280x860 window (954x537 before the docks widened to 360 px)
MODELS = {
    "labels (classifier)": "efficientnet_lite0",
    "boxes (SSD)": "coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite",
    "mask (DeepLab)": "deeplabv3.tflite",
    "skeleton (MoveNet)": "movenet_single_pose_lightning_ptq.tflite",
    "boxes and keypoints (BlazeFace)": "face_detection_front.tflite",
}


def first_result(model: str, photo: Path) -> tuple[Frame, Result]:
    """The model's result on the photo, from the app's own live pipeline."""
    live = LiveController(f"images:{photo}", InferenceConfig(model=model, options={"threads": 1}))
    live.start()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            frame, result = live.latest_frame(), live.latest_result()
            if frame is not None and result is not None:
                return frame, result
            time.sleep(0.05)
        sys.exit(f"{model}: no result in 60 s ({live.status().message})")
    finally:
        live.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--paints", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--vision", type=Path, default=VISION)
    parser.add_argument("--photo", type=Path, default=CORAL / "grace_hopper.bmp")
    parser.add_argument("--windows", type=float, metavar="S", help="also the real window, S seconds a run")
    parser.add_argument("--throttle-ms", type=float, default=150.0)
    parser.add_argument("--baseline", type=Path, help="a checkout whose classifier window also runs")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    app = QApplication([])

    def new_view() -> VideoView:
        view = VideoView()
        view.resize(*VIEW)
        view.backend_label, view.inference_fps = "CPU", 30.0  # the badge, as the window paints it
        view.show()
        return view

    cases: dict[str, tuple[Frame, Result]] = {}
    for name, model in MODELS.items():
        ref = model if not model.endswith(".tflite") else str(args.vision / model)
        cases[name] = first_result(ref, args.photo)
        result = cases[name][1]
        found = result.task.summary() if result.task else ", ".join(p.label for p in result.top[:2])
        print(f"{name:24} {found}", flush=True)

    variants = [(name, *case, False) for name, case in cases.items()]
    variants += [(f"{name}, new result", *cases[name], True) for name in ("mask (DeepLab)", "boxes (SSD)")]
    variants.append((BUILT_BY_GUI, *cases["mask (DeepLab)"], True))
    # A view each: one view shown two results in turn would rebuild its mask at every paint.
    views = {v[0]: new_view() for v in variants}
    masks = {}  # the window's way: masks built off the GUI thread, at the size the view last drew at
    for name, view in views.items():
        if name != BUILT_BY_GUI:
            masks[name] = MaskPreparer()
            view.take_masks_from(masks[name])
    app.processEvents()
    wall: dict[str, list[float]] = {v[0]: [] for v in variants}
    cpu: dict[str, list[float]] = {v[0]: [] for v in variants}
    for r in range(args.rounds):
        # Paint by paint, the variants in turn (rotated each round): a burst of load from the other
        # processes on this shared machine hits every variant alike instead of one leg's p95.
        for i in range(args.paints):
            for name, frame, result, new_result in rotated(variants, r):
                shown = dataclasses.replace(frame, index=frame.index + r * args.paints + i + 1)  # converted again
                res = result
                if new_result and result.task is not None:  # a new result object: a new mask
                    res = dataclasses.replace(result, task=dataclasses.replace(result.task))
                if name in masks and (res.task is None or masks[name].mask_for("a", res.task) is None):
                    # What the results thread does as the result is published: untimed, not the GUI thread's.
                    masks[name].add("a", res)
                view = views[name]
                view.set_frame(shown, res)
                started = time.thread_time()
                view.repaint()
                cpu[name].append((time.thread_time() - started) * 1000)
                wall[name].append(view.paint_ms)
        print(f"round {r + 1} of {args.rounds} done", flush=True)

    summary = {}
    paints = len(wall[variants[0][0]])
    print(f"{'':36} paintEvent wall p50 / p95    GUI thread CPU per repaint p50 / p95 ({paints} paints each)")
    for name in wall:
        w50, w95 = (float(np.percentile(wall[name], q)) for q in (50, 95))
        c50, c95 = (float(np.percentile(cpu[name], q)) for q in (50, 95))
        summary[name] = {"paint_ms_p50": w50, "paint_ms_p95": w95, "cpu_ms_p50": c50, "cpu_ms_p95": c95}
        print(f"  {name:34} {w50:5.2f} / {w95:5.2f} ms              {c50:5.2f} / {c95:5.2f} ms")
    for name, view in views.items():
        if view.masks[0].built or view.masks[0].taken:
            cache = view.masks[0]
            print(
                f"  {name:34} masks built by the GUI thread {cache.built}, taken ready {cache.taken}, "
                f"resized by the GUI thread {cache.resized}"
            )
    if args.windows:
        summary["windows"] = windows(args)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return 0


WINDOW_FIGURES = ("paint_ms_p50", "paint_ms_p95", "gui_cpu_ms_p50", "gui_cpu_ms_p95", "display_fps")
MASK_FIGURES = ("masks_built", "masks_built_by_gui", "masks_resized_by_gui")


def windows(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """The real window per model, alternated: its --stats' paint and GUI-thread figures."""
    out = Path(tempfile.mkdtemp(prefix="overlay-paint-"))
    env = {**os.environ, "QT_QPA_PLATFORM": os.environ.get("QT_QPA_PLATFORM", "offscreen")}

    def leg(model: str, checkout: Path = ROOT, task: str | None = None):
        ref = model if not model.endswith(".tflite") else str(args.vision / model)

        def run() -> dict[str, float]:
            stats, settings = out / "stats.json", out / "s.ini"
            if task is None:
                cmd = app_command("gui", "--source", f"images:{args.photo}", "--model", ref, "--threads", "1",
                                  "--throttle-ms", str(args.throttle_ms), "--settings", str(settings),
                                  "--exit-after", str(args.windows), "--stats", str(stats))  # fmt: skip
            else:
                cmd = module_command("benchmarks.investigations.overlay_paint_child", ref, str(args.photo),
                                     str(args.windows), str(args.throttle_ms), str(stats), str(settings),
                                     task)  # fmt: skip
            run_checked(cmd, env=env, cwd=checkout)
            figures = json.loads(stats.read_text())
            if task is not None and figures.get("task") != task:
                sys.exit(f"the control window read {model} as {figures.get('task')}, not {task}")
            drawn = figures.get("overlay", {})
            masks = {k: float(drawn[k]) for k in MASK_FIGURES if k in drawn}  # the mask legs (older trees: fewer)
            return {**{k: float(figures[k]) for k in WINDOW_FIGURES}, **masks}

        return run

    legs = {name: leg(MODELS[name]) for name in ("labels (classifier)", "boxes (SSD)", "mask (DeepLab)")}
    legs["DeepLab read raw (control)"] = leg(MODELS["mask (DeepLab)"], task="raw")
    if args.baseline:
        legs[f"labels, {args.baseline.name}"] = leg(MODELS["labels (classifier)"], args.baseline.resolve())
        legs[f"mask, {args.baseline.name}"] = leg(MODELS["mask (DeepLab)"], args.baseline.resolve())

    def report(r: int, results: dict[str, dict[str, float]]) -> None:
        for name, f in results.items():
            print(f"window round {r + 1}  {name:28} paint p50 {f['paint_ms_p50']:5.2f} p95 {f['paint_ms_p95']:5.2f} ms"
                  f"  GUI CPU/frame p50 {f['gui_cpu_ms_p50']:5.2f} p95 {f['gui_cpu_ms_p95']:5.2f} ms"
                  f"  displayed {f['display_fps']:4.1f} fps{_masks(f)}", flush=True)  # fmt: skip

    results = alternate(legs, args.rounds, report=report)
    summary = {}
    print(f"the window at 1280x860, median over {args.rounds} rounds of {args.windows:g} s:")
    for name, rounds in results.items():
        summary[name] = {k: float(np.median([r[k] for r in rounds])) for k in rounds[0]}
        f = summary[name]
        print(f"  {name:28} paint p50 {f['paint_ms_p50']:5.2f} p95 {f['paint_ms_p95']:5.2f} ms"
              f"  GUI CPU/frame p50 {f['gui_cpu_ms_p50']:5.2f} p95 {f['gui_cpu_ms_p95']:5.2f} ms")  # fmt: skip
    return summary


def _masks(figures: dict[str, float]) -> str:
    if not figures.get("masks_built"):
        return ""
    gui = f", {figures['masks_built_by_gui']:.0f} built by the GUI" if "masks_built_by_gui" in figures else ""
    return f"  masks {figures['masks_built']:.0f}{gui}"


if __name__ == "__main__":
    sys.exit(main())
