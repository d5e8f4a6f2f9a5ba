"""The child of benchmarks/investigations/gpu_overlap.py's `child` legs: one GPU session (the app's
LiteRT C wrapper) in a process of its own, fed through a shared-memory file two inputs deep.

Protocol: the parent writes input k (k = 0, 1, 0, ...) into its slot and one byte k down the request
pipe; the child copies it into the session's input buffer, runs, copies the output into slot k's output
and writes k back. The parent keeps two requests in flight, so the child finds the next input waiting.

    python -m benchmarks.investigations.gpu_overlap_child MODEL PRECISION SHM_FD REQUEST_FD DONE_FD IN_BYTES OUT_BYTES
"""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
import tempfile

import numpy as np

SLOTS = 2


def _views(buffer: mmap.mmap, in_bytes: int, out_bytes: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
    ins = [np.frombuffer(buffer, np.uint8, in_bytes, k * in_bytes) for k in range(SLOTS)]
    outs = [np.frombuffer(buffer, np.uint8, out_bytes, SLOTS * in_bytes + k * out_bytes) for k in range(SLOTS)]
    return ins, outs


class Runner:
    """The parent's side: `once(x, out)` posts x and, with two in flight, collects the oldest into out."""

    def __init__(self, model: str, precision: str, in_bytes: int, out_bytes: int) -> None:
        self._file = tempfile.NamedTemporaryFile(dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
        self._file.truncate(SLOTS * (in_bytes + out_bytes))
        self._map = mmap.mmap(self._file.fileno(), SLOTS * (in_bytes + out_bytes))
        self._ins, self._outs = _views(self._map, in_bytes, out_bytes)
        # Pipes of their own: the runtime prints to stdout.
        child_req, self._req = os.pipe()
        self._done, child_done = os.pipe()
        fds = [self._file.fileno(), child_req, child_done]
        self._proc = subprocess.Popen(
            [sys.executable, "-m", __spec__.name, model, precision, *map(str, fds), str(in_bytes), str(out_bytes)],
            pass_fds=fds,
        )  # fmt: skip
        os.close(child_req)
        os.close(child_done)
        if os.read(self._done, 1) != b"R":
            raise RuntimeError("the GPU child did not start")
        self._next = 0
        self._flight: list[int] = []

    def once(self, x: np.ndarray, out: np.ndarray) -> None:
        k = self._next
        self._next = (k + 1) % SLOTS
        if len(self._flight) == SLOTS:
            self._collect(out)
        memoryview(self._ins[k])[:] = memoryview(x).cast("B")
        os.write(self._req, bytes([k]))
        self._flight.append(k)

    def _collect(self, out: np.ndarray) -> None:
        k = self._flight.pop(0)
        got = os.read(self._done, 1)
        if got != bytes([k]):
            raise RuntimeError(f"the GPU child answered {got!r} for slot {k}")
        memoryview(out).cast("B")[:] = memoryview(self._outs[k])

    def drain(self, out: np.ndarray) -> None:
        while self._flight:
            self._collect(out)

    def close(self) -> None:
        os.close(self._req)
        self._proc.wait(10)
        del self._ins, self._outs
        self._map.close()
        self._file.close()
        os.close(self._done)


def main() -> int:
    model, precision = sys.argv[1], sys.argv[2]
    fd, req, done, in_bytes, out_bytes = map(int, sys.argv[3:8])
    from app.backends.litert_c import HW_CPU, HW_GPU, NativeModel
    from app.model.spec import load_model_spec

    m = NativeModel(load_model_spec(model).content, HW_GPU | HW_CPU, 1, profiling=False, gpu_precision=precision)
    buffer = mmap.mmap(fd, SLOTS * (in_bytes + out_bytes))
    ins, outs = _views(buffer, in_bytes, out_bytes)
    typed_in = [a.view(np.float32) for a in ins]
    typed_out = [a.view(np.float32) for a in outs]
    os.write(done, b"R")
    while (got := os.read(req, 1)):
        k = got[0]
        m.run_tensor(typed_in[k], typed_out[k])
        os.write(done, got)
    m.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
