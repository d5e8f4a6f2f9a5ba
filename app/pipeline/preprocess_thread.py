"""Where a pipeline preprocesses ahead of inference: on the capture thread after each read, or on a
thread of its own while the capture thread decodes the next frame.

On a fast accelerator the capture thread, decoding then preprocessing each frame in series, was
the limit: on an H200 host (16 cores, EfficientNet-Lite0 on the GPU) it was busy 97-99% (source
49-52%, preprocessing 45-49%) and the unpaced demo reached 0.66-0.78 of the model alone
(docs/performance.md, "Decoding and preprocessing on two threads", measures both placements).
Two threads overlap the two. They need a core each besides the model's: where the model's threads
take the cores (a CPU session's XNNPACK threads, the 2-core machine), a second thread only takes
turns with the first and wakes once more per frame, so preprocessing stays on the capture thread.
Decided when the pipeline starts, from the configs it starts with (a live switch keeps it).

One preprocessing thread, not more: where it bounds the rate (a 512x512 segmenter's input from 1280x720
frames, INTER_AREA at ratios that are not whole, which OpenCV splits into 4 stripes at most), a second
thread taking every other frame, and a frame's resize split into exact bands of rows on a pool, were
both slower on an H100 host (docs/performance.md, "Decoding at the accelerator's speed"): with two
threads a frame's preprocessing took 4.2 ms against 2.5 (two OpenCV calls at once do not share its pool
as one does), and 8 bands took 1.5 ms alone but 3.9 ms in the pipeline (each band's thread waits for
the GIL after its OpenCV call while the pipeline's other threads hold it).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

from app.backends.options import CPU_DELEGATES
from app.pipeline.types import InferenceConfig
from app.system import cpu_affinity

# The capture thread and the preprocessing thread: one core each, besides the inference's.
UPSTREAM_THREADS = 2


@dataclass(frozen=True)
class PreprocessPlacement:
    own_thread: bool  # True: a preprocessing thread of its own; False: on the capture thread
    cpus: int  # the CPUs the process may use
    inference_cpus: int  # the cores the model's inference takes (every side's, in A/B)
    asked: bool  # forced on or off by the caller rather than decided from the cores
    reason: str

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def place_preprocessing(
    configs: Iterable[InferenceConfig],
    *,
    inference_cpus: int | None = None,
    cpus: int | None = None,
    own_thread: bool | None = None,
) -> PreprocessPlacement:
    """`inference_cpus`: the CPUs each inference thread keeps (bench's --inference-cpus), else each
    config's by cpu_affinity.inference_cpus; `cpus`: the process's, else cpu_affinity.allowed_cpus();
    `own_thread`: forced on or off (None: decided from the cores)."""
    cpus = cpus or cpu_affinity.allowed_cpus()
    taken = sum(inference_cpus or _inference_cpus(config) for config in configs)
    needed = taken + UPSTREAM_THREADS
    said = f"{cpus} CPU{'s' if cpus != 1 else ''} for this process, the model's inference takes {taken}"
    if own_thread is not None:
        where = "on a thread of its own" if own_thread else "on the capture thread, after each read"
        return PreprocessPlacement(own_thread, cpus, taken, True, f"{where} (asked for; {said})")
    if cpus >= needed:
        reason = f"on a thread of its own, beside decoding: {said}, capture and preprocessing one each"
        return PreprocessPlacement(True, cpus, taken, False, reason)
    reason = f"on the capture thread, after each read: {said}; a thread of its own needs {needed}"
    return PreprocessPlacement(False, cpus, taken, False, reason)


def _inference_cpus(config: InferenceConfig) -> int:
    """The cores `config`'s inference takes, as cpu_affinity counts them for pinning."""
    try:
        threads = config.options.cpu_threads
    except (TypeError, ValueError):
        threads = 1  # a bad thread count: the session's open refuses it and says why
    return cpu_affinity.inference_cpus(config.delegate in CPU_DELEGATES, threads)
