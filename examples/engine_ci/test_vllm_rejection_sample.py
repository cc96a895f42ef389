"""specproof in vLLM's CI: the installed vLLM's own ``rejection_sample`` checked for
losslessness on CPU by the pytest plugin (run in a venv with vLLM, e.g. ``nox -s audit-vllm``'s).

    pip install specproof            # brings the pytest11 plugin: the `specproof` fixture
    pytest examples/engine_ci/test_vllm_rejection_sample.py -s

At the default level (full): every statistical row has false-fail rate <= 1e-6 and power >=
0.99 against TV >= 0.1; the call then checks a must-fail twin (vLLM handed target rows shifted
by one token id) and errors if the twin passes.
"""

import pytest

pytest.importorskip("vllm")

from specproof.adapters.vllm_sampler import rejection_sample


def test_vllm_rejection_sample_is_lossless(specproof):  # type: ignore[no-untyped-def]
    # vLLM's rejection_sample(draft_token_ids, num_draft_tokens, max_spec_len,
    # cu_num_draft_tokens, draft_probs, target_logits, bonus_token_ids, sampling_metadata):
    # specproof's adapter passes log p as the target logits and builds vLLM's SamplingMetadata.
    specproof.assert_lossless(rejection_sample, signature="vllm")
