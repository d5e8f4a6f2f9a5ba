"""Running a program on a virtual X server (Xvfb), for figures of the real window."""

from __future__ import annotations

import shutil
import sys


def require_xvfb() -> None:
    """Exit with the package to install when xvfb-run is missing."""
    if not shutil.which("xvfb-run"):
        sys.exit("needs xvfb-run (Debian package xvfb)")


def under_xvfb(cmd: list[str], screen: str = "1920x1080x24") -> list[str]:
    """`cmd` run by xvfb-run on a free display with one screen of `screen` (WIDTHxHEIGHTxDEPTH)."""
    return ["xvfb-run", "-a", "-s", f"-screen 0 {screen}", *cmd]
