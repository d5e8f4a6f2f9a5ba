"""The live engine: capture thread -> latest-frame slot -> throttled inference thread -> Result.

Three rules, as in TensorFlow Lite's iOS camera sample: capture never waits for inference
(app/pipeline/capture.py); at most one inference in flight and at most one started per
throttle interval (app/pipeline/worker.py); the inference thread owns the backend session and
everyone else reads published, immutable snapshots (app/pipeline/types.py).
"""

from app.pipeline.frame_slot import LatestFrameSlot
from app.pipeline.pipeline import Feed, Pipeline
from app.pipeline.rgb_cache import RgbCache
from app.pipeline.types import Event, EventKind, InferenceConfig, Result, State, Status
from app.pipeline.worker import InferenceWorker

__all__ = [
    "Event",
    "EventKind",
    "Feed",
    "InferenceConfig",
    "InferenceWorker",
    "LatestFrameSlot",
    "Pipeline",
    "Result",
    "RgbCache",
    "State",
    "Status",
]
