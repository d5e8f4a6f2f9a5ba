"""Where one cycle of the inference thread goes, measured inside the pipeline (no profiler).

Runs the app's Pipeline in this process (1 CPU thread, throttle 0) on a source, leaves out 20
warm-up inferences, then over 300 inferences reports: inference fps; the cycle (start of one
inference to the start of the next) median and mean; the p50 of preprocess, inference and
postprocess; and how much of the inference thread's time went to the model ("busy": the sum of
inference_ms over the time from the first start to the last). Preprocessing runs on the
capture thread and postprocessing on the results thread, so 1 - busy is what the pipeline's
own machinery costs the inference thread per cycle (taking the frame, the throttle check,
handing the output over).

    python -m benchmarks.investigations.pipeline_cycle MODEL SOURCE pace|nopace [FPS]
    python -m benchmarks.investigations.pipeline_cycle efficientnet_lite0 demo nopace
    python -m benchmarks.investigations.pipeline_cycle efficientnet_lite0 demo pace 120   # decode paced at 120 fps
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from typing import Any

from app.metrics.window import Metrics
from app.pipeline import InferenceConfig, Pipeline
from app.pipeline.plan import FeedPlan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("model")
    parser.add_argument("source")
    parser.add_argument("pace", choices=("pace", "nopace"))
    parser.add_argument("fps", nargs="?", type=float, help="the source's pace, frames per second")
    args = parser.parse_args(argv)
    model, src, pace, fps = args.model, args.source, args.pace == "pace", args.fps
    results: list[Any] = []
    metrics = Metrics(window_s=3600)
    pipeline = Pipeline(
        FeedPlan(src, pace=pace, fps=fps or None),
        InferenceConfig(model=model, options={"threads": 1}),
        metrics=metrics,
        on_result=lambda r: results.append(r.timing),
    )
    pipeline.start()
    while len(results) < 20:
        time.sleep(0.01)
    metrics.reset()
    n0 = len(results)
    while len(results) < n0 + 300:
        time.sleep(0.01)
    snap = metrics.snapshot()
    pipeline.stop()
    ts = results[n0 : n0 + 300]
    cycle = [(b.started_at - a.started_at) * 1e3 for a, b in itertools.pairwise(ts)]
    span_ms = (ts[-1].started_at - ts[0].started_at) * 1e3
    busy = sum(t.inference_ms for t in ts[:-1]) / span_ms
    med = statistics.median
    print(
        f"{model} {src} {'paced' if pace else 'unpaced'}{f' at {fps:g} fps' if fps else ''}: "
        f"inference {snap.inference_fps:.1f} fps, capture {snap.capture_fps:.0f} fps | "
        f"cycle p50 {med(cycle):.2f} mean {statistics.mean(cycle):.2f} ms | "
        f"preprocess {med(t.preprocess_ms for t in ts):.2f} inference {med(t.inference_ms for t in ts):.2f} "
        f"postprocess {med(t.postprocess_ms for t in ts):.2f} (p50) | inference mean "
        f"{statistics.mean(t.inference_ms for t in ts):.2f} ms | busy {busy:.3f} "
        f"(other work on the inference thread {(1 - busy) * span_ms / (len(ts) - 1):.3f} ms per cycle)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
