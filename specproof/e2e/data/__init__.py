"""The corpora the models train and decode on.

- :mod:`.corpora`: code, prose and math corpora, the held-out split, windows, prompts
- :mod:`.math_corpus`: the generated arithmetic documents of the math domain
"""
