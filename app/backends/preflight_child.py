"""Child of app/backends/preflight.py: open the model read from stdin, allocate, run once on zeros.

Exit 0 when it ran, 3 when the runtime refused it with an error; a crash is a signal the parent reads."""

from __future__ import annotations

import sys

import numpy as np


def main(argv: list[str]) -> int:
    from ai_edge_litert.interpreter import Interpreter

    content = sys.stdin.buffer.read()
    shapes = [tuple(int(d) for d in s.split("x") if d) for s in argv[0].split(";")] if argv and argv[0] else []
    try:
        interpreter = Interpreter(model_content=content, num_threads=1)
        details = interpreter.get_input_details()
        for detail, shape in zip(details, shapes, strict=False):
            if tuple(detail["shape"]) != shape:
                interpreter.resize_tensor_input(detail["index"], list(shape))
        interpreter.allocate_tensors()
        for detail in interpreter.get_input_details():
            interpreter.set_tensor(detail["index"], np.zeros(detail["shape"], detail["dtype"]))
        interpreter.invoke()
        for detail in interpreter.get_output_details():
            interpreter.get_tensor(detail["index"])
        del interpreter  # destruction is where a corrupted heap shows
    except Exception:  # refused: the parent's own open says why, in its words
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
