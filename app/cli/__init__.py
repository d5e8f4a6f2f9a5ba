"""The command line: one module per command under commands/, shared options and output."""
