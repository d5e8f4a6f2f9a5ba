"""What an inference thread holds while a session is open."""

from __future__ import annotations

from app.backends import ModelRunner
from app.model.postprocess import Postprocessor
from app.model.preprocess import Preprocessor
from app.model.spec import ModelSpec
from app.pipeline.types import InferenceConfig
from app.system.thread_cpu import CpuMeter


class ActiveSession:
    """What the inference thread holds: the spec, its backend session and processors."""

    def __init__(
        self, config: InferenceConfig, spec: ModelSpec, session: ModelRunner, session_id: int, runtime_threads: set[int]
    ) -> None:
        self.config, self.spec, self.session, self.session_id = config, spec, session, session_id
        self.pre, self.post = Preprocessor(spec), Postprocessor(spec)
        # CPU per inference: this thread + the threads the runtime started when it opened (those
        # read by the results thread, off the inference thread's cycle: see CpuMeter).
        self.cpu = CpuMeter(runtime_threads, bracket_runtime=False)

    def close(self) -> None:
        self.session.close()
        self.cpu.close()
