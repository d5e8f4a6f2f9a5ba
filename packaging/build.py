"""Build the one-folder desktop bundle with PyInstaller (docs/packaging.md).

    .venv/bin/pip install -e '.[package]' && .venv/bin/python packaging/build.py

Writes dist/delegate-scope/ (Linux, Windows) or dist/Delegate Scope.app (macOS), then prints the build
time, the bundle's size with its breakdown, and fails (exit 1) when the Linux bundle is over the
450 MB budget or when a file the app needs at run time is missing from it.
Options: --dist DIR, --work DIR (PyInstaller's build folder), --json FILE (the figures as JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NAME = "delegate-scope"
BUDGET_MB = 450  # Linux budget (docs/packaging.md)


def bundle_dirs(dist: Path) -> tuple[Path, Path]:
    """(folder that holds the executable, the bundle's _internal folder = sys._MEIPASS)."""
    if sys.platform == "darwin":
        contents = dist / "Delegate Scope.app" / "Contents"
        return contents / "MacOS", contents / "Frameworks"
    return dist / NAME, dist / NAME / "_internal"


def executable(dist: Path) -> Path:
    exe_dir, _ = bundle_dirs(dist)
    return exe_dir / (f"{NAME}.exe" if sys.platform == "win32" else NAME)


def tree_size(path: Path) -> int:
    if path.is_file() or path.is_symlink():
        return path.lstat().st_size
    return sum(f.lstat().st_size for f in path.rglob("*") if f.is_file() or f.is_symlink())


# Breakdown of the bundle by what the bytes are for: the first group with a matching prefix (a path relative
# to _internal, or a file name at its top level, where PyInstaller puts the libraries others link) wins.
GROUPS = [
    ("ICU (Qt's Unicode tables, linked by QtCore)", ("PySide6/Qt/lib/libicu", "libicu")),
    ("Qt libraries (QtCore, QtGui, QtWidgets, QtOpenGL, xcb/Wayland support)", ("PySide6/Qt/lib", "libQt6", "Qt")),
    ("Qt plugins (platforms, image formats, input, themes)", ("PySide6/Qt/plugins",)),
    ("PySide6 + shiboken6 bindings", ("PySide6", "shiboken6", "libpyside6", "libshiboken6")),
    ("OpenCV (cv2 + its FFmpeg, codecs, OpenBLAS)", ("cv2", "opencv_python_headless.libs")),
    ("LiteRT (runtime, WebGPU accelerator, NPU vendor plugins)", ("ai_edge_litert", "libpywrap_litert", "ml_dtypes")),
    ("numpy (+ its OpenBLAS)", ("numpy", "numpy.libs")),
    (
        "matplotlib + Pillow, kiwisolver, contourpy, fonts (the `report` command)",
        ("matplotlib", "PIL", "pillow.libs", "kiwisolver", "fontTools", "contourpy", "mpl_toolkits"),
    ),
    ("pyqtgraph, psutil", ("pyqtgraph", "psutil")),
    ("bundled models (.tflite, labels, sidecars)", ("models",)),
    ("demo clip", ("resources",)),
    (
        "Python (libpython, stdlib, extension modules)",
        ("libpython", "python3", "base_library.zip", "lib-dynload", "Python"),
    ),
    ("system libraries (libstdc++, glib, OpenSSL libcrypto, zlib, ...)", ("lib",)),
]


def breakdown(internal: Path, exe_dir: Path) -> list[tuple[str, int]]:
    sizes: dict[str, int] = {}
    for f in internal.rglob("*"):
        if f.is_dir() and not f.is_symlink():
            continue
        rel = f.relative_to(internal).as_posix()
        group = next((label for label, prefixes in GROUPS if rel.startswith(prefixes)), "other")
        sizes[group] = sizes.get(group, 0) + f.lstat().st_size
    if exe_dir != internal:
        outside = sum(f.lstat().st_size for f in exe_dir.iterdir() if f.is_file())
        sizes["executable (bootloader + compiled Python modules), .desktop, icon"] = outside
    return sorted(sizes.items(), key=lambda kv: -kv[1])


REQUIRED = [  # what must come along intact, relative to _internal
    "models/efficientnet_lite0.tflite",
    "models/efficientnet_lite0_int8.tflite",
    "models/imagenet_labels.txt",
    "models/efficientnet_lite0.json",
    "resources/demo.mp4",
] + (["models/efficientnet_lite0.mlpackage/Manifest.json"] if sys.platform == "darwin" else [])


def check_contents(internal: Path) -> list[str]:
    problems = []
    for rel in REQUIRED:
        src, dst = ROOT / rel, internal / rel
        if not dst.is_file():
            problems.append(f"missing {rel}")
        elif dst.read_bytes() != src.read_bytes():
            problems.append(f"differs from the source tree: {rel}")
    litert = litert_package_dir()
    if litert is not None:  # every native library of the LiteRT wheel, at the same place
        suffixes = {".so", ".dylib", ".dll"}
        for lib in litert.rglob("*"):
            if lib.suffix in suffixes and lib.is_file() and lib.name.startswith("lib"):
                rel = lib.relative_to(litert.parent)
                if not (internal / rel).is_file():
                    problems.append(f"missing LiteRT library {rel.as_posix()}")
    return problems


def litert_package_dir() -> Path | None:
    try:
        import ai_edge_litert
    except ImportError:
        return None
    return Path(ai_edge_litert.__file__).resolve().parent


def build(dist: Path, work: Path) -> float:
    cmd = [
        sys.executable,
        "-m",
        "PyInstaller",
        "--noconfirm",
        "--log-level",
        "WARN",
        "--distpath",
        str(dist),
        "--workpath",
        str(work),
        str(HERE / f"{NAME}.spec"),
    ]
    print("+", " ".join(cmd), flush=True)
    started = time.perf_counter()
    subprocess.run(cmd, check=True, cwd=ROOT)
    return time.perf_counter() - started


def add_desktop_files(dist: Path) -> None:
    """Linux: the .desktop entry, its icon and the script that installs both for the user, beside the executable."""
    if not sys.platform.startswith("linux"):
        return
    exe_dir, _ = bundle_dirs(dist)
    shutil.copy2(HERE / f"{NAME}.desktop", exe_dir / f"{NAME}.desktop")
    shutil.copy2(HERE / "icon.png", exe_dir / f"{NAME}.png")
    shutil.copy2(HERE / "install-desktop-entry.sh", exe_dir / "install-desktop-entry.sh")
    os.chmod(exe_dir / "install-desktop-entry.sh", 0o755)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="output folder (default dist/)")
    parser.add_argument("--work", type=Path, default=ROOT / "build" / "pyinstaller", help="PyInstaller's work folder")
    parser.add_argument("--json", type=Path, help="write build time, size and breakdown as JSON")
    args = parser.parse_args(argv)
    dist, work = args.dist.resolve(), args.work.resolve()

    seconds = build(dist, work)
    add_desktop_files(dist)
    exe_dir, internal = bundle_dirs(dist)
    top = dist / "Delegate Scope.app" if sys.platform == "darwin" else dist / NAME
    total = tree_size(top)
    parts = breakdown(internal, exe_dir)
    print(f"\nbundle    {top}\nexecutable {executable(dist)}")
    print(f"built in  {seconds:.0f} s\nsize      {total / 1e6:.1f} MB ({total / 2**20:.1f} MiB)")
    for label, size in parts:
        print(f"  {size / 1e6:8.1f} MB  {label}")
    problems = check_contents(internal)
    over = sys.platform.startswith("linux") and total > BUDGET_MB * 1e6
    if over:
        problems.append(f"{total / 1e6:.1f} MB is over the {BUDGET_MB} MB budget")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "bundle": str(top),
                    "executable": str(executable(dist)),
                    "build_s": round(seconds, 1),
                    "size_bytes": total,
                    "breakdown": dict(parts),
                    "problems": problems,
                },
                indent=2,
            )
            + "\n",
            encoding="utf-8",
        )
    for problem in problems:
        print(f"build.py: error: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
