"""Live measurements: the rolling metrics window, process/system resources, and which stage bounds the rate."""
