"""A LiteRT compiled model reached through its C API (libLiteRt.so in the ai-edge-litert wheel) with ctypes.

Two things the Python wrapper of ai-edge-litert 2.3.0 cannot do, this can:

- **Profile.** Neither `Interpreter` nor `CompiledModel` can switch LiteRT's profiler on or hand
  back its events. The wheel's libLiteRt.so exports the C API that can (litert/c/litert_profiler.h,
  litert_compiled_model.h): with the runtime option `enable_profiling` set, this reads the events
  the runtime recorded: one per TFLite node on the built-in kernels, one per XNNPACK operator
  inside an XNNPACK partition, one per delegate kernel for a GPU partition, and the runtime's own
  `Invoke` per run.
- **Run without holding the GIL.** The wrapper's `run_by_index` and buffer reads keep Python's
  GIL through most of a GPU run, so no other Python thread of the process runs meanwhile: a
  pipeline's capture and results threads then queue behind every inference (docs/pipeline.md,
  "The GPU path"). A ctypes call of a `CDLL` releases the GIL for the
  call's duration, so the GPU backend runs through this (`app/backends/gpu/backend.py`) and the other
  threads overlap the run.

Layouts and names follow LiteRT's headers for this release, named per item below; they are
checked at run time where they can be (the event count against the buffer, the tags as strings).
"""

from __future__ import annotations

import ctypes as C
import math
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

import numpy as np

from app.backends.options import GpuPrecision
from app.errors import BackendUnavailable, ModelError
from app.system.native_log import capture_stderr

_P = C.c_void_p

# litert/c/litert_common.h: LiteRtHwAccelerator
HW_CPU = 1 << 0
HW_GPU = 1 << 1
# litert/c/litert_environment_options.h: kLiteRtEnvOptionTagRuntimeLibraryDir; litert_any.h: kLiteRtAnyTypeString
_ENV_RUNTIME_LIBRARY_DIR = 22
_ANY_STRING = 8
# litert/c/litert_tensor_buffer_types.h: LiteRtTensorBufferLockMode
_LOCK_READ, _LOCK_WRITE = 0, 1
# litert/c/litert_tensor_buffer.h: LITERT_HOST_MEMORY_BUFFER_ALIGNMENT
_HOST_ALIGNMENT = 64
# litert/runtime/litert_runtime_options.h (this release: the payload is TOML text under this identifier;
# later releases renamed it "runtime"), litert/c/options/litert_cpu_options.cc ("xnnpack"),
# litert/c/options/litert_gpu_options.cc ("gpu_options"; precision: kLiteRtDelegatePrecisionFp16 = 1, Fp32 = 2).
_RUNTIME_OPTIONS_ID = b"runtime_options_string"
_CPU_OPTIONS_ID = b"xnnpack"
_GPU_OPTIONS_ID = b"gpu_options"
_GPU_PRECISION: dict[str, int] = {GpuPrecision.FP16: 1, GpuPrecision.FP32: 2}  # a plain "fp16" finds it too
# litert/c/litert_model_types.h, litert_layout.h: LiteRtRankedTensorType is 72 bytes: the element type
# (int32), then LiteRtLayout: a word holding rank:7 and has_strides:1, dimensions[8] (int32), strides[8].
_RANKED_TYPE_SIZE = 72
_LAYOUT_WORD = 4
_DIMS = 8
_LAYOUT_SIZE = _RANKED_TYPE_SIZE - _LAYOUT_WORD  # a LiteRtLayout alone (LiteRtGetCompiledModelOutputTensorLayouts)
# litert/c/litert_model_types.h: LiteRtElementType, TFLite's TfLiteType values; the types numpy holds as they are
# (int4 is packed two to a byte, bfloat16 numpy lacks, strings and resources are no arrays: not read here).
_ELEMENT_TYPES: dict[int, np.dtype] = {
    code: np.dtype(name)
    for code, name in (
        (1, "float32"), (2, "int32"), (3, "uint8"), (4, "int64"), (6, "bool"), (7, "int16"), (8, "complex64"),
        (9, "int8"), (10, "float16"), (11, "float64"), (12, "complex128"), (13, "uint64"), (16, "uint32"),
        (17, "uint16"),
    )
}  # fmt: skip
# litert/c/litert_common.h: LiteRtStatus, the values a run or a buffer lock can answer with.
_STATUS = {
    1: "invalid argument",
    2: "memory allocation failure",
    3: "runtime failure",
    4: "missing implementation",
    5: "unsupported",
    6: "not found",
    7: "timeout expired",
    8: "wrong version",
    9: "unknown error",
}


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
class _Compiled:
    status: int
    handle: _P


