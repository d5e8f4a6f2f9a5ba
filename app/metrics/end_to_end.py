"""What a frame's end to end is made of: bench's `e2e` line, from a snapshot's stage means.

The stages are not all in series, and their percentiles do not add up, so the end to end read as a
multiple of the inference time said nothing of where the rest went (5x on the unpaced demo clip, on a GPU
host, for every model). Means do add up: end to end = queue (capture to the inference thread taking the
frame: the frames ahead of it in the slots, and its preprocessing when that ran ahead) + inference +
postprocess + the rest (the hand-offs between the threads, and preprocessing the inference thread did
itself). The queue is also said in inference cycles (1 / the inference rate): how many frames' turns
the frame waited. An unpaced file is read ahead of inference, a frame behind each slot's newest, so a
frame waits a few cycles there however fast the stages are.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.metrics.window import MetricsSnapshot


@dataclass(frozen=True)
class EndToEndParts:
    """Means over the snapshot's inferences, in ms; `rest_ms` is what the other parts leave of the end to end."""

    end_to_end_ms: float
    queue_ms: float
    inference_ms: float
    postprocess_ms: float
    rest_ms: float
    queue_cycles: float | None  # the queue over the inference cycle (None: no rate)

    def describe(self) -> str:
        cycles = f" ({self.queue_cycles:.1f} inference cycles)" if self.queue_cycles is not None else ""
        return (
            f"mean {self.end_to_end_ms:.2f} ms = queue {self.queue_ms:.2f}{cycles} + inference {self.inference_ms:.2f}"
            f" + postprocess {self.postprocess_ms:.2f} + hand-offs and the rest {self.rest_ms:.2f}"
        )


def end_to_end_parts(m: MetricsSnapshot) -> EndToEndParts | None:
    """The parts of `m`'s mean end to end; None when no inference was measured."""
    lat = m.latency
    if lat["end_to_end"].count == 0:
        return None
    e2e, queue, inference, post = (lat[k].mean for k in ("end_to_end", "queue", "inference", "postprocess"))
    cycles = queue * m.inference_fps / 1e3 if m.inference_fps > 0 else None
    return EndToEndParts(e2e, queue, inference, post, e2e - queue - inference - post, cycles)
