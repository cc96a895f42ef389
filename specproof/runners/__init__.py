"""specproof.runners: the runners that write the committed results (``benchmarks/*.json`` and
``*.md``, BENCHMARKS.md, calibration/) and render their tables.

- ``real_audit``, ``real_table``: real engines audited in place, each configuration in its
  own process, and their results file and table.
- ``engine_table``, ``sequence_table``: the engine-audit and sequence-row tables.
- ``mutant_table``: every mutant's exact TV and its verdict (``nox -s mutants``).
- ``audit_bench``, ``calibrate``: the audit harness's speed; the statistics' observed error rates.
"""