@dataclass(frozen=True)
class BufferLayout:
    """One input's (output's) buffer as the compiled model has it: the element type (None: one numpy
    cannot hold), the concrete shape, and the tensor's own bytes in the buffer."""

    dtype: np.dtype | None
    shape: tuple[int, ...]
    size: int


@dataclass(frozen=True)
class RawEvent:
    tag: str
    type: int
    elapsed_us: int
    index: int  # event_metadata1
    subgraph: int  # event_metadata2


_LIB: C.CDLL | None = None
_HELD: C.PyDLL | None = None
_DESTRUCTOR = C.CFUNCTYPE(None, _P)
_KEEP = _DESTRUCTOR(lambda _payload: None)  # payloads are Python-owned buffers kept alive by the session


def runtime_dir() -> str:
    import ai_edge_litert

    package: str = ai_edge_litert.__file__
    return os.path.dirname(os.path.abspath(package))


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
        lib.LiteRtLockTensorBuffer.argtypes = [_P, C.POINTER(_P), C.c_int]
        lib.LiteRtUnlockTensorBuffer.argtypes = [_P]
        lib.LiteRtGetTensorBufferPackedSize.argtypes = [_P, C.POINTER(C.c_size_t)]
        lib.LiteRtCreateTensorBufferFromHostMemory.argtypes = [_P, _P, C.c_size_t, _P, C.POINTER(_P)]
        _LIB = lib
    return _LIB


def _held() -> C.PyDLL:
    """The same library through PyDLL: a call keeps the GIL. For the short calls between two runs (a
    buffer's lock and unlock): giving the GIL up there lets another thread of the pipeline take it, and
    the inference thread then waits for it back (docs/pipeline.md, "The GPU path"). Never for a run."""
    global _HELD
    if _HELD is None:
        lib = _lib()
        held = C.PyDLL(lib._name)  # the library already loaded: the same handle
        for name in ("LiteRtLockTensorBuffer", "LiteRtUnlockTensorBuffer"):
            getattr(held, name).argtypes = getattr(lib, name).argtypes
        _HELD = held
    return _HELD


def copy_holding_gil(dst: np.ndarray | C.Array[Any], src: np.ndarray | C.Array[Any]) -> None:
    """Copy the bytes of C-contiguous `src` into C-contiguous `dst` (the same byte count) without giving
    the GIL up. `np.copyto` releases it for a large copy; in a pipeline another thread then takes it, and
    the inference thread waits for it back before the run: a 602 KB input copy took 123-194 us there
    against 62-80 us in a bare loop on the H200 host, and 59-71 us in both this way (docs/pipeline.md,
    "The GPU path"). A memoryview assignment copies under the GIL."""
    # Both export the buffer protocol; the stubs declare __buffer__ (what mypy checks) from Python 3.12 only.
    memoryview(dst).cast("B")[:] = memoryview(src).cast("B")  # type: ignore[arg-type]  # stubs: __buffer__ is 3.12+


def _element_type(ranked: C.Array[C.c_char]) -> int:
    code: int = struct.unpack_from("<i", ranked.raw, 0)[0]
    return code


def _dims(ranked: C.Array[C.c_char]) -> tuple[int, ...]:
    rank = ranked.raw[_LAYOUT_WORD] & 0x7F
    return tuple(struct.unpack_from(f"<{rank}i", ranked.raw, _DIMS))


def _element_count(ranked: C.Array[C.c_char]) -> int:
    """0 for a rank-0 type: a shape the file leaves for the runtime to set (a true scalar reads the same)."""
    dims = _dims(ranked)
    return math.prod(dims) if dims else 0


