"""Which stage bounds the pipeline's rate, from each stage's busy share of wall time.

The pipeline is three or four threads in a row (capture: source read + preprocessing ahead, or
source read alone and a preprocessing thread beside it; inference; results: postprocess + publish
+ recording), so its rate is set by the busiest one. A thread busy nearly all the time sets the
pace; the others wait. Comparing delegates by throughput means nothing unless inference is that
thread: a fast GPU behind a slow decoder ties with the CPU, and this says so ("capture-bound at
480 /s; inference alone: 1,800 /s", 1000 / the run's mean inference ms: what the inference thread would
allow by itself, not a run of the model alone).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from app.metrics.window import MetricsSnapshot, StageBusy

SATURATED = 0.8  # a thread busy this share of the time sets the pace (the rest: wake-ups, the GIL)

# "pace": a paced source (a file or synthetic source at its frame rate) delivers frames no faster; the capture
# thread waits for each to be due, which is waiting, not work (StageBusy.paced).
Stage = Literal["source", "preprocess", "inference", "results", "throttle", "pace"]


@dataclass(frozen=True)
class Bottleneck:
    stage: Stage
    rate_per_s: float  # the pipeline's inference rate over the window
    busy_share: StageBusy  # per stage, and per thread (capture_thread, preprocess_thread, inference_thread)
    model_alone_per_s: float | None  # 1000 / the run's mean inference ms: what its inferences alone would allow
    saturated: bool  # False: no thread was busy SATURATED of the time (the largest share is named)
    sentence: str

    @property
    def short(self) -> str:
        """For a status bar: '<stage>-bound at N /s', with what inference alone would allow when it is not the bound."""
        where = "capture" if self.stage == "source" else self.stage
        if not self.saturated and self.stage in ("inference", "results"):
            return f"no stage saturated at {self.rate_per_s:,.0f} /s (busiest: {where})"
        rate = f"{self.rate_per_s:,.0f} /s"
        named = {"throttle": f"throttled at {rate}", "pace": f"paced at {rate}"}
        text = named.get(self.stage, f"{where}-bound at {rate}")
        if self.stage != "inference" and self.model_alone_per_s:
            text += f" (inference alone {self.model_alone_per_s:,.0f} /s)"
        return text

    def to_dict(self) -> dict[str, object]:
        return {
            "stage": self.stage,
            "evidence": {
                "rate_per_s": self.rate_per_s,
                "busy_share": self.busy_share.to_dict(),
                "model_alone_per_s": self.model_alone_per_s,
                "saturated": self.saturated,
                "sentence": self.sentence,
            },
        }


def find_bottleneck(snap: MetricsSnapshot, throttle_ms: float = 0.0) -> Bottleneck | None:
    """None until the window holds inferences."""
    busy = snap.stage_busy
    rate = snap.inference_fps
    inference = snap.latency.get("inference")
    if not busy or rate <= 0 or inference is None or inference.count == 0:
        return None
    alone = 1000.0 / inference.mean if inference.mean > 0 else None
    inline_pre = max(0.0, busy.inference_thread - busy.inference)
    ahead_pre = max(0.0, busy.capture_thread - busy.source)
    upstream = max(busy.preprocess_thread, busy.capture_thread)
    stage: Stage
    if busy.results >= SATURATED and busy.results >= max(busy.inference_thread, upstream):
        stage, share, saturated = "results", busy.results, True
    elif upstream >= SATURATED and upstream > busy.inference_thread:
        # A thread upstream busier than the inference thread sets the pace: inference waits for its frames
        # part of each cycle, however busy it is the rest (a 512x512 segmenter on a GPU host: preprocessing
        # thread 98%, inference 87%).
        if busy.preprocess_thread > busy.capture_thread:
            stage, share = "preprocess", busy.preprocess_thread
        else:
            stage, share = ("source" if busy.source >= ahead_pre else "preprocess"), busy.capture_thread
        saturated = True
    elif busy.inference_thread >= SATURATED:
        stage = "preprocess" if inline_pre > busy.inference else "inference"
        share, saturated = busy.inference_thread, True
    elif throttle_ms > 0 and rate >= SATURATED * 1000.0 / throttle_ms:
        stage, share, saturated = "throttle", busy.inference_thread, True
    elif busy.capture_thread + busy.paced >= SATURATED and busy.capture_thread < SATURATED and busy.paced >= max(
        busy.preprocess_thread, busy.inference_thread, busy.results
    ):  # inference waits for frames that the source delivers at its pace: the capture thread mostly waits too
        stage, share, saturated = "pace", busy.paced, True
    elif busy.preprocess_thread > busy.capture_thread and busy.preprocess_thread >= max(
        busy.inference_thread, busy.results
    ):  # inference waits for frames: upstream, on the preprocessing thread
        stage, share = "preprocess", busy.preprocess_thread
        saturated = share >= SATURATED
    elif busy.capture_thread >= max(busy.inference_thread, busy.results):
        # inference waits for frames: upstream, on the capture thread
        stage = "source" if busy.source >= ahead_pre else "preprocess"
        share = busy.capture_thread
        saturated = share >= SATURATED
    else:  # no thread saturated, and not capture: the busiest thread is named, and what is left
        stage = "results" if busy.results > busy.inference_thread else "inference"
        share, saturated = max(busy.results, busy.inference_thread), False
    sentence = _sentence(stage, rate, share, alone, throttle_ms, busy)
    return Bottleneck(stage, rate, busy, alone, saturated, sentence)


def _sentence(stage: Stage, rate: float, share: float, alone: float | None, throttle_ms: float, busy: StageBusy) -> str:
    model = f"; inference alone: {alone:,.0f} /s" if alone else ""
    if stage in ("inference", "preprocess") and share >= SATURATED and busy.inference_thread == share:
        what = " (preprocessing and inference)" if stage == "preprocess" else ""
        return f"{stage}-bound at {rate:,.0f} /s: the inference thread is busy {share:.0%} of the time{what}"
    if stage == "throttle":
        return f"throttled at {rate:,.0f} /s ({throttle_ms:g} ms between inference starts){model}"
    if stage == "pace":
        work = f"reading {busy.source:.0%}"
        if busy.capture_thread - busy.source > 0.0005:
            work += f", preprocessing {busy.capture_thread - busy.source:.0%}"
        return (
            f"paced at {rate:,.0f} /s: the source delivers frames at its own rate, and the capture thread waits "
            f"for each {busy.paced:.0%} of the time (it works {busy.capture_thread:.0%}: {work}){model}"
        )
    if stage in ("inference", "results") and share < SATURATED:
        # Every thread waits part of each cycle: for a wake-up, or for the GIL another holds.
        apart = f", preprocessing {busy.preprocess_thread:.0%}" if busy.preprocess_thread else ""
        return (
            f"no thread is saturated at {rate:,.0f} /s (inference thread busy {busy.inference_thread:.0%}, "
            f"results {busy.results:.0%}, capture {busy.capture_thread:.0%}{apart}): the rest of each cycle is "
            f"frames and results passing between threads; the busiest, {stage}, is named{model}"
        )
    if stage == "results":
        return f"results-bound at {rate:,.0f} /s: postprocessing and publishing take {share:.0%} of the time{model}"
    where = "capture" if stage == "source" else "preprocess"
    if busy.preprocess_thread > busy.capture_thread:  # on its own thread, the busier of the two upstream
        detail = (
            f"the preprocessing thread is busy {share:.0%}; the capture thread, decoding, {busy.capture_thread:.0%}"
        )
        text = f"{where}-bound at {rate:,.0f} /s ({detail}){model}"
    elif busy.preprocess_thread:  # decoding, on the capture thread, is the busier
        detail = (
            f"the capture thread is busy {share:.0%} reading the source; "
            f"the preprocessing thread {busy.preprocess_thread:.0%}"
        )
        text = f"{where}-bound at {rate:,.0f} /s ({detail}){model}"
    else:
        detail = f"source {busy.source:.0%}, preprocessing {busy.capture_thread - busy.source:.0%}"
        text = f"{where}-bound at {rate:,.0f} /s (the capture thread is busy {share:.0%}: {detail}){model}"
    if share < SATURATED:
        text += "; no thread is saturated, the busiest is named"
    return text
