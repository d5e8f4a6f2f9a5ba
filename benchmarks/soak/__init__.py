"""Long runs that must stay flat: memory, threads, files, rows."""
