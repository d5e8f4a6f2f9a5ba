"""Converted Core ML programs on disk, by model sha256 and options: the second open of a model is fast.

One entry per (model, options): a folder named by the key's digest holding a manifest and the
pieces' .mlpackage folders. Reading trusts nothing in the folder: the manifest must parse, name
this key, list only package names it could have written, and every package file must hash to what
the manifest says; otherwise the entry is removed and built again. Only folders whose names are
digests are ever removed (a foreign file or folder in the cache is left alone), entries are written
in a temporary folder and renamed into place, and the least recently used ones beyond the bounds
(entries, bytes) are removed after each build.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

FORMAT = "delegate-scope coreml programs 1"
MANIFEST = "manifest.json"
_MAX_MANIFEST_BYTES = 1 << 20
_DIGEST = re.compile(r"^[0-9a-f]{64}$")
_PACKAGE = re.compile(r"^piece[0-9]{1,6}\.mlpackage$")
_STAGING = ".building-"
_STALE_STAGING_S = 3600  # a build folder this old was left by a process that died
DEFAULT_MAX_ENTRIES = 8
DEFAULT_MAX_BYTES = 2 << 30


def default_cache_dir() -> Path:
    """DELEGATE_SCOPE_CACHE, else the platform's per-user cache folder, /delegate-scope/coreml."""
    if os.environ.get("DELEGATE_SCOPE_CACHE"):
        return Path(os.environ["DELEGATE_SCOPE_CACHE"]) / "coreml"
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "delegate-scope" / "coreml"


@dataclass(frozen=True)
class CacheKey:
    model_sha256: str
    precision: str  # a GpuPrecision value (the key is hashed as JSON)
    coreml_version: int  # decides the partitioning
    translator: int  # app.coreml_mil.translate.TRANSLATOR_VERSION
    coremltools: str  # its version: another version may write other programs

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class IO:
    name: str
    tensor: int
    shape: tuple[int, ...]


@dataclass(frozen=True)
class CachedPiece:
    piece: int
    package: str  # folder name inside the entry
    inputs: tuple[IO, ...]
    outputs: tuple[IO, ...]
    sha256: str = ""  # of the package's files (set by the cache)


@dataclass(frozen=True)
class CacheEntry:
    path: Path
    pieces: tuple[CachedPiece, ...]
    hit: bool  # read from disk (True) or built now (False)
    rebuilt_because: str | None  # why an entry on disk was not used


