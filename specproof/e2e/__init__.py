"""specproof.e2e: DSpark end to end on small byte-level transformers.

Layout, by role, bottom-up: each entry imports only itself and the entries above it, never one
below (``tests/e2e/test_layering.py`` checks it); each subpackage's docstring says what each of
its modules does.

- ``arguments``: argument checks shared by the commands.
- ``data/`` (corpora, math_corpus): the corpora the models train and decode on.
- ``models/`` (target, drafting, dspark, eagle, weight_files, loading, markov_heads): the
  target, one drafter per file, their weight files and loading.
- ``decoding/`` (rounds, verifier, schedules): the speculative round loop, its verifier and
  schedules.
- ``plans``: one Plan per size: model sizes, steps, measurement sizes.
- ``evaluation/`` (measurements, paired_runs, comparisons, fixed_gamma, latency,
  scheduler_comparison, calibration, sts, losslessness, losslessness_by_decoder, agreement,
  prediction, clocks, block_laws, best_draft): the measurement library: measurements, and the
  comparisons and tests built on them. The sign test and its sample sizing are in
  :mod:`specproof.stats`.
- ``training/`` (loops, ship, sweep): the training loops, the staged path of the shipped models
  (command), the depth sweep (command).
- ``report/`` (table, agreement, speed, document, headline_and_clocks): the e2e sections of
  ``benchmarks/``, rendered from JSON results.
- ``experiments/`` (tau, drafter_tau, held_out, draft_time, depth_draft_time, ceiling, headline,
  scheduler_clocks, walk_cost, sts_claims): the experiment commands.
- ``run``: train or load, measure, write the tables (``nox -s e2e``).

Commands: ``python -m specproof.runners.e2e.run``, ``python -m specproof.runners.e2e.train_target``,
``python -m specproof.runners.e2e.sweep``, ``python -m specproof.runners.e2e.experiments.NAME``
for each
NAME of ``experiments/``, ``python -m specproof.runners.e2e.report``,
``python -m specproof.runners.e2e.report.headline_and_clocks``.
"""
