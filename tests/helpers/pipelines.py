"""Starting a real live pipeline in a test; the `pipelines` fixture (tests/conftest.py) stops each one."""

from __future__ import annotations

from app.pipeline import InferenceConfig, Pipeline
from app.pipeline.plan import FeedPlan


def start(
    pipelines: list[Pipeline], source: str, config: InferenceConfig | None = None, *, metrics=None, on_result=None,
    on_event=None, **plan,
) -> Pipeline:
    """A pipeline on `source` with the FeedPlan settings given as keywords (pace=False, fps=..., pin_cpus=...)."""
    feed = FeedPlan(source=source, **plan)
    p = Pipeline(feed, config or InferenceConfig(options={"threads": 1}), metrics=metrics, on_result=on_result,
                 on_event=on_event)  # fmt: skip
    pipelines.append(p)
    p.start()
    return p
