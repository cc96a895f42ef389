"""The corpora the models train and decode on.

- :mod:`.corpora`: code, prose and math corpora, the held-out split, windows, prompts
- :mod:`.math_corpus`: the generated arithmetic documents of the math domain
- :mod:`.subword`: the sub-word (BPE) vocabulary and the corpora's token streams under it
"""
