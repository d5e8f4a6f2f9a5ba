"""What an inference thread holds while a session is open."""

from __future__ import annotations

from app.backends import ModelRunner
from app.backends.base import child_cpu_reader
from app.metrics.memory import MemoryDelta
from app.model.decode import TaskDecoder
from app.model.feed import InputFeeder
from app.model.postprocess import Postprocessor
from app.model.preprocess import CropBox, Preprocessor, PreviousMask
from app.model.spec import ModelSpec
from app.model.task import ClassificationLayout, Task
from app.pipeline.types import InferenceConfig
from app.system.thread_cpu import CpuMeter


class ActiveSession:
    """What the inference thread holds: the spec, its backend session and processors."""

    def __init__(
        self,
        config: InferenceConfig,
        spec: ModelSpec,
        session: ModelRunner,
        session_id: int,
        runtime_threads: set[int],
        memory: MemoryDelta,
    ) -> None:
        self._config, self.spec, self.session, self.session_id = config, spec, session, session_id
        self.memory = memory  # what opening the session added to the resident set
        self.post = Postprocessor(spec)
        self.pre = Preprocessor(spec) if spec.image_input is not None else None  # None: no input takes the frame
        # A segmenter fed its previous mask: this session's own, so a switch or a new pipeline starts empty.
        self.mask = PreviousMask(spec) if spec.previous_mask else None
        # A classifier of one input keeps the path it always had (`run`, top-k); any other model runs
        # every input and output (`run_all`) and is read by its task's decoder.
        self.any_model = not spec.is_image_classifier
        self.feed = InputFeeder(spec) if self.any_model else None
        self.decoder = TaskDecoder(spec, config.score_threshold) if spec.kind != Task.CLASSIFICATION else None
        layout = spec.task.layout if spec.task else None
        self.primary = layout.output if isinstance(layout, ClassificationLayout) else 0  # a classifier's scores
        # CPU per inference: this thread + the threads the runtime started when it opened (those
        # read by the results thread, off the inference thread's cycle: see CpuMeter).
        self.cpu = CpuMeter(runtime_threads, bracket_runtime=False, child_cpu=child_cpu_reader(session))

    @property
    def config(self) -> InferenceConfig:
        return self._config

    @config.setter
    def config(self, config: InferenceConfig) -> None:
        """A change that keeps the session (throttle, top-k, score threshold) applies from the next result."""
        self._config = config
        if self.decoder is not None:
            self.decoder.threshold = config.score_threshold

    def crop_box(self, width: int, height: int) -> CropBox:
        """What the model saw of a frame of this size (all of it when no input takes the frame)."""
        return self.pre.crop_box(width, height) if self.pre is not None else CropBox(0, 0, width, height)

    def close(self) -> None:
        self.session.close()
        self.cpu.close()
