"""A GPU session in a process of its own (the child: app/backends/gpu/process_child.py; the wire:
process_protocol.py), for the live pipeline on a fast GPU.

Why: in this process a run gives the GIL up, and when it returns the inference thread must take it
back from whichever pipeline thread (capture, preprocessing, results) holds it, then do its own Python
before the next run starts; the GPU waits meanwhile. On an H100 host 0.1 ms of Python between two
~1 ms runs cost 14% of the model's rate (benchmarks/investigations/gpu_overlap.py, docs/pipeline.md).
The child has no other Python thread, and `submit` lets the parent queue the next input while the child
runs this one (two slots), so the child starts each run as soon as the last returns.

The child opens the very GpuSession this process would, so the report (nodes, partitions, adapter,
fallback) is the same one, made there. If the child dies (a driver crash) the run fails like a lost
device: the pipeline falls back to the CPU, visibly, and this process lives on.
"""

from __future__ import annotations

import mmap
import os
import select
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import IO, Any

import numpy as np

from app.backends.base import ChildRun, DelegationReport
from app.backends.gpu import process_protocol as wire
from app.backends.litert_c import copy_holding_gil
from app.backends.options import BackendOptions
from app.errors import BackendUnavailable, ModelError, RunFailed
from app.model.spec import ModelSpec

OPEN_TIMEOUT_S = 120.0  # as long as compiling may take (app/backends/gpu/backend.py COMPILE_TIMEOUT_S)
_CLOSE_TIMEOUT_S = 10.0


class GpuProcessRunFailed(RunFailed):
    """The child's run failed, or the child is gone."""


def _shared_file() -> IO[bytes]:
    """An unnamed file both processes map: memory-backed where Linux offers it."""
    if hasattr(os, "memfd_create"):
        return os.fdopen(os.memfd_create("delegate-scope-gpu", 0), "r+b")
    return tempfile.TemporaryFile()


