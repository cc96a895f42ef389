"""The training loops, the staged path of the shipped models, the depth sweep.

- :mod:`.loops`: the training loops (fixed steps or a time budget)
- :mod:`.ship`: the staged training of the shipped models
- :mod:`.resumable`: fixed-step training whose whole state is saved, so a rerun continues
- :mod:`.subword_target`: the resumable training of the sub-word target
- :mod:`.self_distillation`: the target's own continuations, in resumable shards of token ids

Their commands are :mod:`specproof.runners.e2e`'s (``train_target``, ``train_subword_target``,
``sweep``).
"""
