"""Core ML for any float .tflite, the way the TFLite Core ML delegate partitions it.

- split.py: the pieces (delegated partitions and the CPU nodes between them) as stand-alone .tflite files;
- execute.py: running the pieces in order (LiteRT for CPU pieces, Core ML on macOS for the others);
- translate.py: one MIL program per delegated partition (coremltools' MIL builder, imported lazily);
- mil_numpy.py: a numpy evaluator of those programs' ops, for checking numerics without a Mac;
- cache.py: converted programs on disk, by model sha256 and options.
"""
