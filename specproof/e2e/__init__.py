"""specproof.e2e: DSpark end to end on small byte-level transformers.

The target (:mod:`.target`) and the drafters (:mod:`.drafters`) train on text that ships with
Python (:mod:`.data`): once, reproducibly, by ``python -m specproof.e2e.ship`` (``nox -s
train-target``, weights shipped in ``weights/``), or inside the run with ``--from-scratch``.
:mod:`.decode` runs the speculative round loop with KV caches and a phase breakdown;
:mod:`.verify` is the one-pass chain verifier of the speed tables; :mod:`.experiments`,
:mod:`.measure`, :mod:`.calibration`, :mod:`.pairtest` and :mod:`.lossless` measure it;
``python -m specproof.e2e.run`` does all of it, writes the raw numbers to
``benchmarks/e2e.json`` and the tables into the "e2e" section of ``BENCHMARKS.md``.
"""
