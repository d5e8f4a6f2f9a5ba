"""Can the inference thread's own Python overlap the GPU's work? One process, one GPU session (the app's
LiteRT C wrapper), loops interleaved round by round, each `--runs` runs of one fixed input:

- alone: write, run, read, back to back (what `capture_keeps_up`'s model alone does);
- serial: write, run, read, then W us of Python holding the GIL (the pipeline's cycle today: the
  frame's hand-off, the next frame's take, the meters happen after the output is read);
- overlap: write, run, W us of Python, read (the read's lock waits for the GPU: does the Python
  fit in that wait?);
- async / async+W: LiteRtRunCompiledModelAsync (does this accelerator run asynchronously at all:
  events on the outputs?), the Python, then the read (its lock waits on the output's event);
- alone+gil: alone while another thread of the process runs W us of Python then sleeps 2W us, again
  and again (the pipeline's other threads: capture, preprocessing, results): what taking the GIL back
  after each run and read costs;
- alone+memory: alone while another thread copies 16 MB arrays with numpy (the GIL released: the
  decoding threads' memory traffic, without the GIL);
- held+gil: as alone+gil, the output's lock (its wait for the GPU) made keeping the GIL (PyDLL), so a
  cycle gives the GIL up once (the run) instead of twice;
- child / child+gil: the app's GPU session in a process of its own (app/backends/gpu/process_session.py)
  queued two deep (the child runs the next input while this process reads the last output); +gil
  with the Python thread above running in this process.

Prints a line per round and the medians; `--json` writes them. On the GPU host:

    python -m benchmarks.investigations.gpu_overlap --rounds 5 --runs 1500 --work-us 100
"""

from __future__ import annotations

import argparse
import ctypes as C
import json
import statistics
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from benchmarks.harness.loops import float_inputs


