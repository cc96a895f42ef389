"""specproof.optimized: batched speculative decoding over tensors, with Triton kernels and a
torch backend that share one counter-based (Philox) random stream with the reference."""

from . import schedulers
from .backend import Backend
from .checks.contract import InvalidInputError
from .sampling import sample_draft_tokens
from .tree import TreeResult, tree_verify
from .verify import ChainResult, chain_verify

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
