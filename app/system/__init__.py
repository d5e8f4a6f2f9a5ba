"""Process- and OS-level helpers that know nothing of models.

Paths, log redaction, native stderr, the heap, per-thread CPU, CPU affinity.
"""
