"""ModelSpec's shape: its inputs and outputs are stored, the image input and the classifier's output are
read from them through the task; one predicate says "an image classifier"; `classes` counts classes
only (a keypoints model's points have their own name); what a spec holds cannot be amended in place."""

from dataclasses import fields, replace
from types import MappingProxyType

import pytest

from app.model.spec import ModelFacts, ModelSpec, load_model_spec
from app.model.task import ClassificationLayout, KeypointsLayout, Task
from tests.helpers.paths import TEST_MODELS

# Each model's task, class count, point count and the JSON's `classes` (the value it held before points
# had a name: a keypoints model's points).
VISION = {
    "coco_ssd_mobilenet_v1_1.0_quant_2018_06_29.tflite": (Task.DETECTION, 90, 0, 90),
    "deeplabv3.tflite": (Task.SEGMENTATION, 21, 0, 21),
    "movenet_single_pose_lightning_ptq.tflite": (Task.KEYPOINTS, 0, 17, 17),
    "hand_landmark.tflite": (Task.KEYPOINTS, 0, 21, 21),
    "face_detection_front.tflite": (Task.DETECTION, 0, 0, 0),
    "yamnet_audio_classifier_with_metadata.tflite": (Task.RAW, 0, 0, 0),
}


def test_the_tensor_lists_are_stored_and_the_single_tensors_derived():
    stored = {f.name for f in fields(ModelSpec)}
    assert {"inputs", "outputs", "task"} <= stored
    assert not stored & {"input", "output", "all_inputs", "all_outputs"}
    assert not hasattr(ModelSpec, "all_inputs") and not hasattr(ModelSpec, "all_outputs")


def test_a_classifier_reads_its_input_and_output_from_the_lists():
    spec = load_model_spec("efficientnet_lite0")
    layout = spec.task.layout
    assert isinstance(layout, ClassificationLayout) and spec.task.image_input == 0
    assert spec.input is spec.inputs[0] and spec.output is spec.outputs[layout.output]
    assert spec.is_image_classifier and spec.classes == layout.classes == 1000 and spec.points == 0
    assert spec.task_json() == {} and "task" not in ModelFacts.of(spec).to_dict()
    # A changed input list is what `input` then says: nothing stored beside it goes stale.
    grey = replace(spec.input, shape=(1, 224, 224, 1))
    assert replace(spec, inputs=(grey,)).input == grey and replace(spec, inputs=(grey,)).channels == 1


def test_a_second_input_makes_a_classifier_no_image_classifier():
    """The predicate reads the inputs, not the task alone: class scores from more than the image are fed
    every input (`run_all`), and the JSON then says the task and every tensor."""
    spec = load_model_spec("efficientnet_lite0")
    two = replace(spec, inputs=(*spec.inputs, replace(spec.input, name="extra", shape=(1, 4))))
    assert two.kind == Task.CLASSIFICATION and not two.is_image_classifier
    assert [t["name"] for t in two.task_json()["inputs"]] == [spec.input.name, "extra"]
    assert ModelFacts.of(two).to_dict()["task"] == "classification"


def test_a_model_without_an_image_input_reads_its_first_input():
    spec = load_model_spec(TEST_MODELS / "text_input.tflite")
    assert spec.image_input is None and spec.input is spec.inputs[0] and spec.output is spec.outputs[0]
    assert not spec.is_image_classifier and spec.classes == 0
    assert spec.task_json()["task"] == spec.task.to_dict()


@pytest.mark.parametrize("name", sorted(VISION))
def test_classes_count_classes_and_points_are_their_own(vision, name):
    task, classes, points, said = VISION[name]
    spec = load_model_spec(vision / name)
    assert (spec.kind, spec.classes, spec.points) == (task, classes, points)
    assert not spec.is_image_classifier
    assert spec.as_json()["classes"] == ModelFacts.of(spec).to_dict()["classes"] == spec.label_count == said
    assert ModelFacts.of(spec).to_dict()["task"] == task.value
    if task == Task.KEYPOINTS:
        assert isinstance(spec.task.layout, KeypointsLayout) and spec.task.layout.points == points
        assert spec.output is spec.outputs[0]


def test_info_and_warnings_cannot_be_amended():
    spec = load_model_spec("efficientnet_lite0")
    assert isinstance(spec.info, MappingProxyType) and spec.info["licence"] == "Apache-2.0"
    with pytest.raises(TypeError):
        spec.info["licence"] = "other"  # type: ignore[index]
    assert isinstance(spec.warnings, tuple)
    # However a spec is built, what it is given is copied: the caller's dict and list stay theirs.
    given, said = {"source": "here"}, ["one"]
    built = replace(spec, info=given, warnings=said)
    given["source"], said[0] = "changed", "changed"
    assert dict(built.info) == {"source": "here"} and built.warnings == ("one",)
