"""The torch backend: the kernels' semantics in plain torch ops, for CPUs (and any device)."""
