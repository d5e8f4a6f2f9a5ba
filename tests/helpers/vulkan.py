"""Vulkan driver environments for the GPU tests: a software "GPU", or no Vulkan device at all."""

from __future__ import annotations

from pathlib import Path

# Chromium's SwiftShader: a real Vulkan driver that runs on the CPU, i.e. a software "GPU" adapter
# (the `swiftshader` fixture in tests/conftest.py skips, or fails in CI, where it is missing).
SWIFTSHADER_ICD = Path("/usr/lib/chromium/vk_swiftshader_icd.json")
# Points the Vulkan loader at a driver file that does not exist: no Vulkan device at all.
NO_VULKAN = {"VK_DRIVER_FILES": "/nonexistent/no_icd.json", "VK_ICD_FILENAMES": "/nonexistent/no_icd.json"}
