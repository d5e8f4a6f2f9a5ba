"""Plain-language descriptions of what really ran, shared by the window and the CLI. Qt-free."""

from __future__ import annotations

from dataclasses import dataclass

from app.backends.base import SessionReport


@dataclass(frozen=True)
class Fact:
    label: str
    value: str
    level: str = "ok"  # "ok", "info", "warn": how the window colours it


def offload_sentence(cpu_per_wall: float, backend: str, cpu_ms: float, wall_ms: float) -> str:
    """One sentence on what CPU time per inference against wall time means.

    A GPU driver can wait for its results by spinning on a core, so a ratio near 1 on a
    GPU does not prove the work ran on the CPU; the sentence says so rather than guess.
    """
    if wall_ms <= 0:
        return "No inference measured yet."
    pct = cpu_per_wall * 100
    head = f"CPU time per inference is {pct:.0f}% of wall time ({cpu_ms:.1f} of {wall_ms:.1f} ms)"
    if cpu_per_wall < 0.3:
        return f"{head}: the work runs off the CPU."
    if cpu_per_wall < 0.85:
        return f"{head}: the CPU is idle part of the time, so part of the work runs elsewhere or waits."
    if cpu_per_wall <= 1.2:
        if backend == "cpu":
            return f"{head}: one core is busy for the whole inference; the work runs on the CPU."
        return (
            f"{head}: a core is busy for the whole inference, either doing the work or "
            "spinning while it waits for the device; compare CPU ms with the CPU backend."
        )
    return f"{head}: {cpu_per_wall:.1f} cores are busy on average; the work runs on the CPU, multi-threaded."


def delegation_facts(report: SessionReport) -> list[Fact]:
    """The delegation panel's rows: requested vs used, fallback, adapter, nodes, partitions, timings."""
    fell_back = report.requested != report.used
    facts = [
        Fact(
            "Backend",
            f"{report.used.upper()} (requested {report.requested.upper()})" if fell_back else report.used.upper(),
            "warn" if fell_back else "ok",
        ),
        Fact("Accelerator", report.accelerator),
    ]
    if report.fallback_reason:
        facts.append(Fact("Fallback", report.fallback_reason, "warn"))
    if report.adapter:
        adapter = report.adapter + (" — SOFTWARE RENDERER: the 'GPU' work runs on the CPU" if report.software else "")
        facts.append(Fact("Adapter", adapter, "warn" if report.software else "ok"))
    if report.fully_accelerated is not None:
        facts.append(
            Fact(
                "Fully accelerated",
                "yes" if report.fully_accelerated else "no: some ops run on CPU kernels",
                "ok" if report.fully_accelerated else "warn",
            )
        )
    if report.nodes_total is not None:
        delegated = "?" if report.nodes_delegated is None else str(report.nodes_delegated)
        level = "ok" if report.nodes_delegated == report.nodes_total else "warn"
        facts.append(Fact("Nodes delegated", f"{delegated} of {report.nodes_total}", level))
    facts.append(
        Fact(
            "Partitions",
            "not reported by the runtime" if report.partitions is None else str(report.partitions),
            "info" if report.partitions is None else ("ok" if report.partitions <= 1 else "warn"),
        )
    )
    facts.append(Fact("Ops left on CPU", ", ".join(report.cpu_ops) if report.cpu_ops else "none"))
    facts.append(Fact("Init", f"{report.init_ms:.0f} ms"))
    facts.append(Fact("First inference", f"{report.first_inference_ms:.0f} ms"))
    facts.extend(
        Fact("Warning", w, "warn")
        for w in report.warnings
        if not (report.fallback_reason and report.fallback_reason in w)  # already shown as Fallback
    )
    return facts


def coreml_prediction_sentence(report: SessionReport) -> str | None:
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
    if report.used == "coreml":
        return f"The TFLite Core ML delegate would take {take} (predicted from its rules)."
    return f"Core ML can't run here; on a Mac the TFLite Core ML delegate would take {take}."

