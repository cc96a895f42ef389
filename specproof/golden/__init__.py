"""specproof.golden: golden law vectors for engines that cannot run Python in their tests.

``specproof golden --out DIR`` writes ``chain_vectors.json`` (format version 1) and its JSON
Schema ``chain_vectors.schema.json``: boundary cases of one chain verification round, with the
exact law from the reference and the exact outputs for injected uniforms (:mod:`.vectors`), on
the boundary inputs of :mod:`.cases`, with the JSON Schema of :mod:`.schema`.

Where each part of the story lives: this package produces the vectors; the copy engines take is
committed in ``golden/v1/`` (``tests/golden/test_golden.py`` keeps it equal to a fresh one); the
consumers an engine copies into its CI are in ``examples/engine_ci/``: ``golden_c/`` (C99) and
``check_vllm_golden.py`` (Python, against vLLM's sampler).
"""
