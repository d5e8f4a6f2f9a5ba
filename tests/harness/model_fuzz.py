"""Model-file fuzzing: deterministic mutations of real models, run through the app's own load
path (parse -> task -> LiteRT CPU session -> one inference -> scores, or the task's decoding) in a worker
process, so that a native crash or hang is observed from outside instead of taking us down.

Used by tests/test_fuzz_models.py (a fixed, seeded few hundred cases in CI) and
benchmarks/fuzz/models.py (thousands). Outcomes:
  model_error  the app refused the file with a clear one-line ModelError (the contract)
  ok           it loaded and ran: a classifier's scores finite and of its class count; any other
               model's outputs decoded (non-finite values counted and shown, as the app shows them)
  nonfinite    it ran but produced NaN/Inf scores (a silent wrong answer unless flagged)
  exception    any other Python exception (would be a traceback to the user)
  crash        the worker died by a signal (native crash)
  hang         no answer within the time limit
"""

from __future__ import annotations

import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

MUTATIONS = ("bitflip", "bytes", "truncate", "size_field", "zero_region", "append", "shape", "dtype")


@dataclass(frozen=True)
class Case:
    index: int
    seed_path: str
    mutation: str
    rng_seed: int

    def to_json(self) -> str:
        return json.dumps(self.__dict__)


def mutate(data: bytes, mutation: str, rng: random.Random) -> bytes:
    """One deterministic mutation of a flatbuffer (same rng seed -> same bytes)."""
    buf = bytearray(data)
    n = len(buf)
    if mutation == "bitflip":
        for _ in range(rng.randint(1, 16)):
            i = rng.randrange(n)
            buf[i] ^= 1 << rng.randrange(8)
    elif mutation == "bytes":
        start = rng.randrange(n)
        length = rng.randint(1, 64)
        buf[start : start + length] = bytes(rng.randrange(256) for _ in range(min(length, n - start)))
    elif mutation == "truncate":
        return bytes(buf[: rng.randrange(0, n)])
    elif mutation == "size_field":
        # Overwrite an aligned uint32 in the flatbuffer's tables/vectors area with a huge or
        # off-by-some value: vector lengths, offsets and tensor dims live in such fields.
        head = min(n - 4, 1 << 16) if rng.random() < 0.7 else n - 4
        i = rng.randrange(0, max(1, head)) & ~3
        old = struct.unpack_from("<I", buf, i)[0]
        new = rng.choice([0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, old + rng.randint(1, 64), old * 1024 & 0xFFFFFFFF, 0])
        struct.pack_into("<I", buf, i, new)
    elif mutation == "zero_region":
        start = rng.randrange(n)
        buf[start : start + rng.randint(4, 4096)] = bytes(min(4096, n - start))
    elif mutation == "append":
        buf += bytes(rng.randrange(256) for _ in range(rng.randint(1, 256)))
    elif mutation in ("shape", "dtype"):
        return _structural(bytes(buf), mutation, rng)
    return bytes(buf)


