"""The fuzz suite's helpers, and the optimized tests' support module (dyadic rows, reference
replays), on the import path."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent.parent / "optimized"))
sys.path.insert(0, str(Path(__file__).parent))
