"""specproof.runners: every runner that writes the committed results (``benchmarks/``) and renders
their tables; each is ``python -m specproof.runners.NAME`` (most through a nox session).

Engines and the audit's tables:

- ``real_audit``, ``real_table``, ``real_summary``: real engines audited in place on a model,
  each configuration in its own process, their results file and table, and its summary (one
  verdict per engine, version and model)
- ``engine_table``, ``sequence_table``: the engine-audit and sequence-row tables
- ``mutant_table``: every mutant's exact TV and its verdict (``nox -s mutants``)
- ``bug_table``: the bug catalogue's public classes and the command that catches each
- ``adversarial_search``: the adversarial tables of :mod:`specproof.audit.adversarial`
- ``calibrate``: the statistics' observed error rates (``nox -s calibration``)
- ``audit_bench``, ``audit_time``, ``audit_rows``: the audit harness's speed, a user's audit
  end to end, and where its time goes
- ``plugin_time``: the pytest plugin's cost
- ``acceptance_rows``: the engine audit's acceptance row on HF transformers (tiny models and
  SmolLM2-135M)
- ``verifier_timing``: specproof's step inside vLLM against vLLM's own
- ``generate_timing``: ``LLM.generate`` end to end with vLLM's step and with specproof's
- ``smollm2``: SmolLM2-135M fetched and converted, its drafters' acceptance

The optimized decoder's speed:

- ``kernel_bench`` (``nox -s bench``), ``checked_copy``, ``entry_points``, ``kernel_profile``,
  ``validation_cost``, ``validation_operations``:
  chain and tree verification on the CPU, the checked copy, what validation costs
- ``gpu_bench`` and ``gpu.sh``: the same on a CUDA device
- ``timing``: the interleaved timing they share

The reference's speed: ``readme_figures`` with the workloads of ``reference_sizes``.

The end-to-end reproduction: :mod:`specproof.runners.e2e`.
"""
