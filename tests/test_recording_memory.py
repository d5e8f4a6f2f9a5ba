"""The recording's GPU memory column (format version 4): written from the sampler's NVML reading, empty where
NVML does not tell it, and absent from older recordings, which still read with that cell empty."""

from __future__ import annotations

import csv

from app.metrics.resources import GpuReading, ResourceReading
from app.recording.writer import COLUMNS, COLUMNS_TASKS, COLUMNS_TASKS_V3, COLUMNS_V3, RecordingWriter, read_recording
from app.system.nvml import NvmlSession, ProcessListing


def test_the_gpu_memory_column_sits_beside_the_resident_set():
    assert COLUMNS.index("gpu_mem_mb") == COLUMNS.index("rss_mb") + 1
    assert [c for c in COLUMNS if c != "gpu_mem_mb"] == COLUMNS_V3


def test_gpu_memory_round_trips_beside_an_empty_cell(tmp_path):
    rec = RecordingWriter(tmp_path / "m.csv")
    rec.add_row({"frame_id": 1, "rss_mb": 412.5, "gpu_mem_mb": 96.0})
    rec.add_row({"frame_id": 2, "rss_mb": 413.0, "gpu_mem_mb": None})  # NVML could not say: an empty cell
    assert rec.stop().rows == 2
    first, second = read_recording(tmp_path / "m.csv").rows
    assert (first["rss_mb"], first["gpu_mem_mb"]) == ("412.5", "96")
    assert (second["rss_mb"], second["gpu_mem_mb"]) == ("413", "")


def test_a_version_3_recording_is_read_with_the_gpu_memory_cell_empty(tmp_path):
    for name, header, full in (("v3.csv", COLUMNS_V3, COLUMNS), ("v3t.csv", COLUMNS_TASKS_V3, COLUMNS_TASKS)):
        path = tmp_path / name
        with path.open("w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerow(["2026-12-01T10:00:00.000+00:00", "0.5", "", "7"] + ["1"] * (len(header) - 4))
        (row,) = read_recording(path).rows
        assert set(row) == set(full) and row["gpu_mem_mb"] == "", name
        assert row["rss_mb"] == row["gpu_sm_clock_mhz"] == "1", name


def test_the_samplers_gpu_reading_carries_nvmls_memory_into_its_reading():
    gpu = GpuReading(gpu_util_pct=40.0, gpu_name="0: NVIDIA H100", gpu_process_listed=True, gpu_mem_mb=96.0)
    reading = ResourceReading.of(1.0, rss_mb=400.0, gpu=gpu)
    assert (reading.rss_mb, reading.gpu_mem_mb) == (400.0, 96.0)
    assert ResourceReading.of(1.0, rss_mb=400.0).gpu_mem_mb is None  # no NVML: unknown, not zero


def test_a_listing_gives_memory_only_where_nvml_tells_it():
    mib = 1024 * 1024
    assert ProcessListing(None).used_mb is None  # none of the processes listed
    assert ProcessListing(0, 96 * mib).used_mb == 96.0
    assert ProcessListing(1, 0, hidden=True).used_mb is None  # listed, every figure withheld
    assert ProcessListing(0, 10 * mib, hidden=True).used_mb == 10.0  # the figures it gave


def test_a_session_without_nvml_lists_nothing():
    session = NvmlSession()
    try:
        listing = session.list_processes([0])  # pid 0 holds no GPU context anywhere
        assert listing.first_gpu is None and listing.used_mb is None
    finally:
        session.close()
