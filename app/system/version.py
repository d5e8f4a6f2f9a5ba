"""This package's version and one-line purpose, read from its installed metadata: pyproject.toml's
[project] version and description are the one source (`--version`, About, the bundle's Info.plist)."""

from __future__ import annotations

DISTRIBUTION = "delegate-scope"
UNINSTALLED = "0+unknown"  # a source tree on sys.path that was never `pip install`ed


def version() -> str:
    # importlib.metadata is imported here, not at the top: about 20 ms at every start (the GPU probe's and
    # other children included) that only --version and About need.
    from importlib import metadata

    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return UNINSTALLED


def summary() -> str:
    """The one-line purpose (pyproject.toml's description), or "" when not installed."""
    from importlib import metadata

    try:
        return metadata.metadata(DISTRIBUTION)["Summary"] or ""
    except metadata.PackageNotFoundError:
        return ""
