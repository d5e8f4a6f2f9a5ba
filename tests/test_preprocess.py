from dataclasses import replace

import cv2
import numpy as np
import pytest

from app.model.preprocess import Preprocessor, as_bgr_uint8, centre_crop_box
from app.model.spec import ModelSpec, Normalization, load_model_spec
from tests.helpers.paths import TEST_MODELS

# Its module-scoped fixtures are built once: the module's tests stay on one xdist worker, in order.
pytestmark = pytest.mark.xdist_group("preprocess")


def test_centre_crop_keeps_the_model_aspect():
    box = centre_crop_box(1280, 720, 1.0)
    assert (box.x, box.y, box.width, box.height) == (280, 0, 720, 720)
    box = centre_crop_box(480, 640, 1.0)
    assert (box.x, box.y, box.width, box.height) == (0, 80, 480, 480)
    box = centre_crop_box(1000, 1000, 2.0)
    assert (box.width, box.height) == (1000, 500)


@pytest.fixture(scope="module")
def spec():
    return load_model_spec(TEST_MODELS / "dynamic_batch_logits.tflite")


def _image_input(spec: ModelSpec, **changes: object) -> ModelSpec:
    """`spec` with its image input changed: the inputs are the spec's truth, its `input` is read from them."""
    inputs = list(spec.inputs)
    inputs[spec.image_input or 0] = replace(spec.input, **changes)
    return replace(spec, inputs=tuple(inputs))


def test_float_normalisation_matches_the_formula_on_a_flat_frame(spec):
    frame = np.full((20, 30, 3), (10, 20, 30), np.uint8)  # BGR
    out = Preprocessor(replace(spec, normalization=Normalization((127.0,) * 3, (128.0,) * 3)))(frame)
    assert out.shape == (1, 8, 8, 3) and out.dtype == np.float32
    np.testing.assert_allclose(out[0, 0, 0], [(30 - 127) / 128, (20 - 127) / 128, (10 - 127) / 128], rtol=1e-6)


def test_quantized_inputs_apply_the_tensor_scale_and_zero_point(spec):
    int8_spec = replace(
        _image_input(spec, dtype="int8", scale=0.0078125, zero_point=-1),
        normalization=Normalization((127.0,) * 3, (128.0,) * 3),
    )
    frame = np.zeros((8, 8, 3), np.uint8)
    frame[..., 2], frame[..., 1], frame[..., 0] = 255, 127, 0  # R, G, B
    out = Preprocessor(int8_spec)(frame)
    assert out.dtype == np.int8
    # real = (x-127)/128 ; q = real/0.0078125 - 1 = x - 127 - 1, clipped to int8
    assert out[0, 0, 0].tolist() == [127, -1, -128]


def test_raw_uint8_and_int8_inputs(spec):
    frame = np.full((8, 8, 3), 200, np.uint8)
    uint8 = replace(_image_input(spec, dtype="uint8", scale=1.0, zero_point=0), normalization=Normalization(raw=True))
    assert Preprocessor(uint8)(frame)[0, 0, 0].tolist() == [200, 200, 200]
    int8 = replace(_image_input(spec, dtype="int8", scale=1.0, zero_point=0), normalization=Normalization(raw=True))
    assert Preprocessor(int8)(frame)[0, 0, 0].tolist() == [72, 72, 72]


def test_grey_bgra_and_16_bit_frames_are_converted_and_others_refused():
    assert as_bgr_uint8(np.zeros((4, 4), np.uint8)).shape == (4, 4, 3)
    assert as_bgr_uint8(np.zeros((4, 4, 4), np.uint8)).shape == (4, 4, 3)
    assert as_bgr_uint8(np.full((4, 4, 3), 65535, np.uint16))[0, 0, 0] == 255
    with pytest.raises(ValueError, match="dtype"):
        as_bgr_uint8(np.zeros((4, 4, 3), np.float32))
    with pytest.raises(ValueError, match="shape"):
        as_bgr_uint8(np.zeros((4, 4, 5), np.uint8))


def test_fast_shrink_stays_close_to_area_averaging():
    from app.model.image_files import read_image
    from app.model.preprocess import shrink
    from tests.helpers.paths import PHOTOS

    crop = read_image(PHOTOS / "rocket.jpg")[:, 106:533]  # 427x427 centre square
    reference = cv2.resize(crop, (100, 100), interpolation=cv2.INTER_AREA).astype(float)
    assert np.abs(shrink(crop, 100, 100).astype(float) - reference).mean() < 1.0  # grey levels of 255
    assert shrink(crop, 600, 600).shape == (600, 600, 3)  # enlarging: bilinear


def test_shrink_takes_two_steps_where_an_axis_shrinks_more_than_twice_and_one_exact_call_elsewhere():
    from app.model.preprocess import shrink

    frame = np.random.default_rng(3).integers(0, 256, (720, 1280, 3), np.uint8)

    def two_steps(image: np.ndarray, w: int, h: int) -> np.ndarray:
        doubled = cv2.resize(image, (2 * w, 2 * h), interpolation=cv2.INTER_LINEAR)
        return cv2.resize(doubled, (w, h), interpolation=cv2.INTER_AREA)

    # One axis more than 2x (a 512x512 segmenter: 2.5 and 1.41), both (a 128x72 letterbox, whole ratios too).
    for w, h in ((512, 512), (128, 72), (16, 16)):
        assert np.array_equal(shrink(frame, w, h), two_steps(frame, w, h)), (w, h)
    photo = frame[:400, :400]  # 400 -> 224: neither axis past 2x, one exact call
    assert np.array_equal(shrink(photo, 224, 224), cv2.resize(photo, (224, 224), interpolation=cv2.INTER_AREA))


