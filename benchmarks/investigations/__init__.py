"""One-off questions, kept so their answers in docs/ can be re-asked."""
