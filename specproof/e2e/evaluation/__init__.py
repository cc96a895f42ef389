"""Measurements, and the comparisons and tests built on them.

- :mod:`.measurements`: tau, acceptance, confidence records, SPS(B)
- :mod:`.paired_runs`: decoders run back to back per chunk; speed ratios
- :mod:`.sign_test`: the exact sign test over paired ratios, its power
- :mod:`.comparisons`: decoders of a comparison, phases, gamma sweeps
- :mod:`.fixed_gamma`: the fixed-gamma table at the full block
- :mod:`.latency`: batch-1 latency of every decoder; matched EAGLE-3 gamma
- :mod:`.scheduler_comparison`: Algorithm 1 against fixed gamma
- :mod:`.calibration`: calibration of the cumulative confidence; STS fit
- :mod:`.sts`: STS fitted on calibration decodes, checked on held-out ones
- :mod:`.losslessness`: the first tokens' law against the target's
- :mod:`.losslessness_by_decoder`: that test for every decoder
- :mod:`.agreement`: teacher-forced agreement of each drafter
- :mod:`.tau`: both drafters' tau for one set of weights (command)
- :mod:`.draft_time`: drafting time of several drafters (command)
- :mod:`.held_out`: the target's held-out bits per byte (command)
- :mod:`.best_draft`: the best draft law for a group of target laws, and the per-context ceiling
  estimates
- :mod:`.block_laws`: Target continuations of one context with the laws every slot is judged by
- :mod:`.ceiling`: the ceiling of block drafters, from samples of the target, beside DSpark and
  EAGLE-3
- :mod:`.clocks`: Step clocks
- :mod:`.depth_draft_time`: DSpark's depth at EAGLE-3's drafting time
- :mod:`.drafter_tau`: tau and per-slot acceptance of several DSpark drafters against the shipped
  EAGLE-3, on the shipped target, decoded on the same prompts with the same seeds
- :mod:`.headline`: the batch-1 speed headline
- :mod:`.scheduler_clocks`: Algorithm 1 against the best fixed gamma and the static thresholds at
  batch 4, 8 and 16, with EAGLE-3 beside them, under two clocks applied to the same recorded rounds
- :mod:`.sizing`: how many paired chunks a sign test needs, the distribution-free interval of a
  median, and the non-inferiority form of the sign test
- :mod:`.speed_sections`: the BENCHMARKS.md sections of the batch-1 headline and of the scheduler
  clocks, rendered from their JSON files (so a section can be rebuilt, and checked, from the
  committed numbers)
- :mod:`.sts_claims`: STS's two claims, judged position by position on a run's held-out ECE check
- :mod:`.walk_cost`: what Algorithm 1's walk costs the host per round, beside a fixed gamma's
"""
