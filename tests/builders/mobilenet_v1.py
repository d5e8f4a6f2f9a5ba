"""MobileNet v1 1.0/224 float as the seed question's user has it: Keras' MobileNet, batch 1, TensorFlow's
converter (31 nodes). Run as a child process (`python -m tests.builders.mobilenet_v1 OUT`): TensorFlow never
enters the test process.

Batch-norm statistics are taken from a batch of inputs: untrained weights shrink activations layer by
layer to ~1e-19, where any numerical comparison would pass; with these they stay O(1)."""

import os
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import numpy as np
import tensorflow as tf


def main(out: str) -> None:
    tf.keras.utils.set_random_seed(0)
    inp = tf.keras.Input(shape=(224, 224, 3), batch_size=1)
    model = tf.keras.applications.MobileNet(alpha=1.0, weights=None, input_tensor=inp)
    for layer in model.layers:
        if isinstance(layer, tf.keras.layers.BatchNormalization):
            layer.momentum = 0.0
    model(np.random.default_rng(0).uniform(-1, 1, (4, 224, 224, 3)).astype(np.float32), training=True)
    with open(out, "wb") as f:
        f.write(tf.lite.TFLiteConverter.from_keras_model(model).convert())


if __name__ == "__main__":
    main(sys.argv[1])
