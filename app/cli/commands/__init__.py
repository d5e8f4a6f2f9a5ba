"""One module per delegate-scope command."""
