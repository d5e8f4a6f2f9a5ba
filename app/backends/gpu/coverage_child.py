"""`python -m app.backends.gpu.coverage_child MODEL`: open MODEL on the GPU once, print its coverage as one JSON line.

Run in a child process by `app.tasks.inspect.gpu_coverage_of`, so a GPU driver that
crashes or hangs on the user's model can only take this process down. Software renderers
are allowed here and flagged: coverage is what the accelerator takes, wherever it runs.
"""

from __future__ import annotations

import json
import sys

from app.backends.gpu.backend import GpuSession
from app.backends.options import GpuPrecision
from app.errors import DelegateScopeError
from app.model.spec import load_model_spec


def main(argv: list[str]) -> int:
    try:
        session = GpuSession(load_model_spec(argv[0]), GpuPrecision.FP16, 1, allow_software=True)
    except DelegateScopeError as exc:
        print(json.dumps({"ok": False, "reason": str(exc)}))
        return 0
    r = session.report
    coverage = r.coverage.to_dict() if r.coverage else None
    session.close()
    print(json.dumps({"ok": True, "adapter": r.adapter, "software": r.software, "coverage": coverage}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
