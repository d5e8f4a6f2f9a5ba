"""Per-op profiles: which ops of a model cost what on each delegate (`delegate-scope profile`, the Ops view).

CPU: LiteRT's own profiler (`litert_c`, `cpu`). GPU: the whole run measured, the nodes left on the CPU
from the CPU profile, the GPU partitions by difference (`gpu`): LiteRT's WebGPU delegate implements no
profile. Core ML: MLComputePlan's per-op device and estimated cost, macOS only (`coreml_plan`).
"""
