"""specproof.e2e: DSpark end to end on small byte-level transformers.

Layout, by job (each subpackage's docstring says what each of its modules does):

- ``data/`` (corpora, math_corpus): the corpora the models train and decode on.
- ``models/`` (target, drafting, dspark, eagle, weight_files, loading, toy, markov_heads): the
  target, one drafter per file, their weight files and loading.
- ``training/`` (loops, ship, sweep): the training loops, the staged path of the shipped models, the
  depth sweep.
- ``decoding/`` (rounds, verifier, schedules): the speculative round loop, its verifier and
  schedules.
- ``evaluation/`` (measurements, paired_runs, sign_test, comparisons, fixed_gamma, latency,
  scheduler_comparison, calibration, sts, losslessness, losslessness_by_decoder, agreement, tau,
  draft_time, held_out, best_draft, block_laws, ceiling, clocks, depth_draft_time, drafter_tau,
  headline, scheduler_clocks, sizing, speed_sections, sts_claims, walk_cost): measurements, and the
  comparisons and tests built on them.
- ``report/`` (agreement, document, speed, table): the tables of BENCHMARKS.md and
  ``benchmarks/e2e.json``.
- ``plans``: one Plan per size: model sizes, steps, measurement sizes.
- ``arguments``: argument checks shared by the commands.
- ``run``: train or load, measure, write the tables (``nox -s e2e``).

Commands: ``python -m specproof.e2e.run``, ``python -m specproof.e2e.training.ship``,
``python -m specproof.e2e.training.sweep``, ``python -m specproof.e2e.evaluation.tau``,
``python -m specproof.e2e.evaluation.draft_time``, ``python -m specproof.e2e.evaluation.held_out``,
``python -m specproof.e2e.evaluation.ceiling``,
``python -m specproof.e2e.evaluation.depth_draft_time``,
``python -m specproof.e2e.evaluation.drafter_tau``, ``python -m specproof.e2e.evaluation.headline``,
``python -m specproof.e2e.evaluation.scheduler_clocks``,
``python -m specproof.e2e.evaluation.speed_sections``,
``python -m specproof.e2e.evaluation.sts_claims``, ``python -m specproof.e2e.evaluation.walk_cost``,
``python -m specproof.e2e.report``.
"""
