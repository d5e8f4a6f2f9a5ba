"""A profile as text tables: run order, top ops, totals by op type, ops off the accelerator, partition boundaries."""

from __future__ import annotations

from app.profile.types import OpTime, Placement, Profile, TimeSource

# The accelerator named by the delegate that ran (an op in one of its partitions): on the CPU backend that
# is XNNPACK, whose partitions run on the CPU too, so "CPU" alone means LiteRT's built-in CPU kernels.
_ACCELERATOR = {"cpu": "XNNPACK", "gpu": "GPU", "coreml": "Core ML"}
WHERE_WIDTH = 7


def where(profile: Profile, placement: Placement) -> str:
    """The "where" cell: the accelerator's name ("XNNPACK", "GPU", "Core ML") or "CPU" (built-in kernels)."""
    if placement is Placement.CPU:
        return "CPU"
    return _ACCELERATOR.get(profile.used, profile.used)


def _node(op: OpTime) -> str:
    if op.nodes:
        return f"{min(op.nodes)}-{max(op.nodes)}" if len(op.nodes) > 1 else str(op.nodes[0])
    return "-" if op.node is None else str(op.node)


def _ms(value: float | None) -> str:
    return f"{'-':>9}" if value is None else f"{value:>9.3f}"


def _row(profile: Profile, op: OpTime) -> str:
    part = "" if op.partition is None else str(op.partition)
    timed = op.source is not TimeSource.NOT_REPORTED
    least, mean = profile.least_and_mean(op)
    share = f"{100 * profile.share(op):>6.1f}%" if timed else f"{'-':>7}"
    times = f"{_ms(least)} {_ms(op.median_ms)} {_ms(mean)}" if timed else f"{'-':>9} {'-':>9} {'-':>9}"
    place = where(profile, op.placement)
    return (
        f"  {op.order:>4} {_node(op):>7}  {op.op[:26]:<26} {op.kernel[:38]:<38} {place:<{WHERE_WIDTH}} "
        f"{part:>4} {times} {share}"
    )


def _timed(profile: Profile) -> bool:
    """False when the runtime's profiler could not take the model: places only, no per-op time."""
    return any(op.source is not TimeSource.NOT_REPORTED for op in profile.ops)


def _header() -> str:
    columns = f"{'op':<26} {'kernel (runtime name)':<38} {'where':<{WHERE_WIDTH}} {'part':>4}"
    return f"  {'#':>4} {'node':>7}  {columns} {'least ms':>9} {'median ms':>9} {'mean ms':>9} {'share':>7}"


CONTENDED_SHARE = 0.8  # below this share of their wall time on the CPU, the runs mostly waited


def headline(profile: Profile) -> list[str]:
    lines = [f"model     {profile.model}"]
    backend = profile.used if profile.used == profile.requested else f"{profile.used} (asked for {profile.requested})"
    lines.append(f"delegate  {backend}: {profile.accelerator}; {profile.runs} profiled runs")
    if profile.fallback_reason:
        lines.append(f"          fell back to CPU: {profile.fallback_reason}")
    whole = f"measured run {profile.wall_ms:.3f} ms"
    if profile.invoke_ms is not None:
        whole = f"runtime's Invoke {profile.invoke_ms:.3f} ms, " + whole
        ratio = f" = {100 * profile.ops_ms / profile.invoke_ms:.1f}% of Invoke" if profile.invoke_ms > 0 else ""
        if profile.ops_over_invoke is not None:
            ratio += f" (run by run, median {100 * profile.ops_over_invoke:.1f}%)"
    else:
        ratio = f" = {100 * profile.ops_ms / profile.wall_ms:.1f}% of the run" if profile.wall_ms > 0 else ""
    per_run = "least-disturbed: each figure its minimum over the runs" if profile.least_disturbed else "means per run"
    if _timed(profile):
        lines.append(f"time      {whole}; ops sum {profile.ops_ms:.3f} ms{ratio} ({per_run})")
        if profile.least_disturbed and profile.ops_mean_ms is not None:
            means = [f"ops sum {profile.ops_mean_ms:.3f} ms"]
            if profile.invoke_mean_ms is not None:
                means.insert(0, f"Invoke {profile.invoke_mean_ms:.3f} ms")
            if profile.wall_mean_ms is not None:
                means.insert(-1, f"measured run {profile.wall_mean_ms:.3f} ms")
            lines.append(f"          means of the {profile.runs} runs (waits for the CPU included): {', '.join(means)}")
    else:
        lines.append(f"time      {whole} (mean per run); per-op times not reported")
    if profile.cpu_share is not None:
        busy = profile.cpu_share < CONTENDED_SHARE
        lines.append(
            f"cpu       the runs had the CPU {100 * profile.cpu_share:.0f}% of their wall time"
            + ("; taken under contention: times include waiting for the CPU" if busy else "")
        )
    if any(op.source is TimeSource.DIFFERENCE for op in profile.ops):
        lines.append(
            "          (the GPU rows are the measured run minus the CPU ops: the sum is the run by construction)"
        )
    return lines


def render(profile: Profile, top: int = 10) -> list[str]:
    lines = headline(profile)
    lines += ["", "Run order", _header()]
    lines += [_row(profile, op) for op in profile.ops]
    timed = _timed(profile)
    if timed:
        lines += ["", f"Top {min(top, len(profile.ops))} by time (ranked by median per run)", _header()]
        lines += [_row(profile, op) for op in profile.top(top)]
    lines += ["", "By op type", f"  {'op':<40} {'count':>5} {'ms':>9} {'share':>7}"]
    total = profile.ops_ms or 1.0
    lines += [
        f"  {name[:40]:<40} {count:>5} {ms:>9.3f} {100 * ms / total:>6.1f}%"
        if timed
        else f"  {name[:40]:<40} {count:>5} {'-':>9} {'-':>7}"
        for name, count, ms in profile.by_type()
    ]
    off = profile.off_accelerator()
    if timed:
        lines += ["", f"Off the accelerator: {len(off)} op(s), {profile.off_accelerator_ms:.3f} ms "
                  f"({100 * profile.off_accelerator_ms / total:.1f}% of the ops' time)"]  # fmt: skip
    else:
        lines += ["", f"Off the accelerator: {len(off)} op(s)"]
    lines += [_row(profile, op) for op in off]
    lines += ["", "Partition boundaries (run order)"]
    for s in profile.segments():
        where = f"partition {s.partition}" if s.placement is Placement.ACCELERATOR else "CPU      "
        span = "" if s.first_node is None else f"nodes {s.first_node}-{s.last_node}"
        lines.append(f"  {where:<12} {span:<16} {s.ops:>4} op(s) " + (f"{s.ms:>9.3f} ms" if timed else f"{'-':>9}"))
    if profile.fused:
        shown = ", ".join(f"{node} {op}" for node, op in profile.fused[:12])
        more = f" and {len(profile.fused) - 12} more" if len(profile.fused) > 12 else ""
        lines.append(
            f"fused: {len(profile.fused)} node(s) inside a partition have no operator of their own (the delegate "
            f"fused each into a neighbour's; its time is there): {shown}{more}"
        )
    for text in profile.not_reported:
        lines.append(f"not reported: {text}")
    for text in profile.notes:
        lines.append(f"note: {text}")
    return lines
