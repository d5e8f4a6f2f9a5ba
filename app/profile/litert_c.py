"""LiteRT's own profiler, reached through its C API (libLiteRt.so in the ai-edge-litert wheel) with ctypes.

The Python wrapper of ai-edge-litert 2.3.0 exposes no profiler: neither `Interpreter` nor
`CompiledModel` can switch it on or hand back its events. The wheel's libLiteRt.so exports the
C API that can (litert/c/litert_profiler.h, litert_compiled_model.h), so this module builds the
compiled model itself through that API, with the runtime option `enable_profiling` set, and reads
the events the runtime recorded: one per TFLite node on the built-in kernels, one per XNNPACK
operator inside an XNNPACK partition, one per delegate kernel for a GPU partition, and the
runtime's own `Invoke` per run.

Layouts and names follow LiteRT's headers for this release, named per item below; they are
checked at run time where they can be (the event count against the buffer, the tags as strings).
"""

from __future__ import annotations

import ctypes as C
import os
import struct
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from app.errors import BackendUnavailable, ModelError
from app.native_log import capture_stderr

_P = C.c_void_p

# litert/c/litert_common.h: LiteRtHwAccelerator
HW_CPU = 1 << 0
HW_GPU = 1 << 1
# litert/c/litert_environment_options.h: kLiteRtEnvOptionTagRuntimeLibraryDir; litert_any.h: kLiteRtAnyTypeString
_ENV_RUNTIME_LIBRARY_DIR = 22
_ANY_STRING = 8
# litert/c/litert_tensor_buffer_types.h: LiteRtTensorBufferLockMode
_LOCK_READ, _LOCK_WRITE = 0, 1
# litert/runtime/litert_runtime_options.h (this release: the payload is TOML text under this identifier;
# later releases renamed it "runtime"), litert/c/options/litert_cpu_options.cc ("xnnpack"),
# litert/c/options/litert_gpu_options.cc ("gpu_options"; precision: kLiteRtDelegatePrecisionFp16 = 1, Fp32 = 2).
_RUNTIME_OPTIONS_ID = b"runtime_options_string"
_CPU_OPTIONS_ID = b"xnnpack"
_GPU_OPTIONS_ID = b"gpu_options"
_GPU_PRECISION = {"fp16": 1, "fp32": 2}
# litert/c/litert_model_types.h, litert_layout.h: LiteRtRankedTensorType is 72 bytes: the element type
# (int32), then LiteRtLayout: a word holding rank:7 and has_strides:1, dimensions[8] (int32), strides[8].
_RANKED_TYPE_SIZE = 72
_LAYOUT_WORD = 4
_DIMS = 8


class EventType(IntEnum):
    """litert/c/litert_profiler_event.h: LiteRtProfilerEventType (tflite::Profiler::EventType)."""

    DEFAULT = 1  # the runtime's own spans: Invoke, LiteRT::Run[...]
    OPERATOR_INVOKE_EVENT = 2  # a TFLite node on the built-in kernels, or a delegate kernel node
    DELEGATE_OPERATOR_INVOKE_EVENT = 4
    DELEGATE_PROFILED_OPERATOR_INVOKE_EVENT = 8  # an operator inside a delegate (XNNPACK) that profiles itself
    GENERAL_RUNTIME_INSTRUMENTATION_EVENT = 16
    TELEMETRY_EVENT = 32


class _MemoryUsage(C.Structure):
    _fields_ = [("total_allocated_bytes", C.c_size_t), ("in_use", C.c_size_t), ("private_footprint", C.c_size_t)]


class _Event(C.Structure):
    """litert/c/litert_profiler_event.h: ProfiledEventData (104 bytes on LP64)."""

    _fields_ = [
        ("tag", C.c_char_p),
        ("event_type", C.c_int),
        ("start_timestamp_us", C.c_uint64),
        ("elapsed_time_us", C.c_uint64),
        ("begin_mem_usage", _MemoryUsage),
        ("end_mem_usage", _MemoryUsage),
        ("event_metadata1", C.c_int64),  # the TFLite node index, or the operator's index in its delegate
        ("event_metadata2", C.c_int64),  # the subgraph index
        ("event_source", C.c_int),
    ]