class GpuProcessSession:
    """The parent's side. `run`/`run_all` as any session (one at a time); `submit` and `collect` keep up
    to `depth` inputs in the child, oldest first. Used by one thread at a time, as any GPU session."""

    def __init__(self, spec: ModelSpec, options: BackendOptions) -> None:
        self._file = _shared_file()
        self._log = tempfile.TemporaryFile()  # the child's stderr: its last line says why it ended
        request_read, self._request = os.pipe()
        self._reply, reply_write = os.pipe()
        fds = (self._file.fileno(), request_read, reply_write)
        self._shared: mmap.mmap | None = None
        self._flight: deque[int] = deque()
        self._last_cpu: float | None = None
        self._next = 0
        started = time.perf_counter()
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "app.backends.gpu.process_child", *map(str, fds)],
                pass_fds=fds,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._log,
            )
        except OSError as exc:
            self._close_fds()
            self._file.close()
            self._log.close()
            raise BackendUnavailable(f"the GPU process could not start ({exc})") from None
        finally:
            os.close(request_read)
            os.close(reply_write)
        try:
            made = self._open(spec, options)  # the child's report, as JSON
            # Opening took this long from here (the child's start included), in a process of its own.
            init_ms = (time.perf_counter() - started) * 1e3
            self.report = DelegationReport.from_dict(
                {**made, "init_ms": init_ms, "options": {**made["options"], "process": "own"}}
            )
        except BaseException:
            self.close()
            raise

    def _open(self, spec: ModelSpec, options: BackendOptions) -> dict[str, Any]:
        # The model's bytes through the shared file (the child checks their digest): the file on disk
        # may have moved since this process read it.
        self._file.write(spec.content)
        self._file.flush()
        request = {
            "model_bytes": len(spec.content),
            "sha256": spec.sha256,
            "task": spec.options.task.value if spec.options.task else None,
            "input_shapes": [[k, list(v)] for k, v in spec.options.input_shapes],  # (inputs_file: the feeder's, here)
            "precision": str(options.precision),
            "threads": options.cpu_threads,
            "allow_software": options.allow_software,
            "wait_hint": options.wait_hint,
        }
        wire.send_json(self._request, wire.OP_OPEN, request)
        ready, _, _ = select.select([self._reply], [], [], OPEN_TIMEOUT_S)
        if not ready:  # a driver that hangs compiling: the child goes, this process goes on
            self._proc.kill()
            raise BackendUnavailable(f"the GPU process did not open the model within {OPEN_TIMEOUT_S:g} s")
        try:
            op = wire.read_exact(self._reply, 1)[0]
            answer = wire.read_json(self._reply)
        except EOFError:
            raise BackendUnavailable(f"the GPU process ended while opening the model ({self._ended()})") from None
        if op == wire.REPLY_ERROR:
            raise (ModelError if answer["kind"] == "model" else BackendUnavailable)(answer["message"])
        if op != wire.REPLY_READY:
            raise BackendUnavailable(f"the GPU process answered {op:#x} to opening the model")
        self.layout = wire.SlotLayout.from_dict(answer["layout"]) if answer["layout"] else None
        if self.layout is not None:
            self._shared = mmap.mmap(self._file.fileno(), self.layout.size)
            self._slots = self.layout.views(self._shared)
        report: dict[str, Any] = answer["report"]
        return report

    @property
    def depth(self) -> int:
        """How many inputs `submit` may have in the child at once (0: none; run_all only)."""
        return self.layout.slots if self.layout is not None else 0

    def in_flight(self) -> int:
        return len(self._flight)

    def submit(self, input_tensor: np.ndarray) -> None:
        """Queue one input (the spec's dtype and size) in the next free slot; `collect` answers in order."""
        if self.layout is None or self._shared is None:
            raise ModelError("this model runs through run_all in its GPU process, not through slots")
        if len(self._flight) >= self.layout.slots:
            raise RuntimeError("every slot is in flight: collect first")
        tensor = np.ascontiguousarray(input_tensor)
        if tensor.nbytes != self.layout.in_bytes:
            raise ModelError(f"the GPU session cannot take an input of {tensor.nbytes} bytes ({self.layout.in_bytes})")
        k = self._next
        self._next = (k + 1) % self.layout.slots
        copy_holding_gil(self._slots.inputs[k], tensor)
        with self._child():
            os.write(self._request, bytes([k]))
        self._flight.append(k)

    def collect(self) -> ChildRun:
        """The oldest submitted input's output (a new array) and the child's stamps; waits for it."""
        if not self._flight:
            raise RuntimeError("nothing submitted to collect")
        k = self._flight.popleft()
        with self._child():
            got = wire.read_exact(self._reply, 1)[0]
            if got == wire.REPLY_ERROR:
                self._failed()
        if got != k:
            raise GpuProcessRunFailed(f"the GPU process answered slot {got} for slot {k}")
        wall, own, process = (float(v) for v in self._slots.stamps[k])
        self._last_cpu = process
        return ChildRun(self._slots.outputs[k].copy(), wall, own, process)

    def _discard_queued(self) -> None:
        """One run at a time from here: answers still owed for queued inputs are read and dropped."""
        while self._flight:
            self.collect()

    def run(self, input_tensor: np.ndarray) -> np.ndarray:
        if self.layout is None:
            raise ModelError("this model runs through run_all")
        self._discard_queued()
        self.submit(input_tensor)
        return self.collect().output

    def run_all(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        self._discard_queued()
        with self._child():
            wire.send(self._request, wire.OP_RUN_ALL, wire.arrays_bytes(inputs))
            got = wire.read_exact(self._reply, 1)[0]
            if got == wire.REPLY_ERROR:
                self._failed()
            if got != wire.REPLY_OUTPUTS:
                raise GpuProcessRunFailed(f"the GPU process answered {got:#x} to a run")
            outputs = wire.bytes_arrays(wire.read_message(self._reply))
        self._last_cpu = None
        return outputs

    def last_child_cpu_ms(self) -> float | None:
        """The child process's CPU on the last slot run (RunsInAChild); None after run_all or before a run."""
        return self._last_cpu

    def _failed(self) -> None:
        """After REPLY_ERROR: read why, then the answers still owed for the other queued inputs (their
        outputs are dropped with the failed one's), so the next run starts in step; raise."""
        answer = wire.read_json(self._reply)
        for _ in range(len(self._flight)):
            if wire.read_exact(self._reply, 1)[0] == wire.REPLY_ERROR:
                wire.read_json(self._reply)
        self._flight.clear()
        raise (ModelError if answer["kind"] == "model" else GpuProcessRunFailed)(answer["message"])

    @contextmanager
    def _child(self) -> Iterator[None]:
        """Talking to the child: one that has gone (its pipe closed or broken) is a failed run, saying how
        it ended; nothing queued will be answered."""
        try:
            yield
        except (EOFError, OSError):
            self._flight.clear()
            raise GpuProcessRunFailed(f"the GPU process ended mid-run ({self._ended()})") from None

    def _ended(self) -> str:
        try:
            code = self._proc.wait(5)
        except subprocess.TimeoutExpired:
            return "it stopped answering"
        how = f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        said = self._last_log_line()
        return f"{how}: {said}" if said else how

    def _last_log_line(self) -> str:
        try:
            self._log.seek(0, os.SEEK_END)
            self._log.seek(max(0, self._log.tell() - 4096))
            lines = [line.strip() for line in self._log.read().decode(errors="replace").splitlines()]
        except (OSError, ValueError):
            return ""
        return next((line for line in reversed(lines) if line), "")

    def _close_fds(self) -> None:
        for fd in (self._request, self._reply):
            try:
                os.close(fd)
            except OSError:
                pass
        self._request = self._reply = -1

    def close(self) -> None:
        if self._request >= 0:
            try:
                os.write(self._request, bytes([wire.OP_CLOSE]))
            except OSError:
                pass
        proc = getattr(self, "_proc", None)
        if proc is not None and proc.poll() is None:
            try:
                proc.wait(_CLOSE_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._close_fds()
        if self._shared is not None:
            del self._slots  # its arrays export the map's buffer
            self._shared.close()
            self._shared = None
        self._file.close()
        self._log.close()
