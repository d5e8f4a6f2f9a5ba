"""`delegates` as text: one row per backend, the columns aligned whatever the names' lengths."""

from __future__ import annotations

import re

import pytest

from tests.helpers.cli import run_cli


@pytest.mark.slow
def test_every_row_puts_its_state_in_the_same_column():
    run = run_cli("delegates")
    assert run.returncode == 0, run.stderr
    rows = [line for line in run.stdout.splitlines() if line and not line.startswith(" ")]
    assert [row.split()[0] for row in rows] == ["cpu", "gpu", "coreml", "reference"]
    # "reference TensorFlow reference available" ran its columns together before.
    columns = {re.search(r"\b(not available|available)\b", row).start() for row in rows}
    assert len(columns) == 1, rows
    assert all(row.startswith(f"{row.split()[0]:<9} ") for row in rows)


def _gpu_hint(stdout: str) -> str:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("gpu "))
    block = [start, *(i for i in range(start + 1, len(lines)) if lines[i].startswith(" "))]
    hints = [lines[i].strip() for i in block if lines[i].strip().startswith("hint: ")]
    return hints[0] if hints else ""


def test_no_usable_adapter_gives_the_software_vulkan_recipe():
    from tests.helpers.vulkan import NO_VULKAN

    run = run_cli("delegates", env=NO_VULKAN)
    assert run.returncode == 0, run.stderr
    hint = _gpu_hint(run.stdout)
    assert "VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json" in hint, run.stdout
    assert "--allow-software-gpu" in hint and "SwiftShader" in hint


@pytest.mark.slow
def test_a_software_renderer_alone_points_to_allow_software_gpu(swiftshader: dict):
    run = run_cli("delegates", env=swiftshader)
    assert run.returncode == 0, run.stderr
    assert "software renderer" in run.stdout
    hint = _gpu_hint(run.stdout)
    assert hint.startswith("hint: a software renderer") and "--allow-software-gpu" in hint, run.stdout
    assert "VK_ICD_FILENAMES" not in hint
