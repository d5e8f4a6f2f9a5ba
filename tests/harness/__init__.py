"""Harnesses shared by tests and benchmarks/: fuzzers, the switch soak, the Vulkan fault layer."""
