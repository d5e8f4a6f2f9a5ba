"""The project's measurements (benchmarks/README.md). Run from the repo root as modules:
`python -m benchmarks.suite.pipeline_overhead --help`."""
