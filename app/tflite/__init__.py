"""Reading .tflite files without a runtime: the flatbuffer (file), TFLite Support metadata, and the operator graph."""
