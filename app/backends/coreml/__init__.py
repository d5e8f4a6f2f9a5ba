"""The Core ML backend: the bundled .mlpackage, partitioned ML programs for any float model, and package checks."""
