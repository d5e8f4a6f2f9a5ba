"""Recordings: the crash-safe CSV writer and reader, rows from results, A/B side files, segments and series."""
