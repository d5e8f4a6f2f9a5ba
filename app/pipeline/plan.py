"""FeedPlan: how a pipeline reads its source and where its threads run, one frozen object.

A pipeline (one side or A/B) takes it whole; the capture thread reads the source part (source, pace,
loop, decoding threads, preprocessing placement) and each inference worker the pinning part. Built once
by whoever starts the run (a command's options, the window's controls), so a setting cannot reach one
side or one stage and not another.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from app.sources import CapturedFrames


@dataclass(frozen=True)
class FeedPlan:
    source: str | CapturedFrames = "demo"  # a spec, or frames captured once (a sweep replays them)
    pace: bool = True  # a file at its own frame rate; False: as fast as inference takes frames
    loop: bool = True  # a file starts again at its end
    decode_threads: int | None = None  # FFmpeg's, for video files (0: one per core; None: by the machine)
    fps: float | None = None  # a file's or synthetic source's delivery rate, a camera's request (None: its own)
    # The inference thread on CPUs of its own (app/system/cpu_affinity.py): one inference thread per
    # process only, so an A/B feed never pins.
    pin_cpus: bool = False
    inference_cpus: int | None = None  # how many when pinned; None: by backend (cpu_affinity.inference_cpus)
    preprocess_thread: bool | None = None  # None: where the cores allow (app/pipeline/preprocess_thread.py)

    @classmethod
    def of(cls, feed: FeedPlan | str | CapturedFrames) -> FeedPlan:
        """A plan, or a bare source read with every default."""
        return feed if isinstance(feed, FeedPlan) else cls(source=feed)

    @property
    def spec(self) -> str:
        """The source as its spec (frames captured once: the spec they were captured from)."""
        return self.source if isinstance(self.source, str) else self.source.spec

    def source_options(self) -> dict[str, Any]:
        """What opening the source takes (app/sources/spec.py open_source, CapturedFrames.open)."""
        options: dict[str, Any] = {"pace": self.pace, "loop": self.loop, "decode_threads": self.decode_threads}
        return options | ({"fps": self.fps} if self.fps is not None else {})

    def unpinned(self) -> FeedPlan:
        return replace(self, pin_cpus=False)

    def to_dict(self) -> dict[str, object]:
        return {
            "source": self.spec,
            "pace": self.pace,
            "loop": self.loop,
            "decode_threads": self.decode_threads,
            "fps": self.fps,
            "pin_cpus": self.pin_cpus,
            "inference_cpus": self.inference_cpus,
            "preprocess_thread": self.preprocess_thread,
        }
