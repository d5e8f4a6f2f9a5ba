"""Plain-language descriptions of what really ran, shared by the window and the CLI. Qt-free."""

from __future__ import annotations

from dataclasses import dataclass

from app.backends.base import DelegationReport
from app.backends.options import Delegate
from app.coverage import NOT_REPORTED
from app.metrics.memory import MemoryDelta


@dataclass(frozen=True)
class Fact:
    label: str
    value: str
    level: str = "ok"  # "ok", "info", "warn": how the window colours it


BUSY_MACHINE_PCT = 90.0  # the machine's CPU this busy: an inference may wait for a core as long as it runs


def offload_sentence(
    cpu_per_wall: float,
    backend: str,
    cpu_ms: float,
    wall_ms: float,
    machine_cpu_pct: float | None = None,
    *,
    waited_ms: float | None = None,
    slept_ms: float | None = None,
) -> str:
    """One sentence on what CPU time per inference against wall time means.

    Below 1 it means either that the work ran elsewhere or that the inference waited. `waited_ms`
    and `slept_ms` (the inference thread's time runnable without a core, and blocked, per inference:
    app/system/thread_cpu.py) tell the two apart where Linux's schedstat is readable: waiting for a
    core is a busy machine, sleeping is the device (or a lock) holding the thread. Without them the
    machine's CPU load is the only hint, and both readings are said. The CPU backend does all its
    work on the CPU, so there it is never "off the CPU". The TensorFlow reference's CPU time is its
    child process's own (read from the child). A GPU driver can wait for its results by spinning on
    a core, so a ratio near 1 on a GPU does not prove the work ran on the CPU; the sentence says so.
    """
    if wall_ms <= 0:
        return "No inference measured yet."
    pct = cpu_per_wall * 100
    head = f"CPU time per inference is {pct:.0f}% of wall time ({cpu_ms:.1f} of {wall_ms:.1f} ms)"
    if backend == Delegate.REFERENCE:
        head += " (the TensorFlow reference's child process, read from its own clock)"
    busy = machine_cpu_pct is not None and machine_cpu_pct >= BUSY_MACHINE_PCT
    load = f" (the machine's CPU is {machine_cpu_pct:.0f}% busy)" if busy and machine_cpu_pct is not None else ""
    known = waited_ms is not None and slept_ms is not None
    where = f"its thread waited {waited_ms:.1f} ms for a core and slept {slept_ms:.1f} ms" if known else ""
    on_cpu = backend in (Delegate.CPU, Delegate.REFERENCE)  # both run every op on this machine's CPU
    if cpu_per_wall < 0.85 and backend == Delegate.REFERENCE:  # this process's thread only waits on the pipe
        return (
            f"{head}: TensorFlow runs every op on this machine's CPU, so the rest of the time it waited for a "
            f"core{load} or for the other side; nothing runs elsewhere."
        )
    if cpu_per_wall < 0.85 and on_cpu:
        why = (
            f"{where} per inference (asleep: for its worker threads, a lock or the other side)"
            if known
            else f"the rest of the time the inference waited for a core, a lock or the other side{load}"
        )
        return f"{head}: the CPU backend does all its work on the CPU, so {why}; nothing runs elsewhere."
    if cpu_per_wall < 0.85 and known:
        assert waited_ms is not None and slept_ms is not None
        if slept_ms >= waited_ms and slept_ms >= 0.3 * wall_ms:
            return (
                f"{head}: {where} per inference: asleep while the delegate worked, so that part of the work "
                "runs off the CPU."
            )
        if waited_ms > slept_ms:
            return (
                f"{head}: {where} per inference: the machine is busy, so the low ratio is waiting, not "
                "offloading; compare on a quieter machine."
            )
        return f"{head}: {where} per inference: part of the work runs elsewhere or waits."
    if cpu_per_wall < 0.3:
        if busy:
            return f"{head}: the work runs off the CPU, or waited for a core{load}; compare on a quieter machine."
        return f"{head}: the work runs off the CPU."
    if cpu_per_wall < 0.85:
        return f"{head}: the CPU is idle part of the time, so part of the work runs elsewhere or waits{load}."
    if cpu_per_wall <= 1.2:
        if on_cpu:
            return f"{head}: one core is busy for the whole inference; the work runs on the CPU."
        return (
            f"{head}: a core is busy for the whole inference, either doing the work or "
            "spinning while it waits for the device; compare CPU ms with the CPU backend."
        )
    return f"{head}: {cpu_per_wall:.1f} cores are busy on average; the work runs on the CPU, multi-threaded."


