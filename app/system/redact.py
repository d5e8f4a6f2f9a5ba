"""Credentials in URLs stay out of what the app writes or shows.

A network camera is often opened as rtsp://user:password@host/...; the URL must reach FFmpeg
as given, but recordings, their sidecars, bench's JSON and status messages get shared, so
they carry the URL without its user-info part.
"""

from __future__ import annotations

import re

_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s]*@")  # up to the last @ of the authority


def redact_credentials(text: str) -> str:
    """'rtsp://user:secret@cam/live' -> 'rtsp://cam/live'; text without such URLs is unchanged."""
    return _USERINFO.sub(r"\1", text) if "@" in text else text