def busy(us: float) -> None:
    """Python bytecode for `us` microseconds, the GIL held throughout (as the cycle's own Python holds it)."""
    end = time.perf_counter() + us / 1e6
    while time.perf_counter() < end:
        pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {__spec__.name}", description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="efficientnet_lite0")
    parser.add_argument("--precision", default="fp16")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=1500)
    parser.add_argument("--work-us", type=float, default=100.0)
    parser.add_argument("--legs", nargs="+", help="the legs to run (default: all)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    from app.backends.litert_c import _LOCK_READ, _P, HW_CPU, HW_GPU, NativeModel, NativeRunFailed, _check, _held
    from app.model.spec import load_model_spec

    spec = load_model_spec(args.model)
    m = NativeModel(spec.content, HW_GPU | HW_CPU, 1, profiling=False, gpu_precision=args.precision)
    print(f"fully accelerated: {m.is_fully_accelerated()}", flush=True)
    lib = m._lib
    lib.LiteRtRunCompiledModelAsync.argtypes = [_P, C.c_size_t, C.c_size_t, _P, C.c_size_t, _P, C.POINTER(C.c_bool)]
    lib.LiteRtHasTensorBufferEvent.argtypes = [_P, C.POINTER(C.c_bool)]
    lib.LiteRtClearTensorBufferEvent.argtypes = [_P]
    x = float_inputs(1)[0].astype(np.float32)
    x = np.ascontiguousarray(x.reshape(-1))
    out = np.empty(1000, np.float32)
    flag = C.c_bool()
    asyncs: list[bool] = []

    def run_async() -> None:
        flag.value = True
        status = lib.LiteRtRunCompiledModelAsync(
            m._compiled, 0, len(m._inputs), m._inputs, len(m._outputs), m._outputs, C.byref(flag)
        )
        _check(status, "run the model asynchronously", NativeRunFailed)
        asyncs.append(bool(flag.value))

    def clear_events() -> None:
        has = C.c_bool()
        for handle in m._outputs:
            lib.LiteRtHasTensorBufferEvent(_P(handle), C.byref(has))
            if has.value:
                lib.LiteRtClearTensorBufferEvent(_P(handle))

    read_waits: list[float] = []

    def serial() -> None:
        m._write_input(x)
        m.run()
        t = time.perf_counter()
        m._read_output(out)
        read_waits.append(time.perf_counter() - t)
        busy(args.work_us)

    def overlap() -> None:
        m._write_input(x)
        m.run()
        busy(args.work_us)
        m._read_output(out)

    def async_w(work: float) -> Callable[[], None]:
        def once() -> None:
            m._write_input(x)
            run_async()
            if work:
                busy(work)
            m._read_output(out)
            clear_events()

        return once

    background: dict[str, Callable[[], None]] = {
        "alone+gil": lambda: (busy(args.work_us), time.sleep(2 * args.work_us / 1e6)),
        "alone+memory": lambda: np.copyto(big_b, big_a),
    }
    big_a, big_b = np.ones(4 << 20, np.float32), np.empty(4 << 20, np.float32)
    held = _held()
    held.LiteRtLockTensorBuffer.argtypes = lib.LiteRtLockTensorBuffer.argtypes
    first_out, address = _P(m._outputs[0]), _P()

    def held_read() -> None:
        m._write_input(x)
        m.run()
        _check(held.LiteRtLockTensorBuffer(first_out, C.byref(address), _LOCK_READ), "map the output")
        mapped = (C.c_uint8 * out.nbytes).from_address(address.value)
        memoryview(out).cast("B")[:] = memoryview(mapped).cast("B")
        held.LiteRtUnlockTensorBuffer(first_out)

    background["held+gil"] = background["alone+gil"]
    legs: dict[str, Callable[[], None]] = {
        "alone": lambda: m.run_tensor(x, out),
        "serial+W": serial,
        "overlap+W": overlap,
        "async": async_w(0),
        "async+W": async_w(args.work_us),
        "alone+gil": lambda: m.run_tensor(x, out),
        "alone+memory": lambda: m.run_tensor(x, out),
        "held+gil": held_read,
    }
    child = None
    if not args.legs or any(name.startswith("child") for name in args.legs):
        from app.backends.gpu.process_session import GpuProcessSession
        from app.backends.options import BackendOptions

        child = GpuProcessSession(spec, BackendOptions(threads=1, precision=args.precision, allow_software=True))

        def queued() -> None:
            assert child is not None
            if child.in_flight() == child.depth:
                out[:] = child.collect().output
            child.submit(x)

        legs["child"] = queued
        legs["child+gil"] = legs["child"]
        background["child+gil"] = background["alone+gil"]
    if args.legs:
        legs = {name: legs[name] for name in ["alone", *args.legs] if name in legs}
    reference = None
    rates: dict[str, list[float]] = {name: [] for name in legs}
    names = list(legs)
    for r in range(args.rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        for name in order:
            once = legs[name]
            quit_background = threading.Event()
            if name in background:
                job = background[name]

                def loop(job: Callable[[], None] = job, quit: threading.Event = quit_background) -> None:
                    while not quit.is_set():
                        job()

                threading.Thread(target=loop, daemon=True).start()
            for _ in range(30):
                once()
            started = time.perf_counter()
            for _ in range(args.runs):
                once()
            while child is not None and child.in_flight():
                out[:] = child.collect().output
            rates[name].append(args.runs / (time.perf_counter() - started))
            quit_background.set()
            if reference is None:
                reference = out.copy()
            elif not np.allclose(out, reference, atol=1e-3):
                print(f"{name}: the output differs from alone's", flush=True)
        alone = rates["alone"][-1]
        print(f"round {r + 1}: " + "; ".join(f"{n} {rates[n][-1]:.0f}/s ({rates[n][-1] / alone:.3f})" for n in names),
              flush=True)  # fmt: skip
    summary = {n: statistics.median(a / b for a, b in zip(rates[n], rates["alone"], strict=True)) for n in names}
    print("median ratio to alone: " + "; ".join(f"{n} {v:.3f}" for n, v in summary.items()))
    print(f"async runs that were asynchronous: {sum(asyncs)} of {len(asyncs)}")
    if read_waits:
        print(f"serial: the read (its lock's wait for the GPU) p50 {statistics.median(read_waits) * 1e3:.3f} ms")
    m.close()
    if child is not None:
        child.close()
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)}, "rates": rates,
                                         "ratios": summary, "async": sum(asyncs), "runs": len(asyncs)}))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
