"""The tables of an end-to-end run: :func:`markdown` renders the "e2e" section of BENCHMARKS.md
from the run's results, :func:`write_tables` writes them and the raw JSON.

``python -m specproof.e2e.report [e2e.json] [--markdown FILE]`` re-renders the section from an
existing JSON without measuring anything.
"""

from .document import markdown, write_tables

__all__ = ["markdown", "write_tables"]
