"""Hypothesis profiles: ``dev`` (default), ``ci`` (derandomised), ``thorough`` (many examples).

Select with HYPOTHESIS_PROFILE; the nox ``tests`` session uses ``ci``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_common = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("dev", max_examples=15, **_common)
settings.register_profile("ci", max_examples=15, derandomize=True, print_blob=True, **_common)
settings.register_profile("thorough", max_examples=300, **_common)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))
