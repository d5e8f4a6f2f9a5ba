"""The TensorFlow side of the reference backend (app/backends/reference.py): the child process
that runs the original Keras EfficientNet-Lite0 (`child.py`), the Keras model (`efficientnet_lite`)
and the torch-free reader of its weights (`torch_legacy`). models/build_models.py builds the
bundled models from the same two modules. Importing this package loads neither TensorFlow nor
Keras: only the child process and the build do."""
