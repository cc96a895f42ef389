"""specproof: is this speculative decoder lossless, and how fast can it be while staying so?

``specproof.reference`` is the exact oracle; ``specproof.optimized`` the batched decoder.
"""

__version__ = "0.1.0"
