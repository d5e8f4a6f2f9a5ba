"""A profile carried by a recording: `<name>.profile.json` beside its CSV (app/report/ops.py draws it)."""

from __future__ import annotations

import json
from pathlib import Path

from app.profile.types import Profile
from app.schemas import versioned


def profile_path(recording: Path) -> Path:
    return Path(recording).with_suffix(".profile.json")


def write_profile(recording: Path, profile: Profile) -> Path:
    path = profile_path(recording)
    path.write_text(json.dumps(versioned({"profile": profile.to_dict()}), indent=2) + "\n", encoding="utf-8")
    return path


def read_profile(recording: Path) -> Profile | None:
    """The profile beside a recording (`profile --json` output or a bare profile); None when absent or malformed."""
    try:
        data = json.loads(profile_path(recording).read_text(encoding="utf-8"))
        return Profile.from_dict(data["profile"] if isinstance(data, dict) and "profile" in data else data)
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
        return None
