"""specproof: is this speculative decoder lossless, and how fast can it be while staying so?

``specproof.reference`` is the exact oracle; ``specproof.optimized`` the batched decoder.
"""

from pathlib import Path as _Path

__version__ = "0.1.0"

# In a clone, reference/ and optimized/ sit beside specproof/ and become specproof.reference and
# specproof.optimized once installed; searching the clone's root keeps them importable without
# an install (python from the clone's root), with the same files an editable install maps.
_CLONE_ROOT = _Path(__file__).resolve().parent.parent
if (_CLONE_ROOT / "pyproject.toml").is_file() and (_CLONE_ROOT / "reference").is_dir():
    __path__.append(str(_CLONE_ROOT))
