"""The experiment commands, one ``python -m specproof.runners.e2e.experiments.NAME`` each; each
measures with :mod:`specproof.e2e.evaluation` and writes its JSON (and, for some, its results page
in ``benchmarks/`` section through :mod:`specproof.runners.e2e.report`).

- :mod:`.tau`: both drafters' tau for one set of weights
- :mod:`.drafter_tau`: tau and per-slot acceptance of several DSpark drafters against EAGLE-3
- :mod:`.held_out`: the target's held-out bits per byte
- :mod:`.draft_time`: drafting time of several drafters
- :mod:`.depth_draft_time`: DSpark's depth at EAGLE-3's drafting time
- :mod:`.ceiling`: the ceiling of block drafters, beside DSpark and EAGLE-3
- :mod:`.headline`: the batch-1 speed headline (``nox -s e2e-headline``)
- :mod:`.scheduler_clocks`: Algorithm 1 at batch 4, 8 and 16 under two clocks
  (``nox -s e2e-headline``)
- :mod:`.walk_cost`: what Algorithm 1's walk costs the host per round
- :mod:`.sts_claims`: STS's two claims, judged on a run's held-out ECE check
- :mod:`.scheduler_clocks_retimed`: Algorithm 1 against the best fixed gamma on the measured
  chunks, by re-timing recorded rounds
- :mod:`.learning_curves`: tau of DSpark, DFlash and EAGLE-3 against training steps, resumable
- :mod:`.step_time`: seconds per training step of the sub-word plan's models
- :mod:`.smollm2_target`: SmolLM2-135M as the target: its gap to transformers, bfloat16 against
  float32, the cost of its hidden states, drafter sizes and step times on it
- :mod:`.smollm2_curves`: the learning curves of DSpark, DFlash and EAGLE-3 for SmolLM2-135M
"""