SAME_SPEED = 0.02  # medians within 2% of each other are a tie at the noise of a shared machine


def ratio_words(a_ms: float, b_ms: float) -> str:
    """B's time against A's in words: "B is 1.12× slower than A", or a tie within SAME_SPEED."""
    ratio = a_ms / b_ms
    if abs(ratio - 1) < SAME_SPEED:  # "1.0× slower" said nothing: name the tie and how close it is
        return f"same speed (B within {abs(1 - b_ms / a_ms) * 100:.1f}% of A)"
    return f"B is {ratio:.2f}× faster than A" if ratio > 1 else f"B is {1 / ratio:.2f}× slower than A"


def speed_sentence(a_ms: float | None, b_ms: float | None, a_cpu: float, b_cpu: float, over: str = "") -> str:
    """A/B in one sentence: B's median inference time against A's, and its CPU time per inference;
    `over` says what the medians cover ('the last 300 frames both inferred')."""
    if not a_ms or not b_ms:
        return "speed not measured"
    speed = ratio_words(a_ms, b_ms)
    if a_cpu > 0:
        speed += f"; CPU time per inference {(b_cpu / a_cpu - 1) * 100:+.0f}%"
    return speed + f" (median inference time{' over ' + over if over else ''}, both running together)"


def nodes_delegated_text(delegated: object, total: object, partitions: object) -> str:
    """'29 of 31 nodes delegated in 2 partitions', in the runtime's counts; one it did not report is said so."""
    if partitions is None:
        return f"{'?' if delegated is None else delegated} of {total} nodes delegated (partitions {NOT_REPORTED})"
    plural = "s" if partitions != 1 else ""
    return f"{'?' if delegated is None else delegated} of {total} nodes delegated in {partitions} partition{plural}"


BUILT_IN_KERNELS = "the built-in CPU kernels"


def cpu_split_sentence(report: DelegationReport) -> str | None:
    """How a CPU session splits the model between XNNPACK and LiteRT's built-in kernels: 'XNNPACK takes
    27 of 28; AVERAGE_POOL_2D on the built-in CPU kernels'. None off the CPU, or where the runtime did not
    count the nodes. Both paths run on the CPU: a node XNNPACK's `Subgraph::VisitNode` does not support is
    left to the interpreter's own kernel for its op (tensorflow/lite/delegates/xnnpack/xnnpack_delegate.cc),
    so it is the other CPU path, neither a fallback nor a failed offload ("Fully accelerated: no")."""
    if report.used != Delegate.CPU or report.nodes_total is None:
        return None
    total, taken = report.nodes_total, report.nodes_delegated
    if taken is None:
        return f"XNNPACK's share of the {total} nodes {NOT_REPORTED}"
    if not taken:
        return f"all {total} nodes on {BUILT_IN_KERNELS} (XNNPACK takes none)"
    if taken == total:
        return f"XNNPACK takes all {total} nodes"
    left = total - taken
    ops = ", ".join(report.cpu_ops) if report.cpu_ops else f"{left} node{'s' if left != 1 else ''}"
    return f"XNNPACK takes {taken} of {total}; {ops} on {BUILT_IN_KERNELS}"


