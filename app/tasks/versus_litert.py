"""`bench --versus-litert`: the pipeline's inference rate against LiteRT's own `benchmark_litert_model`
(the module the ai-edge-litert wheel ships) on the same model file, threads and accelerator.

What is compared is inferences per second. The pipeline's is bench's inference rate over its measured span,
the source read unpaced and no throttle, so the inference thread takes frames as fast as it can while the
capture and results threads run beside it. The tool's is 1000 / its mean ms of `run_by_name` back to back on
input buffers filled once: the model alone, nothing fed or read between runs. Their ratio is what the
pipeline keeps of the model's own rate (1.00: all of it). Rounds interleave the two, each leg run as many
times as the pipeline measured, the order alternating from round to round so a load that drifts over the
rounds reaches both alike; the figure is the median of the per-round ratios. The run bench prints is the
first round's pipeline leg.

A run that the tool cannot repeat is refused before anything starts, naming the option (`check`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from app.errors import BackendUnavailable, UsageError
from app.metrics.resources import cpu_mark, cpu_percentages
from app.sources import kind_of, reads_on_demand
from app.system.names import Delegate, GpuPrecision
from app.tasks.bench import BenchSummary, run_bench
from app.tasks.plan import RunPlan, RunState

TOOL_MODULE = "ai_edge_litert.tools.benchmark_litert_model"
TOOL_NAME = "LiteRT's benchmark_litert_model"
DEFAULT_VERSUS_ROUNDS = 5
# The tool's accelerator flags per delegate the pipeline used: its CPU is XNNPACK (`--num_threads`), its
# GPU keeps CPU kernels for ops the GPU cannot take (as the app's GPU session does).
_TOOL_FLAGS = {Delegate.CPU: (), Delegate.GPU: ("--use_gpu",)}
_TOOL_TIMEOUT_S = 600.0


@dataclass(frozen=True)
class ToolRun:
    """One run of benchmark_litert_model, as its `--result_json` file says."""

    avg_ms: float
    median_ms: float
    runs: int
    accelerators: tuple[str, ...]  # the tool's names, e.g. ("GPU", "CPU")
    threads: int
    fully_accelerated: bool | None

    @property
    def rate(self) -> float:
        """Runs per second of its timed loop: 1000 / its mean ms."""
        return 1000.0 / self.avg_ms

    @classmethod
    def of(cls, result: Mapping[str, Any]) -> ToolRun:
        """Read the tool's result JSON; ValueError naming what is missing or wrong."""
        try:
            latency = result["latency"]
            run = cls(
                avg_ms=float(latency["avg_ms"]),
                median_ms=float(latency["median_ms"]),
                runs=int(latency["num_runs"]),
                accelerators=tuple(str(a) for a in result["accelerators"]),
                threads=int(result["num_threads"]),
                fully_accelerated=result.get("fully_accelerated"),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{TOOL_NAME}'s result is not as expected ({type(e).__name__}: {e})") from None
        if run.avg_ms <= 0 or run.runs < 1:
            raise ValueError(f"{TOOL_NAME}'s result has no timed runs (mean {run.avg_ms} ms over {run.runs})")
        return run

    def to_dict(self) -> dict[str, Any]:
        return {"avg_ms": self.avg_ms, "median_ms": self.median_ms, "rate_per_s": self.rate, "runs": self.runs,
                "accelerators": list(self.accelerators), "threads": self.threads,
                "fully_accelerated": self.fully_accelerated}  # fmt: skip


@dataclass(frozen=True)
class VersusRound:
    """One round: the pipeline's leg and the tool's, in the order they ran."""

    pipeline_fps: float  # bench's inference rate over its measured span
    pipeline_inference_p50_ms: float  # bench's inference stage (set, run, read the tensors)
    bound: str | None  # the stage that set the pipeline's rate
    tool: ToolRun
    tool_first: bool
    # The most CPU, in cores, that other processes took during either leg (None: not readable): a pipeline
    # needs two cores (capture and inference) where the tool needs one, so a busy machine lowers the ratio.
    others_cores: float | None = None

    @property
    def ratio(self) -> float:
        """The pipeline's inference rate / the tool's."""
        return self.pipeline_fps / self.tool.rate

    def to_dict(self) -> dict[str, Any]:
        return {
            "ratio": self.ratio,
            "pipeline_inference_fps": self.pipeline_fps,
            "pipeline_inference_p50_ms": self.pipeline_inference_p50_ms,
            "pipeline_bound": self.bound,
            "tool": self.tool.to_dict(),
            "order": "tool, pipeline" if self.tool_first else "pipeline, tool",
            "others_cores": self.others_cores,
        }


@dataclass(frozen=True)
class VersusLitert:
    """Every round of a comparison, and the settings both legs ran with."""

    accelerator: str  # the delegate the pipeline used: cpu or gpu
    threads: int
    runs: int  # per leg and round: the inferences the pipeline measured in its first run
    warmup: int
    rounds: tuple[VersusRound, ...]
    cpus: int = 1  # the machine's

    @property
    def ratio(self) -> float:
        return median([r.ratio for r in self.rounds])

    def line(self) -> str:
        """bench's one line: the median ratio and what it compares. Its rates are medians over the rounds,
        said so, beside round 1's: the run bench printed above it, whose rate can differ a lot."""
        ratios = [r.ratio for r in self.rounds]
        fps = median([r.pipeline_fps for r in self.rounds])
        tool = median([r.tool.rate for r in self.rounds])
        threads = f"{self.threads} thread{'s' if self.threads != 1 else ''}"
        others = [r.others_cores for r in self.rounds if r.others_cores is not None]
        load = f"; other processes took up to {max(others):.2f} of {self.cpus} cores" if others else ""
        if len(ratios) == 1:
            rates = (f"1 round; the pipeline's inference rate, {fps:.1f}/s (the run above), against the tool's "
                     f"back-to-back runs of the model alone, {tool:.1f}/s")  # fmt: skip
        else:
            rates = (f"median of {len(ratios)} rounds, range {min(ratios):.2f}-{max(ratios):.2f}; the pipeline's "
                     f"median inference rate over the rounds, {fps:.1f}/s (round 1, the run above: "
                     f"{self.rounds[0].pipeline_fps:.1f}/s), against the tool's back-to-back runs of the model "
                     f"alone, median {tool:.1f}/s")  # fmt: skip
        return (
            f"inference: {self.ratio:.2f} of {TOOL_NAME} ({rates}; "
            f"{self.accelerator.upper()}, {threads}, {self.runs} runs a leg{load})"
        )

    def to_dict(self) -> dict[str, Any]:
        ratios = [r.ratio for r in self.rounds]
        return {
            "compared": "the pipeline's inference rate (inferences/s over bench's measured span, unpaced, no "
            "throttle) / the tool's (1000 / its mean ms of run_by_name back to back on fixed buffers)",
            "tool": TOOL_MODULE,
            "ratio": self.ratio,
            "ratio_min": min(ratios),
            "ratio_max": max(ratios),
            "accelerator": self.accelerator,
            "threads": self.threads,
            "runs": self.runs,
            "warmup": self.warmup,
            "cpus": self.cpus,
            "rounds": [r.to_dict() for r in self.rounds],
        }


def others_cores(system_cpu_pct: float, process_cpu_pct_cores: float, cpus: int) -> float:
    """The CPU, in cores, that other processes took: the machine's busy share less this process's own (with
    the children it waited for), both over one span."""
    return max(0.0, (system_cpu_pct * cpus - process_cpu_pct_cores) / 100.0)


def median(values: Sequence[float]) -> float:
    """The median of the rounds' figures (the middle two's mean for an even count)."""
    if not values:
        raise ValueError("no rounds to take a median of")
    return float(statistics.median(values))


def check(plan: RunPlan) -> None:
    """UsageError (exit 2) naming the option when the run is one the tool cannot repeat or the rates
    cannot be compared; nothing when `plan` asks for no comparison."""
    if not plan.versus_litert:
        return
    config = plan.config
    why = "--versus-litert compares inference rates flat out"
    if config.delegate not in _TOOL_FLAGS:
        raise UsageError(f"--delegate {config.delegate}: {TOOL_NAME} runs LiteRT on the CPU or the GPU only")
    kind = kind_of(plan.feed.spec)
    if kind is not None and not reads_on_demand(kind, plan.feed.pace):
        fix = "add --no-pace" if plan.feed.pace and kind not in ("camera", "stream") else "use a file or synthetic"
        raise UsageError(f"{why}: --source {plan.feed.spec} is read at its own pace ({fix})")
    if config.throttle_ms > 0:
        raise UsageError(f"{why}: --throttle-ms {config.throttle_ms:g} holds inference back")
    if config.model_options.input_shapes:
        raise UsageError(f"--input-shape: {TOOL_NAME} runs the model's own input shapes")
    if config.delegate == Delegate.GPU and str(config.options.precision) != GpuPrecision.FP16:
        raise UsageError(f"--gpu-precision {config.options.precision}: {TOOL_NAME} cannot ask for it")
    if config.delegate == Delegate.GPU and config.options.wait_hint:
        raise UsageError(f"--gpu-wait-hint: {TOOL_NAME} has no such setting")
    if not _tool_present():  # a frozen bundle leaves LiteRT's tools out
        raise UsageError(f"--versus-litert: {TOOL_MODULE} is not in this installation of ai-edge-litert")


def _tool_present() -> bool:
    try:  # imports ai_edge_litert.tools, not the tool itself
        return importlib.util.find_spec(TOOL_MODULE) is not None
    except ImportError:
        return False


def tool_command(model: Path, accelerator: str, threads: int, runs: int, warmup: int, result: Path) -> list[str]:
    """The tool's command line with this interpreter."""
    return [sys.executable, "-m", TOOL_MODULE, "--model", str(model), *_TOOL_FLAGS[Delegate(accelerator)],
            "--num_threads", str(threads), "--num_runs", str(runs), "--warmup_runs", str(warmup),
            "--result_json", str(result)]  # fmt: skip


def run_tool(model: Path, accelerator: str, threads: int, runs: int, warmup: int) -> dict[str, Any]:
    """The tool's whole result JSON, from a process of its own; BackendUnavailable (exit 5) with its last
    line of errors when it fails."""
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "result.json"
        command = tool_command(model, accelerator, threads, runs, warmup, result)
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=_TOOL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise BackendUnavailable(f"{TOOL_NAME} did not finish in {_TOOL_TIMEOUT_S:g} s") from None
        if proc.returncode != 0 or not result.is_file():
            raise BackendUnavailable(f"{TOOL_NAME} failed (exit {proc.returncode}): {tool_error(proc.stderr)}")
        loaded: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
        return loaded


# Its logging's prefix: "2026-12-07 17:55:58 ERROR benchmark_litert_model: ".
_LOG_PREFIX = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (?P<level>[A-Z]+) benchmark_litert_model: ")


def tool_error(stderr: str) -> str:
    """The line that says why the tool failed: its last ERROR log line without the prefix, else the last line
    (a traceback's exception; the runtime's native log lines come before)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [m.string[m.end() :] for m in map(_LOG_PREFIX.match, lines) if m and m["level"] == "ERROR"]
    return (errors or lines or ["no output"])[-1]


def plan_again(plan: RunPlan) -> RunPlan:
    """A round's pipeline run: as `plan` says, but recording and tracing nothing (the files are the first
    run's), not idling again before it and asking for no comparison of its own."""
    return replace(plan, csv=None, trace=None, idle_readings=(), versus_litert=None)


def pipeline_again(plan: RunPlan) -> BenchSummary:
    """Another run of the pipeline (`plan_again`); its error raised."""
    summary = run_bench(plan_again(plan), RunState())
    error = summary.error()
    if error is not None:
        raise error
    return summary


def versus_litert(
    plan: RunPlan,
    first: BenchSummary,
    model: Path,
    progress: Callable[[int, int, VersusRound], None] | None = None,
    *,
    tool: Callable[[Path, str, int, int, int], dict[str, Any]] = run_tool,
    pipeline: Callable[[RunPlan], BenchSummary] = pipeline_again,
) -> VersusLitert:
    """`plan.versus_litert` rounds of the pipeline and the tool, `first` (the run bench reports) the first
    round's pipeline leg; `progress(round, rounds, that_round)` after each."""
    report = first.delegate
    accelerator = str(report.used) if report is not None else str(plan.config.delegate)
    if accelerator not in _TOOL_FLAGS:  # a fallback to a backend the tool does not have
        raise UsageError(f"--versus-litert: the pipeline ran on {accelerator}, which {TOOL_NAME} cannot run")
    threads, runs = plan.config.options.cpu_threads, max(1, first.metrics.inferences_total)
    total, cpus = plan.versus_litert or DEFAULT_VERSUS_ROUNDS, os.cpu_count() or 1

    def tool_leg() -> tuple[ToolRun, float | None]:
        start = cpu_mark()
        ran = ToolRun.of(tool(model, accelerator, threads, runs, plan.warmup))
        shares = cpu_percentages(start, cpu_mark(), cpus)
        return ran, others_cores(shares.system_cpu_pct, shares.process_cpu_pct_cores, cpus) if shares else None

    rounds: list[VersusRound] = []
    for i in range(total):
        tool_first = i % 2 == 1  # round 1: the run already made, then the tool; then the other way round
        leg = tool_leg() if tool_first else None
        summary = first if i == 0 else pipeline(plan)
        leg = leg or tool_leg()
        rounds.append(_round(summary, leg, tool_first, cpus))
        if progress is not None:
            progress(i + 1, total, rounds[-1])
    return VersusLitert(accelerator, threads, runs, plan.warmup, tuple(rounds), cpus)


def _round(summary: BenchSummary, tool: tuple[ToolRun, float | None], tool_first: bool, cpus: int) -> VersusRound:
    m, span = summary.metrics, summary.measured_cpu
    bound = str(summary.bottleneck.stage) if summary.bottleneck is not None else None
    during = [tool[1]] if tool[1] is not None else []
    if span is not None and span.seconds > 0:
        during.append(others_cores(span.system_cpu_pct, span.process_cpu_pct_cores, cpus))
    others = max(during) if during else None
    return VersusRound(m.inference_fps, m.latency["inference"].p50, bound, tool[0], tool_first, others)
