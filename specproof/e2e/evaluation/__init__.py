"""The measurement library the experiments and the end-to-end run share: measurements over
decodes, the comparisons and tests built on them (no commands here; they are in
:mod:`specproof.runners.e2e.experiments`).

- :mod:`.measurements`: tau, acceptance, confidence records, SPS(B)
- :mod:`.paired_runs`: decoders run back to back per chunk; speed ratios
- :mod:`.comparisons`: decoders of a comparison, phases, gamma sweeps
- :mod:`.fixed_gamma`: the fixed-gamma table at the full block
- :mod:`.latency`: batch-1 latency of every decoder; matched EAGLE-3 gamma
- :mod:`.scheduler_comparison`: Algorithm 1 against fixed gamma
- :mod:`.calibration`: calibration of the cumulative confidence; STS fit
- :mod:`.sts`: STS fitted on calibration decodes, checked on held-out ones
- :mod:`.losslessness`: the first tokens' law against the target's
- :mod:`.losslessness_by_decoder`: that test for every decoder
- :mod:`.agreement`: teacher-forced agreement of each drafter; the tau proxy of a DSpark drafter
- :mod:`.precision`: the law gap of a lower-precision copy of the target (per-position TV)
- :mod:`.prediction`: the target's held-out bits per byte, entropy and top probability
- :mod:`.clocks`: step clocks, and recorded rounds re-timed under a clock
- :mod:`.block_laws`: target continuations of one context with the laws every slot is judged by
- :mod:`.chunk_intervals`: per-chunk values, their t-intervals and Holm-corrected tests
- :mod:`.recorded_rounds`: recorded rounds re-timed under a stored clock; hindsight best gamma
- :mod:`.best_draft`: the best draft law for a group of target laws, and the per-context ceiling
  estimates

The sign test over paired ratios and its sample sizing are statistics:
:mod:`specproof.stats.sign_test`, :mod:`specproof.stats.sizing`.
"""