def _structural(data: bytes, mutation: str, rng: random.Random) -> bytes:
    """A valid flatbuffer with a wrong shape (zero-sized, huge, negative) or tensor type."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as fb

    model = fb.ModelT.InitFromObj(fb.Model.GetRootAs(data, 0))
    sg = model.subgraphs[0]
    tensor = sg.tensors[rng.randrange(len(sg.tensors))]
    if mutation == "shape":
        dims = [int(d) for d in tensor.shape] if tensor.shape is not None and len(tensor.shape) else [1]  # a scalar too
        j = rng.randrange(max(1, len(dims)))
        dims[j] = rng.choice([0, -1, 1 << 30, 65536, dims[j] + 1])
        tensor.shape = dims
    else:
        tensor.type = rng.choice([0, 1, 2, 3, 4, 6, 7, 9, 10, 16, 17, 99])
    builder = flatbuffers.Builder(len(data) + 1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


def cases(seeds: list[Path], count: int, seed: int) -> list[Case]:
    rng = random.Random(seed)
    return [Case(i, str(rng.choice(seeds)), rng.choice(MUTATIONS), rng.randrange(1 << 30)) for i in range(count)]


# ---- worker: runs in a child process ------------------------------------------------------------


def _run_case(case: Case, image: Path, tmp: Path) -> dict:
    import numpy as np

    from app.backends import open_session
    from app.errors import DelegateScopeError, ModelError
    from app.model.decode import TaskDecoder
    from app.model.feed import InputFeeder
    from app.model.image_files import read_image
    from app.model.postprocess import Postprocessor
    from app.model.preprocess import CropBox, Preprocessor
    from app.model.spec import load_model_spec

    data = mutate(Path(case.seed_path).read_bytes(), case.mutation, random.Random(case.rng_seed))
    path = tmp / f"case{case.index}.tflite"
    path.write_bytes(data)
    task = None
    try:
        spec = load_model_spec(path)
        session = open_session(spec, "cpu", {"threads": 1})
        try:
            frame = read_image(image)
            pre = Preprocessor(spec) if spec.image_input is not None else None
            if spec.is_image_classifier:
                assert pre is not None
                scores = Postprocessor(spec).scores(session.run(pre(frame)))
            else:  # any other model: every input (frame + feeder), every output, its task's decoder
                outputs = session.run_all(InputFeeder(spec).inputs(pre(frame) if pre else None))
                height, width = frame.shape[:2]
                crop = pre.crop_box(width, height) if pre else CropBox(0, 0, width, height)
                task = TaskDecoder(spec).decode(outputs, crop, (width, height))
        finally:
            session.close()
    except ModelError as exc:
        return {"outcome": "model_error", "message": str(exc).splitlines()[0][:300]}
    except DelegateScopeError as exc:  # another typed one-line error (an input that cannot be fed: exit 4)
        return {"outcome": "model_error", "message": str(exc).splitlines()[0][:300]}
    except Exception as exc:  # the contract says this must not happen: report it
        return {"outcome": "exception", "message": f"{type(exc).__name__}: {exc}"[:300]}
    finally:
        path.unlink(missing_ok=True)
    if task is not None:
        # Non-finite values of a non-classifier are counted with its outputs (OutputStats.non_finite) and shown.
        shown = sum(o.non_finite for o in task.outputs)
        return {"outcome": "ok", "message": f"{spec.kind.value}: {task.count()} result(s), {shown} non-finite shown"}
    if scores.size != spec.classes or not np.isfinite(scores).all():
        bad = int((~np.isfinite(scores)).sum())
        return {"outcome": "nonfinite", "message": f"{scores.size} scores for {spec.classes} classes, {bad} not finite"}
    return {"outcome": "ok", "message": f"top-1 index {int(np.argmax(scores))}", "top1": int(np.argmax(scores))}


def worker_main(image: str) -> None:
    """Read cases (JSON lines) on stdin, answer one JSON line each on stdout."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # native logs on fd 1 must not corrupt the answers
    with tempfile.TemporaryDirectory() as tmp:
        for line in sys.stdin:
            case = Case(**json.loads(line))
            out.write(json.dumps({"index": case.index, "started": True}) + "\n")
            started = time.perf_counter()
            result = _run_case(case, Path(image), Path(tmp))
            result.update(index=case.index, seconds=time.perf_counter() - started)
            out.write(json.dumps(result) + "\n")


# ---- driver: runs in the test / benchmark process ----------------------------------------------


def run_cases(all_cases: list[Case], image: Path, timeout_s: float = 30.0) -> list[dict]:
    """Run every case in worker processes; a crash or hang costs the worker, not the run."""
    import queue
    import threading

    results: list[dict] = []
    pending = list(all_cases)
    while pending:
        proc = subprocess.Popen(
            [sys.executable, "-c", f"from tests.harness.model_fuzz import worker_main; worker_main({str(image)!r})"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=Path(__file__).resolve().parents[2],
        )
        assert proc.stdin and proc.stdout
        lines: queue.Queue[str] = queue.Queue()  # a reader thread: no select() on a buffered pipe

        def read(stream=proc.stdout, sink=lines) -> None:
            for line in stream:
                sink.put(line)
            sink.put("")  # EOF: the worker died or exited

        threading.Thread(target=read, daemon=True).start()
        while pending:
            case = pending[0]
            proc.stdin.write(case.to_json() + "\n")
            proc.stdin.flush()
            answer = None
            deadline = time.monotonic() + timeout_s
            while answer is None:
                try:
                    line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    proc.kill()
                    answer = {"outcome": "hang", "message": f"no answer in {timeout_s:.0f} s"}
                    break
                if not line:
                    code = proc.wait()
                    answer = {"outcome": "crash", "message": f"worker exit {code}"}
                    break
                msg = json.loads(line)
                if "outcome" in msg:
                    answer = msg
            pending.pop(0)
            answer.update(index=case.index, seed=Path(case.seed_path).name, mutation=case.mutation)
            results.append(answer)
            if answer["outcome"] in ("crash", "hang"):
                break  # start a fresh worker for the rest
        try:
            proc.stdin.close()
        except OSError:
            pass
        proc.kill()
        proc.wait()
    return results
