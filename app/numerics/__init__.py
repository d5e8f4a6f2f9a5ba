"""Where a delegate's numbers part from a reference's: each node's error, found by cutting the model after
the node and running the prefix on the delegate (docs/numerics.md)."""
