"""Power state and energy per inference of the model alone, paced and unpaced, through the app's own
counters (app/system/power_counters.py, app/metrics/energy.py): does a device paced at the camera's
rate stay at its idle clock, and what does an inference cost in energy on each backend?

For each configuration, in one process: open the session, 20 warm-up runs, then run for --seconds
either back to back ("unpaced") or one run every 1/--fps s ("paced"), while a thread reads every
counter every 0.1 s. Before the first configuration the machine idles --idle-seconds: the idle
power and clock that "above idle" and "its idle clock" refer to.

    python -m benchmarks.investigations.power_state [--model efficientnet_lite0] [--seconds 8]
        [--fps 30] [--idle-seconds 4] [--config gpu:fp16 gpu:fp32 cpu:1 cpu:16]

Run it on a machine with an NVIDIA GPU and the `nvidia` extra (NVML); elsewhere the GPU columns say
why they are empty (each figure is a value or its reason, never a guess).
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import numpy as np

from app.backends import open_session
from app.metrics.energy import PowerFigures, clock_state_sentence, power_figures
from app.model.spec import load_model_spec
from app.system.power_counters import PowerCounters, PowerReading

SAMPLE_EVERY_S = 0.1


class Sampler:
    def __init__(self, counters: PowerCounters) -> None:
        self.counters = counters
        self.readings: list[PowerReading] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY_S):
            self.readings.append(self.counters.read(time.monotonic()))

    def between(self, t0: float, t1: float) -> list[PowerReading]:
        return [r for r in list(self.readings) if t0 <= r.t <= t1]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def run_config(model: str, config: str, seconds: float, fps: float | None, sampler: Sampler) -> tuple[dict, list]:
    delegate, _, arg = config.partition(":")
    options: dict[str, object] = {"allow_software": True}
    if delegate == "gpu":
        options["precision"] = arg or "fp16"
    else:
        options["threads"] = int(arg or 1)
    spec = load_model_spec(model)
    session = open_session(spec, delegate, options, fallback=False)
    try:
        x = np.zeros(spec.input.shape, spec.input.dtype)
        for _ in range(20):
            session.run(x)
        times = []
        period = 1.0 / fps if fps else 0.0
        first = sampler.counters.read(time.monotonic())  # an exact reading at each end
        start = time.monotonic()
        next_at = start
        while time.monotonic() - start < seconds:
            if period:
                delay = next_at - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                next_at += period
            t0 = time.perf_counter()
            session.run(x)
            times.append((time.perf_counter() - t0) * 1e3)
        end = time.monotonic()
        last = sampler.counters.read(end)
        run = [first, *sampler.between(start, end), last]
        return {"runs": len(times), "rate": len(times) / (end - start), "p50_ms": statistics.median(times),
                "used": session.report.used, "accelerator": session.report.accelerator}, run  # fmt: skip
    finally:
        session.close()


def fmt(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="efficientnet_lite0")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--fps", type=float, default=30.0)
    parser.add_argument("--idle-seconds", type=float, default=4.0)
    parser.add_argument("--config", nargs="+", default=["gpu:fp16", "gpu:fp32", "cpu:1", "cpu:16"])
    args = parser.parse_args()
    counters = PowerCounters(gpu=True)
    sampler = Sampler(counters)
    time.sleep(args.idle_seconds)
    idle = sampler.between(0.0, time.monotonic())
    print(f"idle {args.idle_seconds:.0f} s: {len(idle)} readings; last: {idle[-1] if idle else None}")
    print("\n| config | pace | used | runs/s | p50 ms | SM MHz (idle) | memory MHz | W (idle) | device mJ/inf | "
          "above idle | energy from | CPU MHz | CPU package mJ/inf |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    figures: dict[tuple[str, str], PowerFigures] = {}
    for config in args.config:
        for pace, fps in (("unpaced", None), (f"{args.fps:.0f} fps", args.fps)):
            try:
                row, run = run_config(args.model, config, args.seconds, fps, sampler)
            except Exception as exc:  # a configuration this machine cannot run is a row, not the end
                print(f"| {config} | {pace} | not run: {exc} |")
                continue
            f = power_figures(idle, run, row["runs"])
            cpu_mj = fmt(f.cpu_package_mj_per_inference, 2) if f.cpu_package_energy_j is not None else None
            figures[(config, pace)] = f
            print(f"| {config} | {pace} | {row['used']} | {row['rate']:.1f} | {row['p50_ms']:.3f} | "
                  f"{fmt(f.sm_clock_mhz, 0)} ({fmt(f.idle_sm_clock_mhz, 0)}) | {fmt(f.memory_clock_mhz, 0)} | "
                  f"{fmt(f.power_w)} ({fmt(f.idle_power_w)}) | {fmt(f.gpu_mj_per_inference, 2)} | "
                  f"{fmt(f.gpu_mj_per_inference_above_idle, 2)} | {f.gpu_energy_source or f.gpu_reason} | "
                  f"{fmt(f.cpu_mhz, 0) if f.cpu_mhz else f.cpu_mhz_reason} | "
                  f"{cpu_mj or f.cpu_energy_reason} |")  # fmt: skip
    sampler.stop()
    counters.close()
    print()
    for config in args.config:
        paced, unpaced = figures.get((config, f"{args.fps:.0f} fps")), figures.get((config, "unpaced"))
        if paced and unpaced:
            sentence = clock_state_sentence(f"{config} at {args.fps:.0f} fps", paced, "unpaced", unpaced)
            print(f"{config}: {sentence or 'the same clocks paced and unpaced (or no clock readable)'}")


if __name__ == "__main__":
    main()
