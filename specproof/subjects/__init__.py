"""specproof.subjects: what the audit is shown on, never the audit itself.

- ``examples``: chain verifiers with the engines' call shapes, correct and deliberately biased,
  and the example schedulers; ``flagged``: the one verifier with bug flags they are built from.
- ``bugs``: the one catalogue of known bugs (public bug classes and mutants, one record type).
- ``mutants``: the mutants as exact reference rules, and the search for adversarial cases;
  ``hf_mutants``: glue bugs patched into transformers' assisted generation on the tiny models.
- ``tiny``, ``real_models``, ``real_eagle``, ``real_dflash``: tiny models built from config
  (nothing downloaded) for HF transformers and for the real engines; ``tiny_qwen3``: a tiny
  Qwen3 target (no drafter folder) for engines that build their drafters from the target.
- ``block_examples``, ``sequence_examples``, ``e2e_decoders``: engines for ``audit-engine``
  (DSpark-style rounds on tables, long runs to EOS, specproof's own end-to-end decoders);
  ``acceptance_engines``: chain engines with a known draft law and a correct, an
  over-accepting and an under-accepting verifier, for the acceptance row.
"""
