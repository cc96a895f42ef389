"""The e2e results pages (``benchmarks/e2e*.md``), rendered from JSON results.

- :mod:`.table`: the one Markdown table helper (cells formatted alike) every renderer uses
- :mod:`.document`: :func:`markdown` renders the "e2e" section from a run's results,
  :func:`write_tables` writes it and the raw JSON
- :mod:`.speed`, :mod:`.agreement`: parts of that section
- :mod:`.headline_and_clocks`: the "headline" and "scheduler-clocks" sections, from the JSON of
  :mod:`specproof.runners.e2e.experiments.headline` and
  :mod:`specproof.runners.e2e.experiments.scheduler_clocks`
- :mod:`.retimed_clocks`: the section of
  :mod:`specproof.runners.e2e.experiments.scheduler_clocks_retimed`

``python -m specproof.runners.e2e.report [e2e.json] [--markdown FILE]`` re-renders the "e2e"
section from an existing JSON without measuring anything;
``python -m specproof.runners.e2e.report.headline_and_clocks`` the other two.
"""

from specproof.runners.e2e.report.document import markdown, write_tables

__all__ = ["markdown", "write_tables"]
