"""Is the pipeline's throughput gap its own cost, or the capture work on the other core? One process.

The target: bench's throughput >= 97% of a raw LiteRT loop. The raw loop decodes nothing;
the pipeline must decode and preprocess every frame, on its capture thread, while the model
runs. This separates the two. Per round, same model, 1 CPU thread, `--inferences` each after
warm-up, in rotating order:

- raw: the CpuSession loop alone (`session.run` on one fixed input): the target's reference.
- raw + capture work: the same loop, with a thread beside it doing exactly the capture thread's
  work for each inference (read the next frame of the source, preprocess it for the model),
  handed over one frame per run as for an unpaced file: the loop waits for a prepared frame,
  then the thread starts on the next while the model runs. No pipeline machinery (no slot,
  metrics, results thread, postprocessing, callbacks).
- pipeline: the app's Pipeline (unpaced, throttle 0), inferences per second start to start.

pipeline / raw is the target's figure; pipeline / (raw + capture work) is what the pipeline's
own machinery costs; (raw + capture work) / raw is what the capture work costs the model.
Medians over rounds of the per-round ratios.

    python -m benchmarks.investigations.overhead_under_load [--model efficientnet_lite0_int8] [--source demo]
        [--rounds 6] [--inferences 300]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading

from app.model.preprocess import Preprocessor
from app.model.spec import ModelSpec, load_model_spec
from app.sources import open_source
from benchmarks.harness.loops import session_rate
from benchmarks.harness.pipeline import pipeline_round
from benchmarks.harness.rounds import alternate
from benchmarks.harness.stats import median_ratio


class CaptureWork:
    """The capture thread's work without the pipeline: one frame read and preprocessed per take."""

    def __init__(self, spec: ModelSpec, source: str) -> None:
        self._source = open_source(source, pace=False, loop=True)
        self._prepare = Preprocessor(spec)
        self._ready, self._taken = threading.Semaphore(0), threading.Semaphore(1)
        self._stop = False
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            self._taken.acquire()
            if self._stop:
                return
            frame = self._source.read()
            assert frame is not None, "a looping source does not end"
            self._prepare(frame.image)
            self._ready.release()

    def take(self) -> None:
        """Wait for the prepared frame, and let the thread start on the next."""
        self._ready.acquire()
        self._taken.release()

    def close(self) -> None:
        self._stop = True
        self._taken.release()
        self._thread.join()
        self._source.close()


def raw_round(spec: ModelSpec, n: int, source: str | None) -> float:
    """Runs per second of the raw loop, with the capture work beside it when `source` is given."""
    if source is None:
        return session_rate(spec, n)
    work = CaptureWork(spec, source)
    try:
        return session_rate(spec, n, before_run=work.take)
    finally:
        work.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="efficientnet_lite0_int8")
    parser.add_argument("--source", default="demo")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--inferences", type=int, default=300)
    args = parser.parse_args(argv)
    spec = load_model_spec(args.model)
    legs = {
        "raw": lambda: raw_round(spec, args.inferences, None),
        "raw + capture work": lambda: raw_round(spec, args.inferences, args.source),
        "pipeline": lambda: pipeline_round(args.model, args.source, args.inferences)[0],
    }
    print(f"{args.model}, source {args.source} unpaced, 1 thread, {args.rounds} rounds of {args.inferences}")

    def report(r: int, rates: dict[str, float]) -> None:
        raw, loaded, pipe = rates.values()
        print(
            f"round {r + 1}: raw {raw:.1f}/s, raw + capture work {loaded:.1f}/s, pipeline {pipe:.1f}/s; "
            f"pipeline/raw {pipe / raw:.3f}, pipeline/(raw + capture work) {pipe / loaded:.3f}",
            flush=True,
        )

    rates = alternate(legs, args.rounds, report=report)  # rotated: no leg always runs first
    med = statistics.median
    raw, loaded, pipe = rates.values()

    def ratio(a: list[float], b: list[float]) -> str:
        return f"{median_ratio(a, b):.3f}"

    print(
        "\n| model | raw /s | raw + capture work /s | pipeline /s | pipeline / raw "
        "| (raw + capture work) / raw | pipeline / (raw + capture work) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print(
        f"| {args.model} | {med(raw):.1f} | {med(loaded):.1f} | {med(pipe):.1f} "
        f"| {ratio(pipe, raw)} | {ratio(loaded, raw)} | {ratio(pipe, loaded)} |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
