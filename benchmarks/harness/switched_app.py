"""`python -m benchmarks.harness.switched_app MS ARGS...`: the app's command line (`python -m app ARGS`)
with CPython's GIL switch interval set to MS milliseconds first.

An investigation knob, not an app option: the window sets 0.5 ms (app/ui/app.py) because its GUI thread
runs Python when an inference ends; headless commands keep CPython's 5 ms. This asks whether the
inference thread of an unpaced bench on a fast accelerator waits for the GIL at the end of each run.
"""

import sys

from app.cli.main import main

if __name__ == "__main__":
    sys.setswitchinterval(float(sys.argv[1]) / 1000)
    sys.exit(main(sys.argv[2:]))