def test_a_letterbox_box_holds_the_whole_frame_centred_at_the_inputs_aspect():
    from app.model.preprocess import CropBox, letterbox_box

    assert letterbox_box(600, 400, 1.0) == CropBox(0, -100, 600, 600)  # bars above and below
    assert letterbox_box(400, 600, 1.0) == CropBox(-100, 0, 600, 600)  # bars left and right
    assert letterbox_box(640, 480, 4 / 3) == CropBox(0, 0, 640, 480)  # the same aspect: no bars


def test_a_letterboxing_model_sees_the_frame_unstretched_between_black_bars(tmp_path):
    from tests.builders.mediapipe_models import constant_outputs

    model = tmp_path / "hand.tflite"  # 21 hand points: MediaPipe's graph letterboxes (keep_aspect_ratio)
    model.write_bytes(constant_outputs(64, [("Identity", np.zeros(63, np.float32)),
                                            ("Identity_1", np.array([0.9], np.float32))]))  # fmt: skip
    spec = load_model_spec(model)
    assert spec.letterboxes and not spec.crops
    pre = Preprocessor(spec)
    frame = np.full((40, 80, 3), 200, np.uint8)  # 2:1, grey
    rgb = pre.rgb(frame)
    assert rgb.shape == (64, 64, 3)
    assert (rgb[:16] == 0).all() and (rgb[48:] == 0).all()  # black bars, a quarter of the height each
    assert (rgb[17:47] == 200).all()  # the frame between them, its aspect kept
    assert pre.crop_box(80, 40).y == -20 and pre.crop_box(80, 40).height == 80  # results map back through it


@pytest.fixture(scope="module")
def rgba_segmenter_spec(tmp_path_factory: pytest.TempPathFactory) -> ModelSpec:
    from tests.builders.any_models import rgba_segmenter

    model = tmp_path_factory.mktemp("rgba") / "rgba_segmenter.tflite"  # 16x16x4 in, 8x8x2 logits out
    model.write_bytes(rgba_segmenter(16, 8))
    return load_model_spec(model)


def test_a_4_channel_input_gets_an_opaque_alpha_and_a_segmenter_s_an_empty_mask(rgba_segmenter_spec, tmp_path):
    from tests.builders.any_models import channels

    classifier = tmp_path / "rgba_classifier.tflite"
    classifier.write_bytes(channels(4))
    frame = np.full((20, 20, 3), 100, np.uint8)
    alpha = Preprocessor(load_model_spec(classifier))(frame)  # [-1, 1]: 255 is 1
    assert not load_model_spec(classifier).previous_mask and (alpha[..., 3] == 1.0).all()
    assert rgba_segmenter_spec.previous_mask
    masked = Preprocessor(rgba_segmenter_spec)(frame)  # [0, 1], as MediaPipe's hair segmentation graph feeds it
    assert (masked[..., 3] == 0.0).all() and np.allclose(masked[..., :3], 100 / 255)


def test_the_previous_mask_is_the_last_output_s_foreground_resized_into_a_copy(rgba_segmenter_spec):
    from app.model.preprocess import PreviousMask

    spec = rgba_segmenter_spec
    tensor = Preprocessor(spec)(np.full((16, 16, 3), 100, np.uint8)).copy()
    given = tensor.copy()
    feedback = PreviousMask(spec)
    assert feedback.empty and feedback.fed(tensor) is tensor  # the first frame: the preprocessed empty mask
    logits = np.zeros((1, 8, 8, 2), np.float32)
    logits[0, :, :4, 1] = 30.0  # class 1 certain on the left half
    feedback.remember([logits])
    fed = feedback.fed(tensor)
    assert fed is not tensor and np.array_equal(tensor, given)  # never written: the tensor may be cached, shared
    np.testing.assert_array_equal(fed[..., :3], tensor[..., :3])
    expected = cv2.resize(np.where(np.arange(8) < 4, 255, 127).astype(np.uint8)[None].repeat(8, 0), (16, 16))
    np.testing.assert_allclose(fed[0, :, :, 3], expected / 255, rtol=1e-6)  # scaled like a pixel: [0, 1]
    assert fed[0, :, :7, 3].min() == 1.0 and fed[0, :, 9:, 3].max() == np.float32(127 / 255)


def test_a_cached_tensor_never_carries_a_mask(rgba_segmenter_spec):
    """The repeat cache hands every frame of one picture the same tensor: the mask goes into a copy, so the
    next frame of that picture (or the other side of an A/B comparison) starts from the empty mask."""
    import time

    from app.model.preprocess import PreviousMask
    from app.pipeline import RgbCache
    from app.sources import Frame

    spec, cache = rgba_segmenter_spec, RgbCache()
    pre, feedback = Preprocessor(spec), PreviousMask(spec)
    image = np.full((16, 16, 3), 100, np.uint8)
    first, _, _ = cache.tensor(Frame(0, image, time.monotonic(), time.time(), content_id=7), pre)
    feedback.remember([np.full((1, 8, 8, 2), [0.0, 30.0], np.float32)])
    assert (feedback.fed(first)[..., 3] == 1.0).all()
    again, _, _ = cache.tensor(Frame(1, image, time.monotonic(), time.time(), content_id=7), pre)
    assert again is first and (again[..., 3] == 0.0).all()
