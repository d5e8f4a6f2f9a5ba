"""`delegate-scope delegates`: every backend, whether it can run on this machine, and why not."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from app.cli.command import Command
from app.schemas import versioned
from app.tasks.delegates import DelegateStatus, delegate_statuses

# Chromium's SwiftShader, a Vulkan driver that runs on the CPU, where Debian's `chromium` package installs it.
SWIFTSHADER_ICD = Path("/usr/lib/chromium/vk_swiftshader_icd.json")


def add_arguments(d: argparse.ArgumentParser) -> None:
    d.add_argument("--json", action="store_true", help="print JSON on stdout")


def run(args: argparse.Namespace) -> int:
    statuses = delegate_statuses()
    if args.json:
        json.dump(versioned({"delegates": [st.to_dict() for st in statuses]}), sys.stdout, indent=2)
        print()
        return 0
    # Columns as wide as their longest entry ("reference", "TensorFlow reference" overflowed fixed widths).
    name_width = max(len(st.name) for st in statuses)
    label_width = max(len(st.label) for st in statuses)
    indent = " " * (name_width + 1)
    for st in statuses:
        state = "available" if st.available else "not available"
        print(f"{st.name:<{name_width}} {st.label:<{label_width}} {state}" + (f": {st.reason}" if st.reason else ""))
        facts = (
            ("adapter", st.gpu.adapter if st.gpu else None),
            ("devices", "; ".join(st.gpu.devices) if st.gpu else None),
            ("threads", st.threads),
        )
        for key, value in facts:
            if value:
                print(f"{indent}{key}: {value}")
        hint = gpu_hint(st)
        if hint:
            print(f"{indent}hint: {hint}")
    return 0


def gpu_hint(st: DelegateStatus) -> str | None:
    """What to do when the GPU backend cannot run here: a software renderer is there but not allowed, or no
    Vulkan device LiteRT accepts (its GPU path can then still be tried on SwiftShader, on the CPU)."""
    if st.name != "gpu" or st.available:
        return None
    if st.software:
        return ("a software renderer (the CPU) is the only adapter: --allow-software-gpu runs the GPU path on it "
                "(the window: Allow a software GPU), flagged 'software' in every figure")  # fmt: skip
    if not (st.reason or "").startswith("no GPU adapter"):
        return None
    found = "installed here" if SWIFTSHADER_ICD.is_file() else "Debian: apt install chromium"
    return (
        f"no Vulkan device LiteRT accepts. To try the GPU path on the CPU, point the Vulkan loader (libvulkan1) at "
        f"Chromium's SwiftShader ({found}): VK_ICD_FILENAMES={SWIFTSHADER_ICD} delegate-scope gui --delegate gpu "
        "--allow-software-gpu (docs/howto-gpu-host.md)"
    )


COMMAND = Command(
    name="delegates",
    help="list backends and whether they can run here",
    description="List every backend with whether it can run on this machine, and why not.",
    add_arguments=add_arguments,
    run=run,
)