def _set_dims(ranked: C.Array[C.c_char], dims: Sequence[int]) -> None:
    """Make the type's dimensions `dims`; its rank is theirs (the rank's 7 bits, has_strides kept)."""
    word = ranked.raw[_LAYOUT_WORD]
    C.memset(C.addressof(ranked) + _LAYOUT_WORD, (word & 0x80) | len(dims), 1)
    C.memmove(C.addressof(ranked) + _DIMS, struct.pack(f"<{len(dims)}i", *dims), 4 * len(dims))


class NativeRunFailed(ModelError):
    """A run, or a lock of one of its buffers, that LiteRT answered with an error status."""


def _check(status: int, what: str, error: type[Exception] = ModelError) -> None:
    if status != 0:
        said = _STATUS.get(status)
        raise error(f"LiteRT refused to {what} (status {status}{': ' + said if said else ''})")


def _create_environment(lib: C.CDLL, gpu: bool, keep: list[object]) -> _P:
    """A new LiteRT environment. The GPU accelerator's library is found through the runtime directory
    (its buffer, appended to `keep`, must outlive the environment); a CPU model does without it (and
    without the Vulkan devices it opens when loaded)."""
    options_count, option = 0, None
    if gpu:
        library_dir = C.create_string_buffer(runtime_dir().encode())
        keep.append(library_dir)
        options_count = 1
        option = C.byref(_EnvOption(_ENV_RUNTIME_LIBRARY_DIR, _Any(_ANY_STRING, C.cast(library_dir, _P))))
    env = _P()
    _check(lib.LiteRtCreateEnvironment(options_count, option, C.byref(env)), "create an environment",
           BackendUnavailable)  # fmt: skip
    return env


class Environment:
    """A LiteRT environment that several compiled models use in turn (numerics' cuts). With the GPU
    accelerator, making one makes the GPU device: a 3-node cut took 0.64 s on SwiftShader in an
    environment of its own against 0.14 s in a shared one (docs/numerics.md). Destroyed by `close()`,
    after every model made in it."""

    def __init__(self, gpu: bool) -> None:
        self._lib = _lib()
        self._keep: list[object] = []
        self.handle: _P | None = _create_environment(self._lib, gpu, self._keep)

    def close(self) -> None:
        if self.handle is not None:
            with capture_stderr():  # the runtime logs each accelerator it destroys
                self._lib.LiteRtDestroyEnvironment(self.handle)
            self.handle = None


