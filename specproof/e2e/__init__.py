"""specproof.e2e: DSpark end to end on small byte-level transformers.

Modules by job:

- data: :mod:`.data` (code, prose and math corpora, windows, prompts), :mod:`.math_corpus`.
- modeling: :mod:`.target`, :mod:`.drafters` (DSpark and its EAGLE-3 baseline),
  :mod:`.markov_heads` (DSpark's gated and rnn heads),
  :mod:`.schedules` (the release's per-position threshold), :mod:`.weights`, :mod:`.models`
  (loading a trained set).
- training: :mod:`.train` (the training loops, fixed steps or a time budget), :mod:`.ship`
  (the one staged path for the shipped models, ``nox -s train-target``, and for
  ``run --from-scratch``), :mod:`.sweep` (depth and Markov rank at a fixed budget),
  :mod:`.draft_time` (what a deeper drafter costs per round), :mod:`.depth` (DSpark's depth
  at EAGLE-3's drafting time).
- decoding: :mod:`.decode` (the round loop with KV caches and a phase breakdown),
  :mod:`.verify` (the one-pass chain verifier of the speed tables).
- evaluation: :mod:`.evaluation` (the fixed-gamma table), :mod:`.experiments`,
  :mod:`.compare`, :mod:`.measure`, :mod:`.latency`, :mod:`.scheduler_tests`,
  :mod:`.pairtest`, :mod:`.calibration`, :mod:`.sts`, :mod:`.agreement`, :mod:`.lossless`,
  :mod:`.lossless_checks`, :mod:`.tau` (both drafters' tau for one set of weights,
  without the speed tables), :mod:`.drafter_tau` (several DSpark drafters against EAGLE-3, per
  slot).
- report: :mod:`.report` (the tables of BENCHMARKS.md and ``benchmarks/e2e.json``).
- the run: :mod:`.plans` (one ``Plan`` per size), :mod:`.run` (``nox -s e2e``), :mod:`.toy`
  (tiny models for tests).
"""
