"""The end-to-end runners: the whole run (``run``), the experiments (``experiments``), the tables
they write (``report``), and the training commands (``train_target``, ``train_subword_target``,
``subword_tokenizer``, ``sweep``, ``smollm2_data``). The models, data, decoders and
measurements they use are :mod:`specproof.e2e`'s.
"""
