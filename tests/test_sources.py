"""Frame sources against real files and real OpenCV: videos written here, the bundled demo clip,
image folders, the synthetic source, and a camera index that does not exist."""

from __future__ import annotations

import itertools
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import psutil
import pytest

from app.errors import SourceError, SourceLost
from app.sources import Frame, FrameSource, base, list_cameras, open_source, parse_source_spec
from tests.helpers.cli import assert_one_line_error, run_cli
from tests.helpers.paths import PHOTOS
from tests.helpers.video import VIDEO_FPS, VIDEO_FRAMES, VIDEO_SIZE, grey_level, write_video
from tests.helpers.wait import run_with_deadline

# Its module-scoped fixtures are built once: the module's tests stay on one xdist worker, in order.
pytestmark = pytest.mark.xdist_group("sources")


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("videos")
    return {
        "mp4": write_video(folder / "clip.mp4", "mp4v"),
        "avi": write_video(folder / "clip.avi", "MJPG", frames=80),
    }


def drain(source: FrameSource, limit: int = 10_000) -> list[Frame]:
    frames = []
    while len(frames) < limit and (frame := source.read()) is not None:
        frames.append(frame)
    return frames


def mean_grey(frame: Frame) -> float:
    return float(frame.image[:60, 80:].mean())  # a corner without the printed number


def rate(frames: list[Frame]) -> float:
    return (len(frames) - 1) / (frames[-1].captured_at - frames[0].captured_at)


# --- spec strings --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("camera:2", ("camera", "2")),
        ("camera", ("camera", "0")),
        ("video:/clips/a.mp4", ("video", "/clips/a.mp4")),
        ("clip.mp4", ("video", "clip.mp4")),
        ("C:\\clips\\a.mp4", ("video", "C:\\clips\\a.mp4")),
        ("images:/data/photos", ("images", "/data/photos")),
        ("photo.JPG", ("images", "photo.JPG")),
        ("demo", ("demo", "")),
        ("synthetic", ("synthetic", "")),
        ("synthetic:320x240@60", ("synthetic", "320x240@60")),
        ("  Synthetic:320x240  ", ("synthetic", "320x240")),
    ],
)
def test_parse_source_spec(spec: str, expected: tuple[str, str]) -> None:
    assert parse_source_spec(spec) == expected


def test_a_bare_folder_is_an_image_slideshow() -> None:
    assert parse_source_spec(str(PHOTOS)) == ("images", str(PHOTOS))


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("foo:bar", "unknown source kind 'foo'"),
        ("synthetic:axb", "synthetic:640x480@30"),
        ("synthetic:4x4", "out of range"),
        ("synthetic:640x480@0", "out of range"),
        ("camera:x", "camera index must be a number"),
        ("camera:-1", "camera index must be a number"),
        ("demo:extra", "demo takes no argument"),
        ("video:", "needs a path"),
        ("   ", "empty source"),
    ],
)
def test_bad_specs_raise_one_clear_source_error(spec: str, fragment: str) -> None:
    with pytest.raises(SourceError) as caught:
        parse_source_spec(spec)
    message = str(caught.value)
    assert fragment in message and "\n" not in message
    with pytest.raises(SourceError):
        open_source(spec)


@pytest.mark.parametrize("spec", ["bogus:thing", "camera:x", "synthetic:4x4"])
def test_a_source_string_that_names_no_source_is_a_usage_error(spec: str) -> None:
    """What the user typed is wrong (exit 2), not a source that failed to open (exit 6)."""
    run = run_cli("bench", "--source", spec, "--frames", "3")
    assert_one_line_error(run, 2, spec)


# --- video files ---------------------------------------------------------------------------


def test_video_info_is_read_from_the_file(videos: dict[str, Path]) -> None:
    with open_source(f"video:{videos['mp4']}") as source:
        info = source.info
    assert (info.kind, info.width, info.height) == ("video", *VIDEO_SIZE)
    assert info.fps == pytest.approx(VIDEO_FPS)
    assert info.frame_count == VIDEO_FRAMES
    assert info.warnings == []
    assert "clip.mp4" in info.description


# --- pacing --------------------------------------------------------------------------------


class _FakeTime(threading.Event):
    """A stop event whose waits move a fake clock instead of sleeping: the pacer's schedule, exactly."""

    def __init__(self, now: float = 100.0) -> None:
        super().__init__()
        self.now = now

    def clock(self) -> float:
        return self.now

    def wait(self, timeout: float | None = None) -> bool:
        assert timeout is not None
        self.now += timeout
        return self.is_set()


