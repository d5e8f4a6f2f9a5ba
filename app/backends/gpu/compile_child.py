"""`python -m app.backends.gpu.compile_child PRECISION SHAPES_JSON < MODEL`: compile the model read from stdin
with LiteRT's GPU accelerator once, then exit.

Run in a child process by app.backends.gpu.backend before a model that is not bundled is opened on the
GPU: LiteRT's GPU delegate ends the process on some graphs (an ABSL_CHECK while it builds its graph), and
that must only end this child. Exit status 0 whether or not the model compiled: the session, opened in
the app's process afterwards, says why not; a signal (SIGABRT) is what the parent looks for.
"""

from __future__ import annotations

import json
import sys

from app.backends.litert_c import HW_CPU, HW_GPU, NativeModel
from app.errors import DelegateScopeError


def main(argv: list[str]) -> int:
    precision, shapes = argv[0], [tuple(s) for s in json.loads(argv[1])]
    content = sys.stdin.buffer.read()
    try:
        model = NativeModel(
            content, HW_GPU | HW_CPU, 1, profiling=False, gpu_precision=precision, input_shapes=shapes,
            capture_log=False,
        )  # fmt: skip
    except DelegateScopeError:
        return 0
    model.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
