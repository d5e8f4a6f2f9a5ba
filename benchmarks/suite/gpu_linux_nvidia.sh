#!/usr/bin/env bash
# The GPU figures of docs/performance.md: run on a Linux machine with an NVIDIA GPU, from the
# repo root (`bash benchmarks/suite/gpu_linux_nvidia.sh`), with ai-edge-litert importable and the
# Vulkan loader installed. OUT names the folder for the results (default ./gpu-results).
#   PYTHONPATH       where the wheels are unpacked, when they are not installed (`python -m` puts the
#                    repo root before it, so `app` and `benchmarks` are this checkout's)
#   VK_DRIVER_FILES  the NVIDIA Vulkan ICD JSON of the installed driver, if the loader does not find it
set -u
OUT="${OUT:-gpu-results}"
mkdir -p "$OUT"
PY="${PYTHON:-python3}"
{
    echo "== machine"; nvidia-smi -L; ldconfig -p | grep -i vulkan; "$PY" --version
    echo "== delegate-scope classify --delegate gpu --debug (native log)"
    "$PY" -m app classify --delegate gpu --debug --top-k 1 tests/data/photos/coffee.jpg 2>&1
} > "$OUT/logs.txt" 2>&1
"$PY" -m app delegates --json > "$OUT/delegates.json" 2>> "$OUT/logs.txt"
for m in efficientnet_lite0 efficientnet_lite0_int8; do
    "$PY" -m app classify --model "$m" --delegate gpu --json tests/data/photos/*.jpg > "$OUT/gpu_$m.json" 2>> "$OUT/logs.txt"
done
PYTHONUNBUFFERED=1 "$PY" -m benchmarks.suite.delegates --runs 300 --json "$OUT/bench.json" > "$OUT/bench.md" 2>> "$OUT/logs.txt"
for m in efficientnet_lite0 efficientnet_lite0_int8; do
    echo "== LiteRT's own benchmark tool, $m, --use_gpu" >> "$OUT/logs.txt"
    "$PY" -m ai_edge_litert.tools.benchmark_litert_model --model "models/$m.tflite" --use_gpu --num_runs 300 \
        --result_json "$OUT/litert_$m.json" >> "$OUT/logs.txt" 2>&1
    cat "$OUT/litert_$m.json" >> "$OUT/logs.txt"; rm -f "$OUT/litert_$m.json"
done
cat "$OUT/bench.md"
