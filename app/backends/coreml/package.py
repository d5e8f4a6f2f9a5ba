"""Check a .mlpackage folder before coremltools opens it: a package is a folder a user hands over, and
coremltools (and Core ML under it) trusts its Manifest.json.

The layout is coremltools' own (modelpackage/src/ModelPackage.cpp): `Manifest.json` at the top, whose
`itemInfoEntries` map identifiers to items with a `path` relative to the package's `Data` folder, and
whose `rootModelIdentifier` names the item holding the model specification (`model.mlmodel`, a
protobuf). This module reads only that: the manifest (bounded in size, JSON, the fields coremltools
reads with the types it expects) and where each item points (inside the package, no `..`, no absolute
path, no symlink out of it, the specification a regular file of a sane size). It never reads the
specification's bytes: coremltools parses those (a damaged one is its error, which the backend turns
into a fallback; `tests/harness/reader_fuzz.py` fuzzes coremltools' parser too).
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from app.errors import BackendUnavailable

MANIFEST = "Manifest.json"
DATA_DIR = "Data"
MAX_MANIFEST_BYTES = 1024 * 1024  # coremltools writes ~0.6 KB; a big one is not a manifest
MAX_SPEC_BYTES = 2 * 1024**3  # protobuf refuses messages over 2 GiB anyway
_STRING_FIELDS = ("path", "name", "author", "description")  # an item's fields, all strings in coremltools


@dataclass(frozen=True)
class PackageLayout:
    """What the manifest says, checked: the specification file and every item's path."""

    root: Path
    specification: Path
    items: dict[str, Path]


def _refuse(package: Path, why: str) -> BackendUnavailable:
    return BackendUnavailable(f"Core ML package {package.name} is damaged: {why}")


def _read_manifest(package: Path) -> object:
    path = package / MANIFEST
    try:
        info = path.lstat()
    except OSError:
        raise _refuse(package, f"no {MANIFEST}") from None
    if not stat.S_ISREG(info.st_mode):  # a symlink, folder or FIFO (opening a FIFO would block)
        raise _refuse(package, f"{MANIFEST} is not a regular file")
    if info.st_size > MAX_MANIFEST_BYTES:
        raise _refuse(package, f"{MANIFEST} is {info.st_size:,} bytes (at most {MAX_MANIFEST_BYTES:,})")
    try:
        with path.open("rb") as f:
            text = f.read(MAX_MANIFEST_BYTES + 1).decode("utf-8")
        return json.loads(text)
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _refuse(package, f"{MANIFEST} is not valid JSON ({type(exc).__name__})") from None


def _inside(package: Path, data: Path, identifier: str, relative: str) -> Path:
    """`relative` (a manifest item's path) as a path inside the package's Data folder, or a refusal."""
    shown = repr(relative[:80])
    if not relative or "\x00" in relative or "\\" in relative:
        raise _refuse(package, f"item {identifier[:40]!r} has an unusable path {shown}")
    pure = PurePosixPath(relative)
    if pure.is_absolute() or ".." in pure.parts:
        raise _refuse(package, f"item {identifier[:40]!r} points outside the package ({shown})")
    target = data.joinpath(*pure.parts)
    try:
        resolved = target.resolve(strict=False)
    except (OSError, RuntimeError):  # a symlink loop
        raise _refuse(package, f"item {identifier[:40]!r} path {shown} cannot be resolved") from None
    if not resolved.is_relative_to(package.resolve()):
        raise _refuse(package, f"item {identifier[:40]!r} points outside the package through a link ({shown})")
    return target


def package_name(value: str) -> str | None:
    """The sidecar's "coreml" entry as a package name beside the model: its last part, if that is a
    .mlpackage name (not "", "." or "..", which would name the model's folder or the one above)."""
    name = PurePosixPath(value.replace("\\", "/")).name
    if not name.endswith(".mlpackage") or "\x00" in name or len(name.encode("utf-8", "surrogatepass")) > 255:
        return None
    return name


def has_manifest(package: Path) -> bool:
    """Whether `package` looks like a package (has a Manifest.json) at all; any OS error is a no."""
    try:
        return os.path.lexists(package / MANIFEST)  # its type and content: check_package
    except (OSError, ValueError):
        return False


def check_package(package: Path) -> PackageLayout:
    """The package's layout, or BackendUnavailable naming what is wrong (one line)."""
    try:
        if not package.is_dir():
            raise _refuse(package, "not a folder")
        manifest = _read_manifest(package)
    except OSError as exc:  # a name too long, a permission: the package cannot be read
        raise _refuse(package, f"cannot be read ({exc.strerror or type(exc).__name__})") from None
    if not isinstance(manifest, dict):
        raise _refuse(package, f"{MANIFEST} is not a JSON object")
    if not isinstance(manifest.get("fileFormatVersion"), str):
        raise _refuse(package, f"{MANIFEST} has no fileFormatVersion")
    entries = manifest.get("itemInfoEntries")
    root = manifest.get("rootModelIdentifier")
    if not isinstance(entries, dict) or not entries:
        raise _refuse(package, f"{MANIFEST} lists no items")
    if not isinstance(root, str) or root not in entries:
        raise _refuse(package, f"{MANIFEST}'s rootModelIdentifier names no item")
    data = package / DATA_DIR
    items: dict[str, Path] = {}
    for identifier, entry in entries.items():
        if not isinstance(entry, dict) or not all(isinstance(entry.get(k, ""), str) for k in _STRING_FIELDS):
            raise _refuse(package, f"item {identifier[:40]!r} is not an object of strings")
        if "path" not in entry:
            raise _refuse(package, f"item {identifier[:40]!r} has no path")
        items[identifier] = _inside(package, data, identifier, entry["path"])
    specification = items[root]
    try:
        info = specification.lstat()
    except OSError:
        raise _refuse(package, f"the model specification {entries[root]['path'][:80]!r} is missing") from None
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(package, "the model specification is not a regular file")
    if info.st_size == 0 or info.st_size > MAX_SPEC_BYTES:
        raise _refuse(package, f"the model specification is {info.st_size:,} bytes")
    if not os.access(specification, os.R_OK):
        raise _refuse(package, "the model specification cannot be read")
    return PackageLayout(package, specification, items)
