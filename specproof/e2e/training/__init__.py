"""The training loops, the staged path of the shipped models, the depth sweep.

- :mod:`.loops`: the training loops (fixed steps or a time budget)
- :mod:`.ship`: the staged training of the shipped models (command)
- :mod:`.sweep`: a drafter of another depth / Markov rank (command)
"""
