"""Coverage in words, for the terminal: per-delegate summary lines, a run-length node table, reasons."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping

from app.coverage import NOT_REPORTED, Coverage, NodeCoverage

DELEGATE_NAMES = {"cpu": "CPU (XNNPACK)", "gpu": "GPU (LiteRT)", "coreml": "Core ML"}


_HEAD = 27  # the width of "CPU (XNNPACK)  measured    ": a log line starts under the summary


def summary_line(c: Coverage) -> str:
    """The delegate's summary: its own log line for a predicted coverage (Core ML's, all it says), else
    'N of M nodes delegated in P partitions' (a measured one's log line goes beneath: `log_line`)."""
    head = f"{DELEGATE_NAMES.get(c.delegate, c.delegate):<14} {c.source:<11} "
    if c.source == "unavailable":
        return head + (c.reason or "unavailable")
    return head + (c.log if c.log and c.log_source is None else c.summary())


_YIELDING = re.compile(r"yielding (\d+) partitions")
_DELEGATED_AS = {"cpu": "XNNPACK", "gpu": "GPU"}


def partitions_note(c: Coverage) -> str | None:
    """Why the log line's partition count differs from the delegated partitions, where it does: TFLite's
    "yielding P partitions" counts every node subset its partitioning made, the delegate's and the runs
    of nodes left between them (Subgraph::ReplaceNodeSubsetsWithDelegateKernels, tensorflow/lite/core/
    subgraph.cc: `node_subsets.size()`, kTfPartition and kTfNonPartition alike), not what the delegate
    took; the delegate (xnnpack_delegate.cc) asks only for its nodes and counts nothing itself."""
    match = _YIELDING.search(c.log or "")
    if match is None or c.delegated_partitions is None or int(match[1]) == c.delegated_partitions:
        return None
    total, taken = int(match[1]), c.delegated_partitions
    left = total - taken
    name = _DELEGATED_AS.get(c.delegate, c.delegate)
    runs = f"{left} run{'' if left == 1 else 's'} of nodes left on the CPU"
    return f"{total} partitions: TFLite counts every node subset, the {taken} {name} took and the {runs}"


def log_line(c: Coverage) -> str | None:
    """A measured coverage's log line, word for word, under its summary, saying whether the runtime
    printed it here or it is computed (the runtime's format, from the measured nodes); where its
    partition count is not the delegated partitions', why, on the line itself (`partitions_note`)."""
    if not c.log or c.log_source is None or c.source == "unavailable":
        return None
    said = "printed" if c.log_source == "printed" else "computed; this LiteRT build does not print it"
    note = partitions_note(c)
    return f"{'':<{_HEAD}}log ({said}): {c.log}" + (f" [{note}]" if note else "")


def cell(n: NodeCoverage | None) -> str:
    """One node for one delegate: 'p0' (delegated, partition 0), 'CPU' (left on the CPU), '?' (not reported)."""
    if n is None or n.delegated is None:
        return "?"
    if n.delegated:
        return f"p{n.partition}" if n.partition is not None else "yes"
    return "CPU"


def _ops(ops: list[str]) -> str:
    counts = Counter(ops)
    return ", ".join(f"{op}×{k}" if k > 1 else op for op, k in counts.items())


def node_rows(coverages: dict[str, Coverage]) -> list[tuple[str, str, list[str]]]:
    """Runs of consecutive nodes that every delegate treats alike: (node range, ops, one cell per delegate)."""
    names = list(coverages)
    per = {name: {n.index: n for n in c.nodes} for name, c in coverages.items()}
    total = max((c.nodes_total for c in coverages.values()), default=0)
    rows: list[tuple[str, str, list[str]]] = []
    start = 0
    ops_of = {}
    for c in coverages.values():
        ops_of.update({n.index: n.op for n in c.nodes})
    for i in range(1, total + 1):
        key = [cell(per[name].get(i - 1)) for name in names]
        if i < total and [cell(per[name].get(i)) for name in names] == key:
            continue
        span = f"{start}" if start == i - 1 else f"{start}–{i - 1}"
        rows.append((span, _ops([ops_of.get(j, "?") for j in range(start, i)]), key))
        start = i
    return rows


def reasons(c: Coverage) -> list[str]:
    """Why each node the delegate leaves stays on the CPU (identical reasons folded); one line for unreported ones."""
    lines = left_on_cpu_lines(c, limit=40)
    unknown = [n for n in c.nodes if n.delegated is None]
    plain = [n for n in unknown if n.reason in (None, NOT_REPORTED)]
    if plain:
        lines.append(f"{len(plain)} nodes: whether each is delegated is {NOT_REPORTED}")
    said: dict[str, list[int]] = {}  # unknown with a stated cause (GPU: equal partitions, one of them taken)
    for n in unknown:
        if n.reason not in (None, NOT_REPORTED):
            said.setdefault(n.reason, []).append(n.index)
    for reason, indices in said.items():
        shown = ", ".join(map(str, indices[:6])) + (", …" if len(indices) > 6 else "")
        lines.append(f"node{'s' if len(indices) > 1 else ''} {shown}: whether delegated is open: {reason}")
    return lines


def render(coverages: Mapping[str, Coverage]) -> list[str]:
    names = list(coverages)
    out = [line for c in coverages.values() for line in (summary_line(c), log_line(c)) if line is not None]
    measured = {k: c for k, c in coverages.items() if c.nodes}
    if measured:
        out.append("")
        header = ["nodes", *(DELEGATE_NAMES.get(k, k) for k in measured), "ops"]
        rows = node_rows(measured)
        widths = [max(len(header[0]), *(len(r[0]) for r in rows))]
        widths += [max(len(h), 4) for h in header[1:-1]]
        out.append("  ".join(h.ljust(w) for h, w in zip(header[:-1], widths, strict=True)) + "  ops")
        for span, ops, cells in rows:
            out.append("  ".join(v.ljust(w) for v, w in zip([span, *cells], widths, strict=True)) + "  " + ops)
        out.append("(pN: delegated, in partition N in execution order; CPU: left on CPU kernels; ?: not reported)")
    for name in names:
        lines = reasons(coverages[name])
        if lines:
            out.append("")
            out.append(f"{DELEGATE_NAMES.get(name, name)} leaves on the CPU:")
            out.extend(f"  {line}" for line in lines)
    return out


def left_on_cpu_lines(coverage: Coverage, limit: int = 12) -> list[str]:
    """'RESHAPE (node 29): why' for the nodes a delegate leaves on the CPU; identical reasons folded."""
    left = coverage.left_on_cpu
    groups: dict[tuple[str, str], list[int]] = {}
    for n in left:
        groups.setdefault((n.op, n.reason or ""), []).append(n.index)
    lines = []
    for (op, reason), indices in groups.items():
        shown = ", ".join(map(str, indices[:4])) + (", …" if len(indices) > 4 else "")
        lines.append(f"{op} (node {shown})" if len(indices) == 1 else f"{op} ×{len(indices)} (nodes {shown})")
        lines[-1] += f": {reason}"
    return lines[:limit] + ([f"… and {len(lines) - limit} more"] if len(lines) > limit else [])