def test_the_pacer_makes_frame_k_due_at_the_start_plus_k_periods() -> None:
    fake = _FakeTime()
    pacer = base._Pacer(25.0, fake, clock=fake.clock)
    assert pacer.wait() == 0.0  # the first frame is due at once
    waited = []
    for _ in range(4):
        fake.now += 0.01  # decoding the next frame takes 10 ms: waited out of the period, never added
        waited.append(pacer.wait())
    assert waited == pytest.approx([0.03] * 4) and fake.now == pytest.approx(100.16)  # 4 periods of 40 ms
    fake.now += 0.06  # 20 ms behind (under the lag limit): due at once, and the schedule holds
    assert pacer.wait() == 0.0
    assert pacer.wait() == pytest.approx(0.02) and fake.now == pytest.approx(100.24)
    fake.now += 1.0  # a second behind (a suspended laptop): the schedule starts again, no burst to catch up
    assert pacer.wait() == 0.0
    assert pacer.wait() == pytest.approx(0.04)
    fake.set()  # closed while waiting: no frame
    assert pacer.wait() is None


def _record_pacers(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The rates the sources opened from now on pace at (the real pacer, watched)."""
    rates: list[float] = []

    class Watched(base._Pacer):
        def __init__(self, fps: float, stop: threading.Event) -> None:
            rates.append(fps)
            super().__init__(fps, stop)

    monkeypatch.setattr(base, "_Pacer", Watched)
    return rates


def assert_paced_at(frames: list[Frame], fps: float) -> None:
    """Frame k comes no earlier than k periods after the first, whatever the machine's load (a late frame
    only moves the schedule later): read over the run, never faster than `fps` (10% of slack for the first
    frame's own stamp, which a busy machine can delay); each frame after the first says how long it waited."""
    assert rate(frames) <= 1.10 * fps, rate(frames)
    assert all(f.paced_ms >= 0 for f in frames) and any(f.paced_ms > 0 for f in frames[1:]), frames


@pytest.mark.slow
@pytest.mark.timeout(30)
def test_paced_video_runs_at_the_files_frame_rate(videos: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    paced_at = _record_pacers(monkeypatch)
    with open_source(str(videos["mp4"]), loop=False) as source:
        frames = drain(source)
    assert paced_at == [pytest.approx(VIDEO_FPS)]
    assert len(frames) == VIDEO_FRAMES
    assert_paced_at(frames, VIDEO_FPS)
    assert [f.index for f in frames] == list(range(VIDEO_FRAMES))
    assert all(b.captured_at > a.captured_at and b.wall_time > a.wall_time for a, b in itertools.pairwise(frames))


@pytest.mark.timeout(30)
def test_unpaced_video_runs_faster_than_its_frame_rate(
    videos: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    paced_at = _record_pacers(monkeypatch)
    with open_source(f"video:{videos['mp4']}", pace=False, loop=False) as source:
        frames = drain(source)
    assert len(frames) == VIDEO_FRAMES
    assert paced_at == [] and all(f.paced_ms == 0 for f in frames)  # never waits for a frame to be due


@pytest.mark.timeout(30)
def test_video_without_loop_ends_and_stays_ended(videos: dict[str, Path]) -> None:
    source = open_source(f"video:{videos['mp4']}", pace=False, loop=False)
    frames = drain(source)
    assert [mean_grey(f) for f in frames[:3]] == pytest.approx([grey_level(i) for i in range(3)], abs=3)
    assert source.read() is None and source.read() is None
    source.close()


@pytest.mark.timeout(30)
def test_looping_video_starts_again_and_keeps_counting(videos: dict[str, Path]) -> None:
    with open_source(f"video:{videos['mp4']}", pace=False, loop=True) as source:
        frames = drain(source, limit=2 * VIDEO_FRAMES + 5)
    assert [f.index for f in frames] == list(range(2 * VIDEO_FRAMES + 5))
    for lap_start in (VIDEO_FRAMES, 2 * VIDEO_FRAMES):
        assert mean_grey(frames[lap_start]) == pytest.approx(mean_grey(frames[0]), abs=3)
        assert mean_grey(frames[lap_start - 1]) == pytest.approx(grey_level(VIDEO_FRAMES - 1), abs=3)


def test_video_files_decode_on_the_capture_thread_alone() -> None:
    """FFmpeg's default decoder threads (one per core) took the inference thread's core."""
    process = psutil.Process()
    before = process.num_threads()
    with open_source("demo", pace=False) as source:
        for _ in range(5):
            assert source.read() is not None
        assert process.num_threads() <= before  # FFmpeg by default: 3 more here (2 cores)


def test_a_frames_pixels_never_change(videos: dict[str, Path]) -> None:
    """A fresh array per frame, or a read-only one handed out again (the synthetic cycle)."""
    for spec in (f"video:{videos['mp4']}", f"images:{PHOTOS / 'coffee.jpg'}", "synthetic:64x48"):
        with open_source(spec, pace=False) as source:
            first = source.read()
            assert first is not None
            kept = first.image.copy()
            later = [source.read() for _ in range(3)]
        for frame in later:
            assert frame is not None
            assert not np.shares_memory(first.image, frame.image) or not first.image.flags.writeable, spec
        assert np.array_equal(first.image, kept), f"{spec}: a later read changed an earlier frame"
        assert first.image.dtype == np.uint8 and first.image.ndim == 3 and first.image.shape[2] == 3
        assert first.image.flags.writeable == (not spec.startswith("synthetic"))


@pytest.mark.parametrize(
    ("make", "fragment"),
    [
        (lambda tmp: tmp / "missing.mp4", "video file not found"),
        (lambda tmp: tmp, "video path is a folder"),
        (lambda tmp: (tmp / "notes.mp4").write_text("not a video") and tmp / "notes.mp4", "not a readable video"),
        (lambda tmp: (tmp / "empty.avi").write_bytes(b"") or tmp / "empty.avi", "not a readable video"),
    ],
)
def test_unopenable_videos_raise_source_error(
    tmp_path: Path, make: Callable[[Path], Path], fragment: str, capfd: pytest.CaptureFixture[str]
) -> None:
    path = make(tmp_path)
    with pytest.raises(SourceError) as caught:
        open_source(f"video:{path}")
    assert fragment in str(caught.value) and str(path) in str(caught.value)
    assert not isinstance(caught.value, SourceLost)
    assert capfd.readouterr().err == ""  # FFmpeg's complaints were captured, not printed


def truncate(source: Path, dest: Path, fraction: float = 0.5) -> Path:
    data = source.read_bytes()
    dest.write_bytes(data[: int(len(data) * fraction)])
    return dest


@pytest.mark.timeout(30)
def test_truncated_avi_raises_source_lost_instead_of_hanging(videos: dict[str, Path], tmp_path: Path) -> None:
    # The AVI header keeps the full frame count, so reading stops well before it.
    cut = truncate(videos["avi"], tmp_path / "cut.avi")
    source = open_source(f"video:{cut}", pace=False, loop=False)
    assert source.info.frame_count == 80
    seen: list[Frame] = []

    def read_all() -> None:
        while (frame := source.read()) is not None:
            seen.append(frame)

    with pytest.raises(SourceLost, match=r"stopped after \d+ of its 80 frames \(truncated or damaged file\?\)"):
        run_with_deadline(read_all, 10)
    assert 10 < len(seen) < 80
    assert source.read() is None  # not looping: after the loss it has ended
    source.close()


@pytest.mark.timeout(30)
def test_truncated_avi_that_loops_plays_again_after_the_loss(videos: dict[str, Path], tmp_path: Path) -> None:
    cut = truncate(videos["avi"], tmp_path / "cut.avi")
    with open_source(f"video:{cut}", pace=False, loop=True) as source:
        first_lap = run_with_deadline(lambda: drain_until_lost(source), 10)
        second_lap = run_with_deadline(lambda: drain_until_lost(source), 10)
    assert isinstance(first_lap, list) and isinstance(second_lap, list)
    assert len(second_lap) == len(first_lap)
    assert second_lap[0].index == first_lap[-1].index + 1


def drain_until_lost(source: FrameSource) -> list[Frame]:
    frames = []
    try:
        while (frame := source.read()) is not None:
            frames.append(frame)
    except SourceLost:
        return frames
    raise AssertionError("a looping truncated video should report the loss, not end")


@pytest.mark.timeout(30)
def test_truncated_mp4_fails_to_open_or_ends_but_never_hangs(videos: dict[str, Path], tmp_path: Path) -> None:
    cut = truncate(videos["mp4"], tmp_path / "cut.mp4")

    def attempt() -> str:
        try:
            with open_source(f"video:{cut}", pace=False, loop=False) as source:
                drain(source)
        except SourceError as exc:  # SourceLost included
            return str(exc)
        return "ended"

    outcome = run_with_deadline(attempt, 10)
    # The writer puts the MP4 index (moov) at the end: without it nothing can be read.
    assert outcome == f"not a readable video: {cut}" or outcome == "ended" or "stopped after" in str(outcome)


@pytest.mark.timeout(30)
def test_video_damaged_in_the_middle_never_hangs(videos: dict[str, Path], tmp_path: Path) -> None:
    data = bytearray(videos["avi"].read_bytes())
    middle = len(data) // 2
    data[middle : middle + len(data) // 5] = np.random.default_rng(0).bytes(len(data) // 5)
    damaged = tmp_path / "damaged.avi"
    damaged.write_bytes(bytes(data))
    source = open_source(f"video:{damaged}", pace=False, loop=False)
    # FFmpeg skips what it cannot decode: fewer frames than the header promises, which is a loss.
    with pytest.raises(SourceLost, match="truncated or damaged"):
        run_with_deadline(lambda: drain(source), 10)
    source.close()


# --- the bundled demo clip -----------------------------------------------------------------


def test_demo_clip_opens_with_its_real_size_and_rate() -> None:
    with open_source("demo") as source:
        info = source.info
        frame = source.read()
    assert (info.kind, info.width, info.height, info.fps, info.frame_count) == ("demo", 1280, 720, 30.0, 600)
    assert frame is not None and frame.image.shape == (720, 1280, 3)
    clip = Path(__file__).resolve().parent.parent / "resources" / "demo.mp4"
    assert clip.stat().st_size < 4 * 1024 * 1024


# --- still images --------------------------------------------------------------------------


@pytest.fixture
def photo_folder(tmp_path: Path) -> Path:
    for name in ("chelsea.jpg", "coffee.jpg"):
        shutil.copy(PHOTOS / name, tmp_path / name)
    (tmp_path / "b_junk.jpg").write_text("this is not a JPEG")
    (tmp_path / "notes.txt").write_text("ignored: not an image suffix")
    return tmp_path


@pytest.mark.timeout(30)
def test_image_folder_plays_each_image_and_skips_junk(photo_folder: Path) -> None:
    with open_source(f"images:{photo_folder}", pace=False, loop=False, fps=10) as source:
        info = source.info
        frames = drain(source)
    assert info.kind == "images" and info.fps == 10
    assert [w for w in info.warnings if "b_junk.jpg" in w], info.warnings
    assert len(info.warnings) == 1
    per_image = 20  # 10 fps x 2 s
    assert len(frames) == info.frame_count == 2 * per_image
    chelsea, coffee = cv2.imread(str(PHOTOS / "chelsea.jpg")), cv2.imread(str(PHOTOS / "coffee.jpg"))
    assert all(np.array_equal(f.image, chelsea) for f in frames[:per_image])
    assert all(np.array_equal(f.image, coffee) for f in frames[per_image:])


@pytest.mark.timeout(30)
def test_image_that_looks_right_but_does_not_decode_is_skipped_when_its_turn_comes(photo_folder: Path) -> None:
    (photo_folder / "d_damaged.jpg").write_bytes(b"\xff\xd8\xff\xe0" + bytes(200))
    with open_source(f"images:{photo_folder}", pace=False, loop=True, fps=5) as source:
        frames = drain(source, limit=35)  # 10 per image: chelsea, coffee, (damaged skipped), chelsea again
        warnings = source.info.warnings
    assert any("d_damaged.jpg" in w for w in warnings), warnings
    assert np.array_equal(frames[20].image, frames[0].image)
    assert [f.index for f in frames] == list(range(35))


@pytest.mark.timeout(30)
def test_paced_slideshow_runs_at_its_fps(photo_folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paced_at = _record_pacers(monkeypatch)
    with open_source(f"images:{photo_folder}", fps=20) as source:
        frames = drain(source, limit=21)
    assert paced_at == [20]
    assert_paced_at(frames, 20)


def test_empty_folder_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="no images"):
        open_source(f"images:{tmp_path}")


def test_folder_of_junk_is_a_source_error(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(b"nope")
    (tmp_path / "b.jpg").write_bytes(b"\xff\xd8\xff" + bytes(20))
    with pytest.raises(SourceError, match="no readable image"):
        open_source(f"images:{tmp_path}")


def test_missing_and_unreadable_single_images(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="image path not found"):
        open_source(f"images:{tmp_path / 'nope.jpg'}")
    junk = tmp_path / "junk.png"
    junk.write_text("text")
    with pytest.raises(SourceError, match="not a readable image"):
        open_source(f"images:{junk}")


# --- synthetic -----------------------------------------------------------------------------


def test_synthetic_frames_are_deterministic_and_change() -> None:
    with open_source("synthetic:96x64@30", pace=False) as a, open_source("synthetic:96x64@30", pace=False) as b:
        run_a, run_b = drain(a, limit=5), drain(b, limit=5)
    assert a.info.width == 96 and a.info.height == 64 and a.info.fps == 30
    assert all(np.array_equal(x.image, y.image) for x, y in zip(run_a, run_b, strict=True))
    assert all(not np.array_equal(x.image, y.image) for x, y in itertools.pairwise(run_a))


def test_synthetic_defaults_and_options() -> None:
    with open_source("synthetic") as source:
        assert (source.info.width, source.info.height, source.info.fps) == (640, 480, 30.0)
    with open_source("synthetic", width=320, height=200, fps=12) as source:
        assert (source.info.width, source.info.height, source.info.fps) == (320, 200, 12.0)
        assert source.read().image.shape == (200, 320, 3)  # type: ignore[union-attr]


@pytest.mark.timeout(30)
def test_paced_synthetic_source_holds_its_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    paced_at = _record_pacers(monkeypatch)
    with open_source("synthetic:64x48@50") as source:
        frames = drain(source, limit=51)
    assert paced_at == [50]
    assert_paced_at(frames, 50)


# --- closing -------------------------------------------------------------------------------


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kind", ["synthetic", "video", "images"])
def test_close_from_another_thread_unblocks_a_paced_read(kind: str, videos: dict[str, Path]) -> None:
    spec = {"synthetic": "synthetic:64x48@0.01", "video": f"video:{videos['mp4']}", "images": f"images:{PHOTOS}"}[kind]
    source = open_source(spec, fps=0.01)  # a frame every 100 s: only the close can end the wait in time
    assert source.read() is not None  # the first frame is due at once
    closed_at: list[float] = []

    def close_soon() -> None:
        time.sleep(0.2)
        closed_at.append(time.monotonic())
        source.close()

    threading.Thread(target=close_soon).start()
    assert source.read() is None
    returned_at = time.monotonic()
    assert closed_at and returned_at - closed_at[0] < 10  # at once (ms); the next frame was 100 s away
    assert source.read() is None
    source.close()  # idempotent


def test_close_before_reading() -> None:
    source = open_source("synthetic")
    source.close()
    source.close()
    assert source.read() is None


# --- cameras -------------------------------------------------------------------------------


def test_missing_camera_is_a_quick_quiet_source_error(capfd: pytest.CaptureFixture[str]) -> None:
    start = time.monotonic()
    with pytest.raises(SourceError) as caught:
        open_source("camera:99")
    assert time.monotonic() - start < 5
    assert str(caught.value) == "camera 99 did not open (no such device?)"
    assert capfd.readouterr().err == ""


def has_camera() -> bool:
    return sys.platform.startswith("linux") and Path("/dev/video0").exists()


def test_list_cameras_is_quick_and_quiet(capfd: pytest.CaptureFixture[str]) -> None:
    start = time.monotonic()
    cameras = list_cameras()
    assert time.monotonic() - start < 5
    assert capfd.readouterr().err == ""
    if sys.platform.startswith("linux") and not list(Path("/dev").glob("video*")):
        assert cameras == []
    for camera in cameras:
        assert camera.spec == f"camera:{camera.index}" and camera.width > 0 and camera.height > 0


@pytest.mark.skipif(not has_camera(), reason="needs a camera (/dev/video0); this machine has none")
@pytest.mark.timeout(60)
def test_real_camera_reports_what_it_delivers() -> None:
    with open_source("camera:0", width=640, height=480) as source:
        frames = [source.read() for _ in range(10)]
    assert all(f is not None for f in frames)
    first = frames[0]
    assert first is not None
    assert first.image.shape == (source.info.height, source.info.width, 3)
    assert source.info.fps > 0


def test_video_files_decode_on_one_thread_on_small_machines_and_two_on_large(monkeypatch) -> None:
    """1 FFmpeg thread up to 4 usable CPUs (2 took the inference thread's core on a 2-CPU machine), 2 above
    (on a 16-CPU GPU host the unpaced GPU pipeline ran 1.5x the frames with 2): docs/pipeline.md."""
    from app.sources import video

    for cpus, threads in ((1, 1), (2, 1), (4, 1), (5, 2), (16, 2)):
        monkeypatch.setattr(video.os, "sched_getaffinity", lambda _pid, n=cpus: set(range(n)))
        assert video.default_decode_threads() == threads, cpus
        source = video.VideoSource(video.demo_clip_path(), spec="demo", kind="demo", pace=False)
        try:
            assert source._decode_threads == threads
        finally:
            source.close()
