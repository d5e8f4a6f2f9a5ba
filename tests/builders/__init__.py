"""Builders of test models (TFLite flatbuffers written directly, GPU and Core ML op mixes)."""
