"""What the benchmarks share; each module imports only what it needs (children import them too).

- paths: where the models, photos, clip and fixtures are.
- stats: medians, p95, per-round ratios.
- rounds: alternated and rotated rounds; rounds gated on the rest of the machine's load.
- load: the CPU other processes used during a run (OtherLoad).
- procfs: per-process and per-thread CPU, context switches and runnable waits from /proc; what soaks watch.
- loops: the raw LiteRT loops the pipeline is compared with, and a timed loop.
- spinner: a thread that runs Python flat out (holds the GIL).
- pipeline: the app's Pipeline run in-process for n inferences.
- children: child processes (`python -m benchmarks...` modules, `python -m app` of a checkout), JSON out.
- xvfb: running under a virtual X server.
"""