class _Any(C.Structure):
    _fields_ = [("type", C.c_int), ("value", C.c_void_p)]


class _EnvOption(C.Structure):
    _fields_ = [("tag", C.c_int), ("value", _Any)]


@dataclass(frozen=True)
class RawEvent:
    tag: str
    type: int
    elapsed_us: int
    index: int  # event_metadata1
    subgraph: int  # event_metadata2


_LIB: C.CDLL | None = None
_DESTRUCTOR = C.CFUNCTYPE(None, _P)
_KEEP = _DESTRUCTOR(lambda _payload: None)  # payloads are Python-owned buffers kept alive by the session


def runtime_dir() -> str:
    import ai_edge_litert

    return os.path.dirname(os.path.abspath(ai_edge_litert.__file__))


def _lib() -> C.CDLL:
    global _LIB
    if _LIB is None:
        path = os.path.join(runtime_dir(), "libLiteRt.so")
        try:
            lib = C.CDLL(path)
        except OSError as exc:
            raise BackendUnavailable(f"LiteRT's C library cannot be loaded ({exc})") from None
        needed = ("LiteRtCompiledModelGetProfiler", "LiteRtStartProfiler", "LiteRtGetProfilerEvents")
        missing = [name for name in needed if not hasattr(lib, name)]
        if missing:
            raise BackendUnavailable(f"this LiteRT build exports no profiler ({', '.join(missing)} missing)")
        lib.LiteRtCreateModelFromBuffer.argtypes = [_P, _P, C.c_size_t, C.POINTER(_P)]
        lib.LiteRtRunCompiledModel.argtypes = [_P, C.c_size_t, C.c_size_t, _P, C.c_size_t, _P]
        lib.LiteRtGetProfilerEvents.argtypes = [_P, C.c_int, _P]
        lib.LiteRtGetProfileSummary.argtypes = [_P, _P, C.POINTER(C.c_void_p)]
        _LIB = lib
    return _LIB


def _check(status: int, what: str, error: type[Exception] = ModelError) -> None:
    if status != 0:
        raise error(f"LiteRT refused to {what} (status {status})")


