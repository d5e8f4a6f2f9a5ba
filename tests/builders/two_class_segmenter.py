"""A two-class segmenter at a high resolution, shaped as MediaPipe's hair segmentation answers (512x512
input, [1,512,512,2] float scores: background and the class): an encoder down to 1/16 and a decoder of
bilinear upsamplings back to the input's size, built by Keras and TensorFlow's converter with GPU-ready
ops (CONV_2D, RESIZE_BILINEAR, ADD). MediaPipe's own model needs a custom op (its transposed convolution)
that the stock runtime lacks, so this stands in for its decoding cost: the same output, at the same size.

Its class is deliberately readable: class 1 where the first channel of the input, as the model takes it,
is above 0 (a 1x1 convolution from the input to the logits), so a test can check the map, not only its shape.
Run as a child process (`python -m tests.builders.two_class_segmenter OUT`): TensorFlow never enters the
test process."""

import os
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import numpy as np
import tensorflow as tf

SIZE = 512


def build() -> tf.keras.Model:
    tf.keras.utils.set_random_seed(0)
    layers = tf.keras.layers
    inp = tf.keras.Input(shape=(SIZE, SIZE, 3), batch_size=1)
    x = inp
    for width in (16, 32, 64, 64):  # to 1/16: 32x32
        x = layers.Conv2D(width, 3, strides=2, padding="same", activation="relu")(x)
    x = layers.Conv2D(64, 3, padding="same", activation="relu")(x)
    for width in (32, 16, 8, 8):  # back to 512x512
        x = layers.UpSampling2D(2, interpolation="bilinear")(x)
        x = layers.Conv2D(width, 3, padding="same", activation="relu")(x)
    small = layers.Conv2D(2, 1, kernel_initializer="zeros")(x)  # the learned part: zero here
    # Class 1's logit minus class 0's = the first channel of the input (a 1x1 convolution of it),
    # so the class follows the picture.
    bright = layers.Conv2D(2, 1, use_bias=True, name="brightness")(inp)
    logits = layers.Add()([small, bright])
    model = tf.keras.Model(inp, logits)
    kernel = np.zeros((1, 1, 3, 2), np.float32)
    kernel[0, 0, 0, 1] = 1.0  # class 1: + the first channel
    model.get_layer("brightness").set_weights([kernel, np.zeros(2, np.float32)])
    return model


def main(out: str) -> None:
    model = build()
    with open(out, "wb") as f:
        f.write(tf.lite.TFLiteConverter.from_keras_model(model).convert())


if __name__ == "__main__":
    main(sys.argv[1])
