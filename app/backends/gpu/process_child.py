"""The child side of a GPU session in a process of its own (app/backends/gpu/process_session.py, the
parent's side and the protocol). It opens the same GpuSession the app opens in-process and then only
runs: read a slot number, run that slot's input, write the output and its stamps, write the number
back. No other Python thread shares its GIL, so when a run returns the next starts at once.

    python -m app.backends.gpu.process_child SHARED_FD REQUEST_FD REPLY_FD
"""

from __future__ import annotations

import mmap
import os
import pickle
import sys
import time
from typing import Any

import numpy as np

from app.backends.gpu.process_protocol import (
    OP_CLOSE,
    OP_OPEN,
    OP_RUN_ALL,
    REPLY_ERROR,
    REPLY_OUTPUTS,
    REPLY_READY,
    read_exact,
    read_message,
    send,
)


def _error(kind: str, exc: BaseException) -> bytes:
    return pickle.dumps((kind, str(exc)))


def serve(shared_fd: int, request: int, reply: int) -> int:
    from app.backends.gpu.backend import GpuRunFailed, GpuSession
    from app.errors import BackendUnavailable, ModelError

    op = read_exact(request, 1)[0]
    if op != OP_OPEN:
        return 2
    spec, precision, threads, allow_software, wait_hint = pickle.loads(read_message(request))
    try:
        session = GpuSession(spec, precision, threads, allow_software, wait_hint)
    except BackendUnavailable as exc:
        send(reply, REPLY_ERROR, _error("unavailable", exc))
        return 0
    except ModelError as exc:
        send(reply, REPLY_ERROR, _error("model", exc))
        return 0
    layout = session.slot_layout()
    if layout is not None:  # one input, the primary output first: runs go through the shared slots
        os.ftruncate(shared_fd, layout.size)
        shared = mmap.mmap(shared_fd, layout.size)
        inputs = [layout.input_view(shared, k) for k in range(layout.slots)]
        outputs = [layout.output_view(shared, k) for k in range(layout.slots)]
        stamps = [layout.stamps_view(shared, k) for k in range(layout.slots)]
    send(reply, REPLY_READY, pickle.dumps((session.report, layout)))
    while True:
        got = os.read(request, 1)
        if not got or got[0] == OP_CLOSE:
            break
        k = got[0]
        try:
            if k == OP_RUN_ALL:
                arrays: list[Any] = pickle.loads(read_message(request))
                send(reply, REPLY_OUTPUTS, pickle.dumps(session.run_all(arrays)))
                continue
            wall, own, process = time.perf_counter_ns(), time.thread_time_ns(), time.process_time_ns()
            session.run_into(inputs[k], outputs[k])
            stamps[k][:] = (
                (time.perf_counter_ns() - wall) / 1e6,
                (time.thread_time_ns() - own) / 1e6,
                (time.process_time_ns() - process) / 1e6,
            )
        except GpuRunFailed as exc:
            send(reply, REPLY_ERROR, _error("run", exc))
            continue
        except (ModelError, ValueError) as exc:
            send(reply, REPLY_ERROR, _error("model", exc))
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
