"""The target, one drafter per file, their weight files and loading.

- :mod:`.target`: the small byte-level target with its ragged KV cache
- :mod:`.llama_target`: a pretrained Llama (SmolLM2-135M-Instruct) as the target, same interface
- :mod:`.drafting`: what both drafters share: proposals, draws, position weights
- :mod:`.dspark`: the DSpark drafter (block, Markov and confidence heads) and its loss
- :mod:`.eagle`: the EAGLE-3 baseline drafter and its loss
- :mod:`.weight_files`: weight files: safetensors with the config in metadata
- :mod:`.loading`: loading the three models of a run; the shipped folder
- :mod:`.markov_heads`: the sequential heads of the DSpark drafter beyond the vanilla Markov head
"""