def delegation_line(report: DelegationReport) -> str:
    """What ran where, in one line (classify's and bench's `delegate` line)."""
    parts = [f"{report.requested} -> {report.used}", report.accelerator]
    if report.options.get("process") == "own":  # bench --gpu-process: the session runs in a child
        parts[-1] += " in a process of its own"
    if report.adapter:
        parts.append(f"adapter {report.adapter}" + (" [SOFTWARE RENDERER]" if report.software else ""))
    if report.nodes_total is not None:
        parts.append(nodes_delegated_text(report.nodes_delegated, report.nodes_total, report.partitions))
    elif report.fully_accelerated is not None:
        parts.append("fully accelerated" if report.fully_accelerated else "NOT fully accelerated")
    if report.cpu_ops and report.used == Delegate.CPU:  # XNNPACK's leftovers: the other CPU path, not a fallback
        parts.append(", ".join(report.cpu_ops) + f" on {BUILT_IN_KERNELS}")
    elif report.cpu_ops:
        parts.append("left on CPU kernels: " + ", ".join(report.cpu_ops))
    if report.fallback_reason:
        parts.append(f"FALLBACK: {report.fallback_reason}")
    return ", ".join(parts)


_BACKEND_NAMES: dict[str, str] = {Delegate.COREML: "Core ML", Delegate.REFERENCE: "TF reference"}


def backend_name(name: str) -> str:
    """A backend as users read it: 'CPU', 'GPU', 'Core ML' (never 'COREML')."""
    return _BACKEND_NAMES.get(name, name.upper())


# Software renderers by the words their adapter names carry (app/backends/gpu/vulkan_devices.py's SOFTWARE_NAMES),
# said as their makers spell them.
_RENDERER_NAMES = (("swiftshader", "SwiftShader"), ("llvmpipe", "llvmpipe"), ("lavapipe", "lavapipe"),
                   ("softpipe", "softpipe"), ("microsoft basic render", "Microsoft Basic Render"))  # fmt: skip


def software_renderer(adapter: str | None) -> str:
    """A software adapter's short name: 'SwiftShader Device (Subzero) (Vulkan, CPU / Software)' is
    'SwiftShader'; one not known by name is its name up to the first bracket, or 'a CPU renderer'."""
    lower = (adapter or "").lower()
    for key, name in _RENDERER_NAMES:
        if key in lower:
            return name
    head = (adapter or "").split("(")[0].split(",")[0].strip()
    return head or "a CPU renderer"


def backend_words(used: str, software: bool = False, adapter: str | None = None) -> str:
    """A backend as every view names it: 'GPU', or 'GPU (software: SwiftShader)' when the 'GPU' is a
    software renderer on the CPU, so no badge, legend, recording or report says GPU for CPU work."""
    name = backend_name(used)
    return f"{name} (software: {software_renderer(adapter)})" if software else name


def report_backend_words(report: DelegationReport) -> str:
    """`backend_words` of what a session really ran on."""
    return backend_words(report.used, report.software, report.adapter)