class NativeModel:
    """One compiled model made through LiteRT's C API, with the runtime's profiler on or off.

    Not thread-safe: one thread runs it (the GPU accelerator wants that too)."""

    # True: the first input and output over numpy arrays of ours (_host_memory); False: the buffers the
    # runtime asks for, written and read under their lock with the GIL kept (_copy). Host memory made a
    # run one native call while the lock and unlock went through CDLL (each gave the GIL up); with them
    # through PyDLL, the runtime's buffers save a copy (the GPU reads its own buffer; host memory it copies
    # inside the run): the C loop ran 0.96-1.06x the wrapper's loop with them, 0.94-1.01x with host memory
    # (H200 host; docs/pipeline.md, "The GPU path").
    HOST_BUFFERS = False

    def __init__(
        self,
        content: bytes,
        accelerators: int,
        threads: int,
        profiling: bool = True,
        gpu_precision: GpuPrecision | str = GpuPrecision.FP16,
        input_shape: tuple[int, ...] | None = None,
        wait_hint: bool = False,
        capture_log: bool = True,
        input_shapes: Sequence[tuple[int, ...]] | None = None,
        environment: Environment | None = None,
    ) -> None:
        """`wait_hint`: the GPU accelerator's `hint_waiting_for_completion`. `capture_log=False`: the
        caller captures the runtime's log itself (it needs the lines when opening fails too).
        `input_shapes`: every input's fixed shape, model order (ModelSpec.inputs), for its dynamic
        dimensions; `input_shape`: the first input's alone. `environment`: compile in that one (made
        with the same accelerators) rather than in an environment of this model's own."""
        lib = _lib()
        self._lib = lib
        self._environment = environment
        self._handles: list[tuple[str, _P]] = []  # destroyed in reverse order
        self._keep: list[object] = []
        self.profiling = profiling
        # Fix dynamic dimensions as the app's CPU session does: to the spec's shapes (--input-shape, a batch of one).
        shapes = list(input_shapes) if input_shapes is not None else [input_shape] if input_shape is not None else []
        self._input_shapes: list[tuple[int, ...] | None] = [None if s is None else tuple(s) for s in shapes]
        self._resized = False
        self._settings = (accelerators, threads, gpu_precision, wait_hint)
        self._capture_log = capture_log
        self.log: list[str] = []
        try:
            if capture_log:
                with capture_stderr() as log:  # the runtime's INFO lines (accelerators it sought) stay off the terminal
                    self._open(content)
                self.log = log.lines()
            else:
                self._open(content)
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

    def _open(self, content: bytes) -> None:
        accelerators = self._settings[0]
        if self._environment is not None:  # shared: its owner destroys it after this model
            if self._environment.handle is None:
                raise ModelError("the shared LiteRT environment is closed")
            self._env = self._environment.handle
        else:
            env = _create_environment(self._lib, bool(accelerators & HW_GPU), self._keep)
            self._env = self._own("LiteRtDestroyEnvironment", env)
        self._model = self._own("LiteRtDestroyModel", self._read_model(content))
        compiled = self._compile(self._model)
        _check(compiled.status, "compile the model", BackendUnavailable if accelerators & HW_GPU else ModelError)
        self._compiled = self._own("LiteRtDestroyCompiledModel", compiled.handle)
        self._inputs, self.input_layouts, host_in = self._buffers(False)
        self._outputs, self.output_layouts, host_out = self._buffers(True)
        self._sizes = (self.input_layouts[0].size, self.output_layouts[0].size)
        self._host = (host_in, host_out)
        profiler = _P()
        _check(self._lib.LiteRtCompiledModelGetProfiler(self._compiled, C.byref(profiler)), "hand over its profiler")
        self._profiler = profiler if profiler.value else None  # owned by the compiled model
        if self.profiling and self._profiler is None:
            raise BackendUnavailable("LiteRT made no profiler for the model although profiling was asked for")

    def _read_model(self, content: bytes) -> _P:
        data = C.create_string_buffer(content, len(content))  # the model reads from it for its lifetime
        self._keep.append(data)
        model = _P()
        _check(self._lib.LiteRtCreateModelFromBuffer(self._env, data, len(content), C.byref(model)), "read the model")
        return model

    def _compile(self, model: _P) -> _Compiled:
        """Compile `model` in this environment with this session's options (status 0: compiled)."""
        lib = self._lib
        accelerators, threads, gpu_precision, wait_hint = self._settings
        options = _P()
        _check(lib.LiteRtCreateOptions(C.byref(options)), "create options")
        try:
            _check(lib.LiteRtSetOptionsHardwareAccelerators(options, accelerators), "set the accelerators")
            flag = "true" if self.profiling else "false"
            payloads = [
                (_RUNTIME_OPTIONS_ID, f"enable_profiling = {flag}\n"),
                (_CPU_OPTIONS_ID, f"num_threads = {int(threads)}\n"),
            ]
            if accelerators & HW_GPU:
                # Key names as LiteRT's own GPU options write them (litert/cc/options/litert_gpu_options.cc).
                hint = "true" if wait_hint else "false"
                gpu = f"precision = {_GPU_PRECISION[gpu_precision]}\nhint_waiting_for_completion = {hint}\n"
                payloads.append((_GPU_OPTIONS_ID, gpu))
            for identifier, toml in payloads:
                status = lib.LiteRtAddOpaqueOptions(options, self._opaque(identifier, toml))
                _check(status, f"take {identifier.decode()}")
            compiled = _P()
            status = lib.LiteRtCreateCompiledModel(self._env, model, options, C.byref(compiled))
        finally:
            lib.LiteRtDestroyOptions(options)
        return _Compiled(status, compiled)

    def fully_accelerates(self, content: bytes) -> bool:
        """Compile another model (a one-node model cut from this one) in this environment with these
        options: does the accelerator take it whole? A model it cannot compile at all: no."""
        lib = self._lib
        kept = len(self._keep)
        try:
            model = self._read_model(content)
        except ModelError:
            del self._keep[kept:]
            return False
        try:
            compiled = self._compile(model)
            if compiled.status != 0:
                return False
            try:
                flag = C.c_bool()
                status = lib.LiteRtCompiledModelIsFullyAccelerated(compiled.handle, C.byref(flag))
                return status == 0 and bool(flag.value)
            finally:
                lib.LiteRtDestroyCompiledModel(compiled.handle)
        finally:
            lib.LiteRtDestroyModel(model)
            del self._keep[kept:]  # that model's data and options, read by nothing now

    def _buffers(self, outputs: bool) -> tuple[C.Array[_P], tuple[BufferLayout, ...], np.ndarray | None]:
        """The inputs' (outputs') buffers, each one's layout, and the numpy array the first one is made
        over when it is host memory of ours (`_host_memory`)."""
        lib = self._lib
        signature = _P()
        _check(lib.LiteRtGetModelSignature(self._model, 0, C.byref(signature)), "list the model's signature")
        count = C.c_size_t()
        counter = lib.LiteRtGetNumSignatureOutputs if outputs else lib.LiteRtGetNumSignatureInputs
        _check(counter(signature, C.byref(count)), "count the model's tensors")
        if count.value == 0:
            raise ModelError("the model's signature has no input or no output")
        getter = lib.LiteRtGetSignatureOutputTensorByIndex if outputs else lib.LiteRtGetSignatureInputTensorByIndex
        requirements = (
            lib.LiteRtGetCompiledModelOutputBufferRequirements
            if outputs
            else lib.LiteRtGetCompiledModelInputBufferRequirements
        )
        types = []
        for i in range(count.value):
            tensor = _P()
            _check(getter(signature, i, C.byref(tensor)), "read a tensor")
            ranked = C.create_string_buffer(_RANKED_TYPE_SIZE)
            _check(lib.LiteRtGetRankedTensorType(tensor, ranked), "read a tensor's type")
            types.append(ranked)
        if outputs:
            self._fix_output_types(types)
        else:
            for i, ranked in enumerate(types):
                self._fix_input_type(ranked, i)
        handles: list[int | None] = []
        layouts: list[BufferLayout] = []
        host = None
        for i, ranked in enumerate(types):
            req = _P()
            _check(requirements(self._compiled, 0, i, C.byref(req)), "state a buffer's requirements")
            buffer = _P()
            _check(
                lib.LiteRtCreateManagedTensorBufferFromRequirements(self._env, ranked, req, C.byref(buffer)),
                "allocate a buffer",
            )
            try:
                size = self._buffer_size(buffer)
                made = self._host_memory(ranked, size) if self.HOST_BUFFERS and i == 0 else None
            except ModelError:
                lib.LiteRtDestroyTensorBuffer(buffer)
                raise
            if made is not None:  # the runtime's own buffer is not used from now on
                lib.LiteRtDestroyTensorBuffer(buffer)
                buffer, host = made
            handles.append(self._own("LiteRtDestroyTensorBuffer", buffer).value)
            layouts.append(BufferLayout(_ELEMENT_TYPES.get(_element_type(ranked)), _dims(ranked), size))
        return (_P * len(handles))(*handles), tuple(layouts), host

    def _host_memory(self, ranked: C.Array[C.c_char], size: int) -> tuple[_P, np.ndarray] | None:
        """A buffer of `size` bytes over a numpy array of ours, for the first input (output), when
        HOST_BUFFERS is set (benchmarks/investigations/gpu_pipeline.py compares both). The runtime accepts
        host memory where it asked for its own buffer type (WebGPU buffers for the GPU's float32 models,
        host memory for its int8 ones) and copies to the device inside the run, giving the same outputs
        (tests/test_backend_gpu.py); whether that is faster is measured (benchmarks/investigations/gpu_pipeline.py).
        None when the runtime refuses it: the runtime's own buffer is kept."""
        spare = np.empty(size + _HOST_ALIGNMENT, np.uint8)
        start = -spare.ctypes.data % _HOST_ALIGNMENT
        array = spare[start : start + size]
        buffer = _P()
        status = self._lib.LiteRtCreateTensorBufferFromHostMemory(
            ranked, _P(array.ctypes.data), size, None, C.byref(buffer)
        )
        if status != 0:
            return None
        self._keep.append(spare)  # outlives the buffer: buffers are destroyed before _keep is cleared
        return buffer, array

    def _buffer_size(self, buffer: _P) -> int:
        """The tensor's own bytes in the buffer (a GPU buffer may be larger: padding)."""
        size = C.c_size_t()
        _check(self._lib.LiteRtGetTensorBufferPackedSize(buffer, C.byref(size)), "size a buffer")
        return size.value

    def _fix_input_type(self, ranked: C.Array[C.c_char], index: int) -> None:
        """The input made the shape the app feeds (ModelSpec's fixed inputs: --input-shape, or a dynamic
        batch of one): resized in the compiled model where that differs from its type (the type holds the
        file's shape, 1 where the signature says -1, or -1), its type made concrete."""
        dims = _dims(ranked)
        wanted = self._input_shapes[index] if index < len(self._input_shapes) else None
        if (wanted is None or tuple(wanted) == dims) and -1 not in dims:
            return
        if wanted is not None and len(wanted) == len(dims):
            fixed = [int(d) for d in wanted]
            array = (C.c_int * len(fixed))(*fixed)
            status = self._lib.LiteRtCompiledModelResizeInputTensor(self._compiled, 0, index, array, len(fixed))
            _check(status, "resize its dynamic input")
            self._resized = True
        else:
            fixed = [1 if d == -1 else d for d in dims]  # the batch of one image
        _set_dims(ranked, fixed)

    def _fix_output_types(self, types: list[C.Array[C.c_char]]) -> None:
        """Outputs whose type in the file is not concrete take the shape the runtime allocated: a dynamic
        dimension (-1), or a shape the file leaves empty for the op to set at preparation (the SSD's
        TFLite_Detection_PostProcess outputs: [] in the file, [1,10,4], [1,10], [1,10], [1] allocated),
        and every output after an input was resized. Without that the buffers are made too small and
        the run fails ("Custom allocation is too small for tensor")."""
        if not self._resized and all(_element_count(r) > 0 and -1 not in _dims(r) for r in types):
            return
        lib = self._lib
        lib.LiteRtGetCompiledModelOutputTensorLayouts.argtypes = [_P, C.c_size_t, C.c_size_t, _P, C.c_bool]
        layouts = C.create_string_buffer(_LAYOUT_SIZE * len(types))
        # update_allocation: the runtime allocates the tensors first (the CPU path has not yet; the GPU's has).
        status = lib.LiteRtGetCompiledModelOutputTensorLayouts(self._compiled, 0, len(types), layouts, True)
        for i, ranked in enumerate(types):
            if status == 0:
                rank = layouts.raw[_LAYOUT_SIZE * i] & 0x7F
                allocated = struct.unpack_from(f"<{rank}i", layouts.raw, _LAYOUT_SIZE * i + _LAYOUT_WORD)
                if -1 not in allocated:
                    C.memmove(C.addressof(ranked) + _LAYOUT_WORD, C.addressof(layouts) + _LAYOUT_SIZE * i, _LAYOUT_SIZE)
                    continue
            _set_dims(ranked, [1 if d == -1 else d for d in _dims(ranked)])  # as for an input: a batch of one

    def write_input(self, tensor: np.ndarray) -> None:
        """Copy the input (one image, the model's dtype and size) into the first input buffer."""
        tensor = np.ascontiguousarray(tensor)
        if tensor.nbytes != self._sizes[0]:
            raise ValueError(f"an input of {tensor.nbytes} bytes for a model that takes {self._sizes[0]}")
        self._write_input(tensor)

    def _write_input(self, tensor: np.ndarray) -> None:
        """write_input for a tensor already checked (C-contiguous, the input's size): run_tensor's path."""
        host = self._host[0]
        if host is not None:
            copy_holding_gil(host, tensor)
        else:
            self._copy(self._inputs[0], _LOCK_WRITE, tensor, "map the input")

    def _read_output(self, out: np.ndarray) -> None:
        host = self._host[1]
        if host is not None:
            copy_holding_gil(out, host[: out.nbytes])
        else:
            self._copy(self._outputs[0], _LOCK_READ, out, "map the output")

    def _copy(self, handle: int | None, mode: int, array: np.ndarray, what: str) -> None:
        """Between a runtime-made buffer and `array` (its first array.nbytes bytes), under the buffer's
        lock. The copy and the unlock keep the GIL (`_held`, `copy_holding_gil`), and so does the lock
        for writing; the lock for reading gives it up: on a GPU buffer it waits for the download from
        the device (~0.18 ms of ~1 ms per run on the H200 host), a wait like the run's, right after the
        run, when the pipeline's other threads have had the run's time for their work."""
        held = _held()
        lock = held.LiteRtLockTensorBuffer if mode == _LOCK_WRITE else self._lib.LiteRtLockTensorBuffer
        buffer, address = _P(handle), _P()
        _check(lock(buffer, C.byref(address), mode), what, NativeRunFailed)
        try:
            if not address.value:
                raise NativeRunFailed(f"LiteRT gave no address to {what}")
            mapped = (C.c_uint8 * array.nbytes).from_address(address.value)
            if mode == _LOCK_WRITE:
                copy_holding_gil(mapped, array)
            else:
                copy_holding_gil(array, mapped)
        finally:
            held.LiteRtUnlockTensorBuffer(buffer)

    def run(self) -> None:
        # A CDLL call: the GIL is released until the run (the GPU's wait included) returns.
        status = self._lib.LiteRtRunCompiledModel(
            self._compiled, 0, len(self._inputs), self._inputs, len(self._outputs), self._outputs
        )
        _check(status, "run the model", NativeRunFailed)

    def run_tensor(self, tensor: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Write `tensor` (C-contiguous, the input's dtype and size) into the first input, run, and copy the
        first output's first `out.nbytes` bytes into `out`. Only the run and the output's lock give the
        GIL up (CDLL calls: they wait for the device); the copies, the input's lock and the unlocks keep
        it, so no other thread of the pipeline can take it in between (`_copy`)."""
        if not tensor.flags.c_contiguous or tensor.nbytes != self._sizes[0] or out.nbytes > self._sizes[1]:
            raise ValueError(
                f"buffers of {tensor.nbytes} and {out.nbytes} bytes for a model of"
                f" {self._sizes[0]} in and {self._sizes[1]} out"
            )
        self._write_input(tensor)
        self.run()
        self._read_output(out)
        return out

    def write_inputs(self, tensors: Sequence[np.ndarray]) -> None:
        """Every input (model order), each of its buffer's element type and size. The first goes through
        run_tensor's own path (host memory of ours when HOST_BUFFERS is set)."""
        if len(tensors) != len(self.input_layouts):
            raise ValueError(f"{len(tensors)} inputs for a model that takes {len(self.input_layouts)}")
        arrays = []
        for i, (tensor, layout) in enumerate(zip(tensors, self.input_layouts, strict=True)):
            array = np.ascontiguousarray(tensor)
            if array.dtype != layout.dtype or array.nbytes != layout.size:
                raise ValueError(
                    f"input {i}: {array.dtype} of {array.nbytes} bytes for a model that takes"
                    f" {layout.dtype or 'a type numpy cannot hold'} of {layout.size} bytes {list(layout.shape)}"
                )
            arrays.append(array)
        self._write_input(arrays[0])
        for i in range(1, len(arrays)):
            self._copy(self._inputs[i], _LOCK_WRITE, arrays[i], "map an input")

    def read_outputs(self) -> list[np.ndarray]:
        """Every output (model order) in a new array of its buffer's type and shape."""
        outs = []
        for i, layout in enumerate(self.output_layouts):
            if layout.dtype is None or math.prod(layout.shape) * layout.dtype.itemsize != layout.size:
                raise ModelError(
                    f"output {i} ({layout.size} bytes, shape {list(layout.shape)}) cannot be read as an array"
                )
            outs.append(np.empty(layout.shape, layout.dtype))
        self._read_output(outs[0])
        for i in range(1, len(outs)):
            self._copy(self._outputs[i], _LOCK_READ, outs[i], "map an output")
        return outs

    def run_all(self, tensors: Sequence[np.ndarray]) -> list[np.ndarray]:
        """write_inputs, one run, read_outputs."""
        self.write_inputs(tensors)
        self.run()
        return self.read_outputs()

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
        if not self._capture_log:  # the caller captures (capture_stderr does not nest)
            self._destroy()
            return
        with capture_stderr():  # the runtime logs each accelerator it destroys
            self._destroy()

    def _destroy(self) -> None:
        while self._handles:
            destroy, handle = self._handles.pop()
            getattr(self._lib, destroy)(handle)
        self._keep.clear()
