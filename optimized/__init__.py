"""specproof.optimized: batched speculative decoding over tensors, with Triton kernels and a
torch backend that share one counter-based (Philox) random stream with the reference."""

from . import schedulers
from .sampling import sample_draft_tokens
from .validation import InvalidInputError
from .verify import Backend, ChainResult, TreeResult, chain_verify, tree_verify

__all__ = [
    "Backend",
    "ChainResult",
    "InvalidInputError",
    "TreeResult",
    "chain_verify",
    "sample_draft_tokens",
    "schedulers",
    "tree_verify",
]