def delegation_panel_facts(report: DelegationReport) -> list[Fact]:
    """The delegation panel's rows: requested vs used, fallback, adapter, nodes, partitions, timings."""
    fell_back = report.requested != report.used
    used = report_backend_words(report)
    facts = [
        Fact(
            "Backend",
            f"{used} (requested {backend_name(report.requested)})" if fell_back else used,
            "warn" if fell_back or report.software else "ok",
        ),
        Fact("Accelerator", report.accelerator),
    ]
    if report.fallback_reason:
        facts.append(Fact("Fallback", report.fallback_reason, "warn"))
    if report.adapter:
        adapter = report.adapter + (" — SOFTWARE RENDERER: the 'GPU' work runs on the CPU" if report.software else "")
        facts.append(Fact("Adapter", adapter, "warn" if report.software else "ok"))
    split = cpu_split_sentence(report)
    if split is not None:  # a CPU run: XNNPACK and the built-in kernels, both on the CPU; said, not flagged
        facts.append(Fact("XNNPACK", split, "info"))
    elif report.fully_accelerated is not None:
        facts.append(
            Fact(
                "Fully accelerated",
                "yes" if report.fully_accelerated else "no: some ops run on CPU kernels",
                "ok" if report.fully_accelerated else "warn",
            )
        )
    if report.nodes_total is not None:
        delegated = "?" if report.nodes_delegated is None else str(report.nodes_delegated)
        level = "ok" if report.nodes_delegated == report.nodes_total else ("info" if split else "warn")
        facts.append(Fact("Nodes delegated", f"{delegated} of {report.nodes_total}", level))
    facts.append(
        Fact(
            "Partitions",
            NOT_REPORTED if report.partitions is None else str(report.partitions),
            "info" if report.partitions is None or split else ("ok" if report.partitions <= 1 else "warn"),
        )
    )
    coverage = report.coverage
    if coverage is not None and coverage.log and coverage.log_source is not None:  # the runtime's words
        said = (
            "printed by the runtime"
            if coverage.log_source == "printed"
            else "computed: this LiteRT build does not print it"
        )
        facts.append(Fact("Log line", f"{coverage.log} ({said})", "info"))
    if split is not None:
        pass  # the XNNPACK row names them
    elif report.cpu_ops:
        facts.append(Fact("Ops left on CPU", ", ".join(report.cpu_ops), "warn"))
    elif report.fully_accelerated is False:  # some ops stay on the CPU, but the runtime did not say which
        facts.append(Fact("Ops left on CPU", NOT_REPORTED, "info"))
    else:
        facts.append(Fact("Ops left on CPU", "none"))
    facts.append(Fact("Init", f"{report.init_ms:.0f} ms"))
    facts.append(Fact("First inference", f"{report.first_inference_ms:.0f} ms"))
    facts.extend(
        Fact("Warning", w, "warn")
        for w in report.warnings
        if not (report.fallback_reason and report.fallback_reason in w)  # already shown as Fallback
    )
    return facts


def megabytes(value: float) -> str:
    """MiB as bench's memory line says them: '33 MB', '3.3 MB' below 10."""
    return f"{value:.0f} MB" if abs(value) >= 10 else f"{value:.1f} MB"


def init_footprint_text(memory: MemoryDelta | None, detail: bool = True) -> str:
    """What opening the session added to the resident set: 'init 33 MB (29 MB weights, arena and runtime
    copies)', the anonymous part being what the runtime made of the model (app/metrics/memory.py); with
    `detail` off, 'init 33 MB' (a plot's marker). Not measured: why."""
    if memory is None or memory.init_mb is None:
        reason = memory.reason if memory is not None and memory.reason else "not reported"
        return f"init not measured: {reason}" if detail else "init not measured"
    text = f"init {megabytes(memory.init_mb)}"
    if detail and memory.anon_mb is not None:
        text += f" ({megabytes(memory.anon_mb)} weights, arena and runtime copies)"
    return text


def coreml_prediction_sentence(report: DelegationReport) -> str | None:
    """What the TFLite Core ML delegate would do with the model, when Core ML was asked for.

    Off macOS the Core ML backend cannot run, but the delegate's node selection is known
    from its rules, so the fallback comes with what a Mac would have done."""
    predicted = report.predicted
    if report.requested != "coreml" or predicted is None:
        return None
    kept = predicted.delegated_partitions or 0
    take = (
        f"{predicted.nodes_delegated} of {predicted.nodes_total} nodes in {kept} partition{'s' if kept != 1 else ''}"
        if predicted.nodes_delegated
        else f"none of the {predicted.nodes_total} nodes"
    )
    if report.used == Delegate.COREML:
        return f"The TFLite Core ML delegate would take {take} (predicted from its rules)."
    return f"Core ML can't run here; on a Mac the TFLite Core ML delegate would take {take}."
