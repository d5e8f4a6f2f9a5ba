"""The child side of a GPU session in a process of its own (app/backends/gpu/process_session.py, the
parent's side and the protocol). It opens the same GpuSession the app opens in-process and then only
runs: read a slot number, run that slot's input, write the output and its stamps, write the number
back. No other Python thread shares its GIL, so when a run returns the next starts at once.

    python -m app.backends.gpu.process_child SHARED_FD REQUEST_FD REPLY_FD
"""

from __future__ import annotations

import hashlib
import mmap
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from app.backends.gpu import process_protocol as wire
from app.backends.gpu.backend import GpuRunFailed, GpuSession
from app.errors import BackendUnavailable, ModelError
from app.model.spec import ModelOptions, ModelSpec, load_model_spec
from app.model.task import Task


def _error(kind: str, exc: BaseException) -> dict[str, str]:
    return {"kind": kind, "message": str(exc)}


def _spec(shared_fd: int, request: dict[str, Any]) -> ModelSpec:
    """The parent's model, from the bytes it wrote into the shared file, read with the parent's options."""
    content = os.pread(shared_fd, int(request["model_bytes"]), 0)
    if hashlib.sha256(content).hexdigest() != request["sha256"]:
        raise ModelError("the model the GPU process read is not the one this process holds")
    task = Task(request["task"]) if request["task"] else None
    shapes = tuple((str(k), tuple(int(d) for d in v)) for k, v in request["input_shapes"])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "model.tflite"
        path.write_bytes(content)
        return load_model_spec(path, options=ModelOptions(task=task, input_shapes=shapes))


def serve(shared_fd: int, request: int, reply: int) -> int:
    """Open, then run what the parent asks until it closes the pipe or says OP_CLOSE."""
    op = wire.read_exact(request, 1)[0]
    if op != wire.OP_OPEN:
        return 2
    asked = wire.read_json(request)
    try:
        spec = _spec(shared_fd, asked)
        session = GpuSession(spec, asked["precision"], asked["threads"], asked["allow_software"], asked["wait_hint"])
    except BackendUnavailable as exc:
        wire.send_json(reply, wire.REPLY_ERROR, _error("unavailable", exc))
        return 0
    except ModelError as exc:
        wire.send_json(reply, wire.REPLY_ERROR, _error("model", exc))
        return 0
    layout = session.slot_layout()
    slots = wire.SlotViews([], [], [])
    if layout is not None:  # one input, the primary output first: runs go through the shared slots
        os.ftruncate(shared_fd, layout.size)
        slots = layout.views(mmap.mmap(shared_fd, layout.size))
    ready = {"report": session.report.to_dict(), "layout": layout and layout.to_dict()}
    wire.send_json(reply, wire.REPLY_READY, ready)
    while True:
        got = os.read(request, 1)
        if not got or got[0] == wire.OP_CLOSE:
            break
        k = got[0]
        try:
            if k == wire.OP_RUN_ALL:
                arrays = wire.bytes_arrays(wire.read_message(request))
                wire.send(reply, wire.REPLY_OUTPUTS, wire.arrays_bytes(session.run_all(arrays)))
                continue
            if k >= len(slots.inputs):
                raise ValueError(f"no slot {k} for this model")
            wall, own, process = time.perf_counter_ns(), time.thread_time_ns(), time.process_time_ns()
            session.run_into(slots.inputs[k], slots.outputs[k])
            slots.stamps[k][:] = (
                (time.perf_counter_ns() - wall) / 1e6,
                (time.thread_time_ns() - own) / 1e6,
                (time.process_time_ns() - process) / 1e6,
            )
        except GpuRunFailed as exc:
            wire.send_json(reply, wire.REPLY_ERROR, _error("run", exc))
            continue
        except (ModelError, ValueError) as exc:
            wire.send_json(reply, wire.REPLY_ERROR, _error("model", exc))
            continue
        os.write(reply, got)
    session.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    shared_fd, request, reply = (int(a) for a in args)
    np.seterr(all="ignore")
    return serve(shared_fd, request, reply)


if __name__ == "__main__":
    sys.exit(main())
