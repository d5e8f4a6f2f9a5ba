"""A float model built to break on fp16 at one known node: CONV_2D (ReLU) -> ADD 12 -> EXP -> CONV_2D -> MEAN.
EXP of 12 and more is over 162,000, past fp16's largest value (65,504): in fp32 every value is finite, in
fp16 the EXP node's output is inf, and every node after it carries that on. Nothing before EXP leaves
fp16's range (the ADD's values are about 12 to 16). Run as a child process
(`python -m tests.builders.fp16_overflow OUT`): TensorFlow never enters the test process."""

import os
import sys

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"

import numpy as np
import tensorflow as tf


class Fp16Overflow(tf.Module):
    def __init__(self) -> None:
        rng = np.random.default_rng(0)
        self.w1 = tf.constant(rng.normal(0, 0.2, (3, 3, 3, 8)).astype(np.float32))
        self.b1 = tf.constant(rng.normal(0, 0.1, (8,)).astype(np.float32))
        self.w2 = tf.constant(rng.normal(0, 0.1, (3, 3, 8, 4)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([1, 16, 16, 3], tf.float32)])
    def __call__(self, x: tf.Tensor) -> tf.Tensor:
        y = tf.nn.relu(tf.nn.conv2d(x, self.w1, 1, "SAME") + self.b1)
        y = tf.exp(y + 12.0)
        y = tf.nn.conv2d(y, self.w2, 1, "SAME")
        return tf.reduce_mean(y, axis=[1, 2])


def main(out: str) -> None:
    module = Fp16Overflow()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.__call__.get_concrete_function()], module)
    with open(out, "wb") as f:
        f.write(converter.convert())


if __name__ == "__main__":
    main(sys.argv[1])
