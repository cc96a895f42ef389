"""specproof.e2e: DSpark end to end on a small byte-level transformer trained here.

The target (:mod:`.target`) and the drafters (:mod:`.drafters`) train on text that ships with
Python (:mod:`.data`); :mod:`.decode` runs the speculative round loop with KV caches and
:func:`specproof.optimized.chain_verify`; :mod:`.measure`, :mod:`.calibration` and
:mod:`.lossless` measure it; ``python -m specproof.e2e.run`` does all of it, writes the raw numbers
to ``benchmarks/e2e.json`` and the tables into the "e2e" section of ``BENCHMARKS.md``.
"""
