"""The speculative round loop, its verifier and schedules.

- :mod:`.rounds`: the speculative round loop with KV caches and phase times
- :mod:`.verifier`: the batched one-pass chain verifier of the speed tables
- :mod:`.schedules`: the release's per-position confidence threshold
"""
