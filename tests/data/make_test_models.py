"""Build the tiny TFLite models the loader tests need (run once; outputs are committed).

    pip install -e '.[convert]' && python tests/data/make_test_models.py

Each model is real TFLite produced by TensorFlow's converter, shaped to hit one
branch of the classifier checks in app/model/spec.py. Weights are seeded.
"""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import tensorflow as tf

OUT = Path(__file__).parent / "models"


def convert(model: tf.keras.Model, name: str) -> None:
    data = tf.lite.TFLiteConverter.from_keras_model(model).convert()
    (OUT / f"{name}.tflite").write_bytes(data)
    print(f"{name}.tflite: {len(data)} bytes")


def image_input(shape: tuple, batch: int | None = 1) -> tf.keras.Input:
    return tf.keras.Input(shape=shape, batch_size=batch)


def main() -> None:
    tf.keras.utils.set_random_seed(0)
    OUT.mkdir(exist_ok=True)

    # Four outputs like an SSD detector's post-processed heads: boxes, classes, scores, count.
    x = image_input((32, 32, 3))
    f = tf.keras.layers.GlobalAveragePooling2D()(tf.keras.layers.Conv2D(4, 3)(x))
    boxes = tf.keras.layers.Reshape((10, 4))(tf.keras.layers.Dense(40)(f))
    classes, scores, count = tf.keras.layers.Dense(10)(f), tf.keras.layers.Dense(10)(f), tf.keras.layers.Dense(1)(f)
    convert(tf.keras.Model(x, [boxes, classes, scores, count]), "detector_like")

    # A text model: a sequence of token ids, not an image.
    tokens = tf.keras.Input(shape=(16,), batch_size=1, dtype="int32")
    emb = tf.keras.layers.GlobalAveragePooling1D()(tf.keras.layers.Embedding(100, 8)(tokens))
    convert(tf.keras.Model(tokens, tf.keras.layers.Dense(5, activation="softmax")(emb)), "text_input")

    # Height and width unknown until run time: cannot be fixed by the app.
    x = image_input((None, None, 3))
    y = tf.keras.layers.GlobalAveragePooling2D()(tf.keras.layers.Conv2D(8, 3)(x))
    convert(tf.keras.Model(x, tf.keras.layers.Dense(10, activation="softmax")(y)), "dynamic_size")

    # Dynamic batch (fixable: the app sets it to 1) and raw logits out (the app applies softmax).
    x = image_input((8, 8, 3), batch=None)
    y = tf.keras.layers.GlobalAveragePooling2D()(tf.keras.layers.Conv2D(8, 3)(x))
    logits = tf.keras.layers.Dense(3)(y)
    model = tf.keras.Model(x, logits)
    convert(model, "dynamic_batch_logits")
    probe = np.linspace(-1, 1, 8 * 8 * 3, dtype=np.float32).reshape(1, 8, 8, 3)
    np.save(OUT / "dynamic_batch_logits_expected.npy", model(probe).numpy())


if __name__ == "__main__":
    main()
