"""What the HTML reports (`report`, `sweep`) share: the page's base style, escaping, and writing
the file so that a failed write never leaves half a page."""

from __future__ import annotations

import html
import os
import tempfile
from pathlib import Path

from app.errors import UsageError

BASE_CSS = """
body{font-family:-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:2em auto;max-width:1250px;
color:#222;padding:0 1em;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.25em;margin-top:1.8em;border-bottom:1px solid #ddd}
.sub{color:#666;margin-top:0}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}
th,td{border:1px solid #ddd;padding:.35em .7em;text-align:left;vertical-align:top}
thead th{background:#f4f6f8}td.num{text-align:right;font-variant-numeric:tabular-nums}
tbody tr:nth-child(even){background:#fafbfc}
img{max-width:100%;height:auto;display:block;margin:.8em 0}.note{color:#555;font-size:.9em}
"""


def esc(value: object) -> str:
    """Everything from a user's file (labels, paths, messages) goes through this."""
    return html.escape(str(value), quote=True)


def write_atomic(out: Path, data: bytes) -> None:
    """Write beside the target and rename: a failed report never leaves half a file."""
    parent = out.parent if str(out.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise UsageError(f"cannot write {out}: {exc.strerror or exc}") from None
