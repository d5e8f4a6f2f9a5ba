"""`python -m app.backends.gpu.probe`: open the default model on the GPU once and print one JSON line.

Run in a child process by app.backends.gpu.backend.probe(), so a broken driver can only kill the probe.
"""

from __future__ import annotations

import json
import sys

from app.backends.gpu.backend import GpuSession
from app.backends.gpu.vulkan_devices import list_devices
from app.backends.options import GpuPrecision
from app.errors import DelegateScopeError
from app.model.spec import load_model_spec


def main() -> int:
    devices, problem = list_devices()
    result: dict[str, object] = {"devices": [d.describe() for d in devices], "vulkan_problem": problem}
    try:
        session = GpuSession(load_model_spec(), GpuPrecision.FP16, 1, allow_software=True)
    except DelegateScopeError as exc:
        result.update(ok=False, reason=str(exc))
    else:
        r = session.report
        result.update(
            ok=True,
            adapter=r.adapter,
            software=r.software,
            fully_accelerated=r.fully_accelerated,
            init_ms=round(r.init_ms, 1),
        )
        session.close()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
