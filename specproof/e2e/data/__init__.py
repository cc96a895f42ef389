"""The corpora the models train and decode on.

- :mod:`.corpora`: code, prose and math corpora, the held-out split, windows, prompts
- :mod:`.math_corpus`: the generated arithmetic documents of the math domain
- :mod:`.chat_prompts`: prompts for a chat-template target (math as user turns, code and prose
  as plain windows)
- :mod:`.smollm2_windows`: SmolLM2 drafters' training windows, half the target's continuations
  and half real text
- :mod:`.subword`: the sub-word (BPE) vocabulary and the corpora's token streams under it
"""
