"""What a recording read back says of itself: lines that could not be read, and whether its recorder
stopped cleanly. One rule for every reader (`report`, the window's Review), so they say the same."""

from __future__ import annotations

from app.recording.writer import Recording, original_text


def unreadable_text(name: str, recording: Recording) -> str | None:
    """'X.csv: 7 lines could not be read (first at line 75: 2 cells where the header has 38)', or None."""
    n = recording.skipped_lines
    if not n:
        return None
    first = ""
    if recording.first_skipped is not None:
        line, why = recording.first_skipped
        first = f" (first at line {line}: {why})" if n > 1 else f" (line {line}: {why})"
    return f"{name}: {n} line{'s' if n != 1 else ''} could not be read{first}"


def stop_problem(recording: Recording) -> str | None:
    """Why a recording did not stop cleanly, or None when it did.

    The sidecar's `complete` is written true only by the recorder's own stop without an error
    (app/recording/writer.py); a killed or crashed process leaves it false. Without a sidecar the rows
    are all there is: a clean stop writes a `stop` event last. A last line with no line end is a
    writer cut off mid-row."""
    meta = recording.metadata if isinstance(recording.metadata, dict) else {}
    error = meta.get("error")
    if error:
        return f"not stopped cleanly: the recording stopped on an error ({error})"
    complete = meta.get("complete")
    if complete is False:
        return (
            "not stopped cleanly: its recorder never finished "
            "(the process was killed or crashed, or it is still recording)"
        )
    if recording.torn:
        return "not stopped cleanly: its last line is cut off"
    if complete is not True and not any(original_text(r.get("event", "")) == "stop" for r in recording.rows):
        return "not stopped cleanly: no stop event (the process was killed or crashed, or it is still recording)"
    return None
