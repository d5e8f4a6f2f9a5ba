"""`report`'s comparison: every column after the first against its baseline (the first column, or for a
segment of a recording the segment before it):
speed and CPU ratios, and top-1 agreement on the frames both inferred."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from app.recording.ab import comparison_between, read_compared
from app.recording.task_figures import parse_cells
from app.recording.writer import cell_number, original_text
from app.report.data import RecordingData, session_label

MINUS = "\u2212"


@dataclass(frozen=True)
class LabelAgreement:
    """Top-1 agreement of two sessions on the frames both inferred."""

    frames: int  # common frames (same replayable source, same frame id)
    agree: int  # of those, with the same top-1 label
    text: str  # for the tables: the share, or why the sessions cannot be compared
    distribution_overlap: float  # overlap of the two top-1 label distributions, 0-1 (NaN: no labels)


@dataclass(frozen=True)
class Comparison:
    """One column against its baseline (`baseline_of`), as the tables, the headline and the PNG show it."""

    session: RecordingData
    baseline: RecordingData
    inference: str  # "9.3× faster"
    end_to_end: str
    inference_p95: str
    fps: str
    cpu_ms: str  # "−96%"
    process_cpu: str
    agreement: LabelAgreement
    sentence: str


def ratio_text(base: float, other: float, better: str, worse: str) -> str:
    """For a lower-is-better figure: "9.3× faster" / "1.5× slower" (base / other)."""
    if any(math.isnan(v) for v in (base, other)) or base <= 0 or other <= 0:
        return "n/a"
    r = base / other
    if abs(r - 1) < 0.005:
        return "same"
    return f"{r:.3g}× {better}" if r > 1 else f"{1 / r:.3g}× {worse}"


def change_text(base: float, other: float) -> str:
    """Relative change from the baseline: "−96%", "+12%"."""
    if any(math.isnan(v) for v in (base, other)) or base == 0:
        return "n/a"
    pct = (other - base) / base * 100
    rounded = f"{abs(pct):.0f}"
    if rounded == "0":
        return "±0%"
    return f"{MINUS if pct < 0 else '+'}{rounded}%"


def _replayable(source: str) -> bool:
    """Frame ids name the same pixels across runs of a video, image folder, demo or synthetic source."""
    return bool(source) and not source.startswith("camera")


def _classes(s: RecordingData) -> int | None:
    """The class count of the one classifier a recording ran (its sidecar's `models`), else None."""
    models = [m for m in _dict_values(s.meta.get("models")) if isinstance(m, dict)]
    counts = {m.get("classes") for m in models}
    count = counts.pop() if len(counts) == 1 else None
    return count if isinstance(count, int) and not isinstance(count, bool) and count > 1 else None


def _dict_values(value: object) -> list[object]:
    return list(value.values()) if isinstance(value, dict) else []


def label_agreement(a: RecordingData, b: RecordingData) -> LabelAgreement:
    """Top-1 agreement on the frames both sessions inferred in their measured spans (same replayable source,
    same frame id). The two sides of one A/B run are counted from its per-frame comparison instead: the
    frames bench compared and counted in its measured span (app/recording/ab.py `measured_comparisons`)."""
    compared = None if a.segmented or b.segmented else read_compared(comparison_between(a.path, b.path))

    def by_frame(s: RecordingData) -> Mapping[tuple[str, int], str | frozenset[str]]:
        out: dict[tuple[str, int], str | frozenset[str]] = {}
        for r in s.measured:
            frame, source = cell_number(r.get("frame_id")), original_text(r.get("source", ""))
            if not math.isnan(frame) and _replayable(source):
                found = parse_cells(r)
                if found is None:  # a classifier's row: its top-1 class (index), or label where none was recorded
                    index = cell_number(r.get("top1_index"))
                    if by_index and not math.isnan(index):
                        out[(source, int(frame))] = str(int(index) - (offset if s is b else 0))
                    else:
                        out[(source, int(frame))] = original_text(r.get("top1_label", ""))
                elif found[0] in _LABELLED:  # detections, classes present: the set of labels found
                    out[(source, int(frame))] = frozenset(found[2])
        return out

    # Classifiers compare classes, not label text (two label files spell one class two ways): by index when
    # both recorded models have as many outputs, shifted by one for 1001 against 1000 (app/model/classes.py's
    # rules; a recording keeps class counts, not label files, so the background row is the TF-slim convention).
    counts = {_classes(a), _classes(b)} - {None}
    by_index = len(counts) == 1 or counts == {1000, 1001}
    offset = 0 if len(counts) != 2 else (1 if _classes(b) == 1001 else -1)
    fa, fb = by_frame(a), by_frame(b)
    common = fa.keys() & fb.keys()
    agree = sum(fa[k] == fb[k] for k in common)
    la, lb = _label_counts(a), _label_counts(b)
    na, nb = sum(la.values()), sum(lb.values())
    overlap = sum(min(la[k] / na, lb[k] / nb) for k in la.keys() & lb.keys()) if na and nb else math.nan
    task = a.summary.task or b.summary.task  # models that are not classifiers: the labels they found
    if compared is not None and compared.frames:
        share = f"{compared.agree / compared.frames:.1%} of {compared.frames} common frames"
        what = "the frame agrees on " if compared.task else ""
        text = f"{what}{share} (compared by the A/B run: {compared.path.name})"
        return LabelAgreement(compared.frames, compared.agree, text, overlap)
    if common and task is not None:
        text = f"the same labels found on {agree / len(common):.1%} of {len(common)} common frames"
    elif task is not None and task.task not in _LABELLED:
        text = "not compared by label (no labels: keypoints or raw outputs)"
    elif common:
        how = "by class" if by_index else "by label text: the class counts were not recorded or differ"
        text = f"{agree / len(common):.1%} of {len(common)} common frames ({how})"
    elif any(s.startswith("camera") for s in a.summary.sources + b.summary.sources):
        text = "not comparable (live camera: frame ids are not the same images)"
    else:
        text = "not comparable (no common frames)"
    return LabelAgreement(len(common), agree, text, overlap)


_LABELLED = ("detection", "segmentation")  # tasks whose results are labels a frame can be compared by


def _label_counts(s: RecordingData) -> Counter[str]:
    """A classifier's top-1 labels; a detector's or segmenter's labels found, per frame they were found on."""
    if s.summary.labels or s.summary.task is None:
        return s.summary.labels
    return Counter({label: frames for label, frames, _ in s.summary.task.top_labels()})


def baseline_of(s: RecordingData, sessions: list[RecordingData]) -> RecordingData:
    """What a column is compared with: a later segment of a recording with the segment before it (what
    that one change did), anything else with the first column."""
    if s.segmented and s.segment is not None and s.segment.number > 1:
        return sessions[s.index - 1]
    return sessions[0]


def compare(sessions: list[RecordingData]) -> list[Comparison]:
    """Each column after the first against its baseline (`baseline_of`)."""
    out = []
    for s in sessions[1:]:
        base = baseline_of(s, sessions)
        b, o = base.summary, s.summary
        inf = ratio_text(b.stages["inference"].median, o.stages["inference"].median, "faster", "slower")
        e2e = ratio_text(b.stages["end_to_end"].median, o.stages["end_to_end"].median, "faster", "slower")
        p95 = ratio_text(b.stages["inference"].p95, o.stages["inference"].p95, "lower", "higher")
        fps = ratio_text(o.inference_fps, b.inference_fps, "higher", "lower")  # higher is better
        cpu = change_text(b.cpu_ms, o.cpu_ms)
        proc = change_text(b.process_cpu_pct, o.process_cpu_pct)
        agreement = label_agreement(base, s)
        sentence = f"{s.label or session_label(o)}: inference {inf} than {base.label or session_label(b)}, "
        sentence += f"CPU time per inference {cpu}"
        if agreement.frames and (o.task or b.task):
            sentence += f", the same labels found on {agreement.agree / agreement.frames:.0%} of common frames"
        elif agreement.frames:
            sentence += f", top-1 label agrees on {agreement.agree / agreement.frames:.0%} of common frames"
        out.append(Comparison(s, base, inf, e2e, p95, fps, cpu, proc, agreement, sentence))
    return out