class ProfiledModel:
    """One compiled model made through LiteRT's C API, with the runtime's profiler on or off.

    Not thread-safe: one thread runs it (the GPU accelerator wants that too)."""

    def __init__(
        self,
        content: bytes,
        accelerators: int,
        threads: int,
        profiling: bool = True,
        gpu_precision: str = "fp16",
        input_shape: tuple[int, ...] | None = None,
    ) -> None:
        lib = _lib()
        self._lib = lib
        self._handles: list[tuple[str, _P]] = []  # destroyed in reverse order
        self._keep: list[object] = []
        self.profiling = profiling
        self._input_shape = input_shape  # fixes a dynamic batch dimension, as the app's CPU session does
        self.log: list[str] = []
        try:
            with capture_stderr() as log:  # the runtime's INFO lines (accelerators it looked for) stay off the terminal
                self._open(content, accelerators, threads, gpu_precision)
            self.log = log.lines()
        except BaseException:
            self.close()
            raise

    def _own(self, destroy: str, handle: _P) -> _P:
        self._handles.append((destroy, handle))
        return handle

    def _opaque(self, identifier: bytes, toml: str) -> _P:
        payload = C.create_string_buffer(toml.encode())
        self._keep.append(payload)
        opaque = _P()
        _check(self._lib.LiteRtCreateOpaqueOptions(identifier, payload, _KEEP, C.byref(opaque)), "take the options")
        return opaque

    def _open(self, content: bytes, accelerators: int, threads: int, gpu_precision: str) -> None:
        lib = self._lib
        # The GPU accelerator's library is found through the runtime directory; a CPU model does without
        # it (and without the Vulkan devices it opens when loaded).
        options_count, option = 0, None
        if accelerators & HW_GPU:
            library_dir = C.create_string_buffer(runtime_dir().encode())
            self._keep.append(library_dir)
            options_count = 1
            option = C.byref(_EnvOption(_ENV_RUNTIME_LIBRARY_DIR, _Any(_ANY_STRING, C.cast(library_dir, _P))))
        env = _P()
        status = lib.LiteRtCreateEnvironment(options_count, option, C.byref(env))
        _check(status, "create an environment", BackendUnavailable)
        self._env = self._own("LiteRtDestroyEnvironment", env)
        data = C.create_string_buffer(content, len(content))  # the model reads from it for its lifetime
        self._keep.append(data)
        model = _P()
        _check(lib.LiteRtCreateModelFromBuffer(env, data, len(content), C.byref(model)), "read the model")
        self._model = self._own("LiteRtDestroyModel", model)
        options = _P()
        _check(lib.LiteRtCreateOptions(C.byref(options)), "create options")
        _check(lib.LiteRtSetOptionsHardwareAccelerators(options, accelerators), "set the accelerators")
        flag = "true" if self.profiling else "false"
        payloads = [
            (_RUNTIME_OPTIONS_ID, f"enable_profiling = {flag}\n"),
            (_CPU_OPTIONS_ID, f"num_threads = {int(threads)}\n"),
        ]
        if accelerators & HW_GPU:
            payloads.append((_GPU_OPTIONS_ID, f"precision = {_GPU_PRECISION[gpu_precision]}\n"))
        for identifier, toml in payloads:
            _check(lib.LiteRtAddOpaqueOptions(options, self._opaque(identifier, toml)), f"take {identifier.decode()}")
        compiled = _P()
        status = lib.LiteRtCreateCompiledModel(env, model, options, C.byref(compiled))
        lib.LiteRtDestroyOptions(options)
        _check(status, "compile the model", BackendUnavailable if accelerators & HW_GPU else ModelError)
        self._compiled = self._own("LiteRtDestroyCompiledModel", compiled)
        self._inputs = self._buffers(False)
        self._outputs = self._buffers(True)
        profiler = _P()
        _check(lib.LiteRtCompiledModelGetProfiler(compiled, C.byref(profiler)), "hand over its profiler")
        self._profiler = profiler if profiler.value else None  # owned by the compiled model
        if self.profiling and self._profiler is None:
            raise BackendUnavailable("LiteRT made no profiler for the model although profiling was asked for")

    def _buffers(self, outputs: bool) -> C.Array:
        lib = self._lib
        signature = _P()
        _check(lib.LiteRtGetModelSignature(self._model, 0, C.byref(signature)), "list the model's signature")
        count = C.c_size_t()
        counter = lib.LiteRtGetNumSignatureOutputs if outputs else lib.LiteRtGetNumSignatureInputs
        _check(counter(signature, C.byref(count)), "count the model's tensors")
        getter = lib.LiteRtGetSignatureOutputTensorByIndex if outputs else lib.LiteRtGetSignatureInputTensorByIndex
        requirements = (
            lib.LiteRtGetCompiledModelOutputBufferRequirements
            if outputs
            else lib.LiteRtGetCompiledModelInputBufferRequirements
        )
        handles = []
        for i in range(count.value):
            tensor = _P()
            _check(getter(signature, i, C.byref(tensor)), "read a tensor")
            ranked = C.create_string_buffer(_RANKED_TYPE_SIZE)
            _check(lib.LiteRtGetRankedTensorType(tensor, ranked), "read a tensor's type")
            self._fix_dynamic_dims(ranked, i, outputs)
            req = _P()
            _check(requirements(self._compiled, 0, i, C.byref(req)), "state a buffer's requirements")
            buffer = _P()
            _check(
                lib.LiteRtCreateManagedTensorBufferFromRequirements(self._env, ranked, req, C.byref(buffer)),
                "allocate a buffer",
            )
            handles.append(self._own("LiteRtDestroyTensorBuffer", buffer).value)
        return (_P * len(handles))(*handles)

    def _fix_dynamic_dims(self, ranked: C.Array, index: int, output: bool) -> None:
        """A dynamic dimension (-1; a dynamic batch) set to the one image the app runs: the input resized
        in the compiled model first, then every buffer's type made concrete to match."""
        rank = ranked.raw[_LAYOUT_WORD] & 0x7F
        dims = list(struct.unpack_from(f"<{rank}i", ranked.raw, _DIMS))
        if -1 not in dims:
            return
        if not output and index == 0 and self._input_shape is not None and len(self._input_shape) == rank:
            fixed = [int(d) for d in self._input_shape]
            array = (C.c_int * rank)(*fixed)
            status = self._lib.LiteRtCompiledModelResizeInputTensor(self._compiled, 0, 0, array, rank)
            _check(status, "resize its dynamic input")
        else:
            fixed = [1 if d == -1 else d for d in dims]  # the batch of one image
        C.memmove(C.addressof(ranked) + _DIMS, struct.pack(f"<{rank}i", *fixed), 4 * rank)

    def write_input(self, tensor: np.ndarray) -> None:
        """Copy the input (one image, the model's dtype) into the first input buffer."""
        address = _P()
        _check(self._lib.LiteRtLockTensorBuffer(_P(self._inputs[0]), C.byref(address), _LOCK_WRITE), "map the input")
        try:
            raw = np.ascontiguousarray(tensor).tobytes()
            C.memmove(address, raw, len(raw))
        finally:
            self._lib.LiteRtUnlockTensorBuffer(_P(self._inputs[0]))

    def run(self) -> None:
        status = self._lib.LiteRtRunCompiledModel(
            self._compiled, 0, len(self._inputs), self._inputs, len(self._outputs), self._outputs
        )
        _check(status, "run the model")

    def start(self) -> None:
        if self._profiler is not None:
            _check(self._lib.LiteRtResetProfiler(self._profiler), "reset the profiler")
            _check(self._lib.LiteRtStartProfiler(self._profiler), "start the profiler")

    def stop(self) -> None:
        if self._profiler is not None:
            _check(self._lib.LiteRtStopProfiler(self._profiler), "stop the profiler")

    def events(self) -> list[RawEvent]:
        """The events recorded since start(), in the order the runtime recorded them."""
        if self._profiler is None:
            return []
        count = C.c_int()
        _check(self._lib.LiteRtGetNumProfilerEvents(self._profiler, C.byref(count)), "count its events")
        if count.value <= 0:
            return []
        events = (_Event * count.value)()
        _check(self._lib.LiteRtGetProfilerEvents(self._profiler, count.value, events), "hand over its events")
        return [
            RawEvent(
                tag=(e.tag or b"").decode("utf-8", "replace"),
                type=e.event_type,
                elapsed_us=int(e.elapsed_time_us),
                index=int(e.event_metadata1),
                subgraph=int(e.event_metadata2),
            )
            for e in events
        ]

    def summary(self) -> str | None:
        """The runtime's own text summary (TFLite's profile summarizer tables), or None."""
        if self._profiler is None:
            return None
        text = C.c_void_p()
        if self._lib.LiteRtGetProfileSummary(self._profiler, self._compiled, C.byref(text)) != 0 or not text.value:
            return None
        try:
            return C.string_at(text.value).decode("utf-8", "replace")
        finally:
            C.CDLL(None).free(text)  # the runtime allocates it with malloc (litert_profiler.h)

    def is_fully_accelerated(self) -> bool:
        flag = C.c_bool()
        _check(self._lib.LiteRtCompiledModelIsFullyAccelerated(self._compiled, C.byref(flag)), "say what it took")
        return bool(flag.value)

    def close(self) -> None:
        with capture_stderr():  # the runtime logs each accelerator it destroys
            while self._handles:
                destroy, handle = self._handles.pop()
                getattr(self._lib, destroy)(handle)
        self._keep.clear()