def tree_sha256(folder: Path) -> str:
    """The hash of a folder's regular files (relative path and bytes); a link anywhere makes it invalid."""
    h = hashlib.sha256()
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in sorted(dirs + files):
            path = Path(root) / name
            if path.is_symlink():
                raise ValueError(f"{path.relative_to(folder)} is a link")
        for name in sorted(files):
            path = Path(root) / name
            h.update(str(path.relative_to(folder).as_posix()).encode() + b"\0")
            with path.open("rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            h.update(b"\0")
    return h.hexdigest()


def _io(items: object) -> tuple[IO, ...]:
    if not isinstance(items, list):
        raise ValueError("inputs/outputs is not a list")
    out = []
    for item in items:
        if not isinstance(item, dict):
            raise ValueError("an input/output is not an object")
        name, tensor, shape = item.get("name"), item.get("tensor"), item.get("shape")
        if not (isinstance(name, str) and re.fullmatch(r"(in|out)_[0-9]+", name)):
            raise ValueError(f"bad input/output name {name!r}")
        if not isinstance(tensor, int) or not isinstance(shape, list) or not all(isinstance(d, int) for d in shape):
            raise ValueError("bad input/output tensor or shape")
        out.append(IO(name, tensor, tuple(shape)))
    return tuple(out)


def _read_entry(folder: Path, key: CacheKey) -> tuple[CachedPiece, ...]:
    """The entry's pieces; ValueError (with the reason) when anything in it is not as written."""
    manifest = folder / MANIFEST
    if folder.is_symlink() or not folder.is_dir():
        raise ValueError("the entry is not a folder")
    if manifest.is_symlink() or not manifest.is_file():
        raise ValueError("no manifest")
    if manifest.stat().st_size > _MAX_MANIFEST_BYTES:
        raise ValueError("the manifest is too large")
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (UnicodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"the manifest does not parse ({type(exc).__name__})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError("the manifest is not one this version writes")
    if data.get("key") != asdict(key):
        raise ValueError("the manifest belongs to another model or options")
    pieces = []
    items = data.get("pieces")
    if not isinstance(items, list):
        raise ValueError("the manifest lists no pieces")
    for item in items:
        if not isinstance(item, dict):
            raise ValueError("a piece is not an object")
        package, piece, digest = item.get("package"), item.get("piece"), item.get("sha256")
        if not isinstance(package, str) or not _PACKAGE.fullmatch(package):
            raise ValueError(f"bad package name {package!r}")
        if not isinstance(piece, int) or not isinstance(digest, str):
            raise ValueError("bad piece index or hash")
        path = folder / package
        if path.is_symlink() or not path.is_dir():
            raise ValueError(f"{package} is missing")
        if tree_sha256(path) != digest:
            raise ValueError(f"{package} changed since it was written")
        pieces.append(CachedPiece(piece, package, _io(item.get("inputs")), _io(item.get("outputs")), digest))
    return tuple(pieces)


def _entry_bytes(folder: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(folder, followlinks=False):
        for name in files:
            try:
                total += (Path(root) / name).lstat().st_size
            except OSError:
                pass
    return total


def _remove(folder: Path) -> None:
    if _DIGEST.fullmatch(folder.name) and not folder.is_symlink():
        shutil.rmtree(folder, ignore_errors=True)
    elif folder.is_symlink() and _DIGEST.fullmatch(folder.name):
        folder.unlink(missing_ok=True)


class ProgramCache:
    def __init__(
        self, root: Path | None = None, max_entries: int = DEFAULT_MAX_ENTRIES, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        self.root = Path(root) if root is not None else default_cache_dir()
        self.max_entries, self.max_bytes = max_entries, max_bytes

    def load_or_build(self, key: CacheKey, build: Callable[[Path], list[CachedPiece]]) -> CacheEntry:
        """The entry for `key`: read back when sound, else built by `build(folder)`, which writes the
        packages into `folder` and returns the pieces (hashes are added here)."""
        self.root.mkdir(parents=True, exist_ok=True)
        folder = self.root / key.digest()
        why = None
        if folder.exists() or folder.is_symlink():
            try:
                pieces = _read_entry(folder, key)
                os.utime(folder / MANIFEST)  # last use, for eviction
                return CacheEntry(folder, pieces, True, None)
            except (ValueError, OSError) as exc:
                why = str(exc)
                _remove(folder)
        staging = Path(tempfile.mkdtemp(prefix=_STAGING, dir=self.root))
        try:
            built = build(staging)
            pieces = tuple(
                CachedPiece(p.piece, p.package, p.inputs, p.outputs, tree_sha256(staging / p.package)) for p in built
            )
            for p in pieces:
                if not _PACKAGE.fullmatch(p.package):
                    raise ValueError(f"bad package name {p.package!r}")
            manifest = {"format": FORMAT, "key": asdict(key), "pieces": [asdict(p) for p in pieces]}
            (staging / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
            try:
                os.rename(staging, folder)
            except OSError:  # another process wrote it first: use theirs if it reads back
                shutil.rmtree(staging, ignore_errors=True)
                return CacheEntry(folder, _read_entry(folder, key), True, why)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        self.evict(keep=folder)
        return CacheEntry(folder, pieces, False, why)

    def entries(self) -> list[Path]:
        """The cache's own entries (digest-named folders), least recently used first."""
        if not self.root.is_dir():
            return []
        found = [p for p in self.root.iterdir() if _DIGEST.fullmatch(p.name) and p.is_dir() and not p.is_symlink()]

        def last_use(p: Path) -> float:
            try:
                return (p / MANIFEST).stat().st_mtime
            except OSError:
                return 0.0

        return sorted(found, key=last_use)

    def evict(self, keep: Path | None = None) -> list[Path]:
        """Remove the least recently used entries beyond the bounds; never `keep`."""
        now = time.time()
        for p in self.root.glob(_STAGING + "*"):
            try:
                if p.is_dir() and not p.is_symlink() and now - p.stat().st_mtime > _STALE_STAGING_S:
                    shutil.rmtree(p, ignore_errors=True)
            except OSError:
                pass
        entries = self.entries()
        sizes = {p: _entry_bytes(p) for p in entries}
        removed: list[Path] = []
        for p in entries:
            if len(entries) - len(removed) <= self.max_entries and sum(sizes.values()) <= self.max_bytes:
                break
            if p == keep:
                continue
            _remove(p)
            removed.append(p)
            sizes.pop(p)
        return removed
