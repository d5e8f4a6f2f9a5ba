"""Starting a real live pipeline in a test; the `pipelines` fixture (tests/conftest.py) stops each one."""

from __future__ import annotations

from app.pipeline import InferenceConfig, Pipeline


def start(pipelines: list[Pipeline], source: str, config: InferenceConfig | None = None, **kwargs) -> Pipeline:
    p = Pipeline(source, config or InferenceConfig(options={"threads": 1}), **kwargs)
    pipelines.append(p)
    p.start()
    return p
