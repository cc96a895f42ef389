"""specproof's verification step installed in vLLM (specproof/adapters/vllm_verifier.py): the
interface check, the refusals, the configurations that audit it in place; and, where vLLM is
installed (the audit-vllm venv), install / uninstall on the real class."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from specproof.adapters import vllm_engine, vllm_verifier
from specproof.adapters.registry import engine_named
from specproof.runners.real_summary import engine_shown
from specproof.subjects.real_models import tiny_model

TINY = tiny_model(Path("models"))

TESTED = (
    vllm_verifier.TESTED_VERSIONS[0],
    vllm_verifier.FORWARD_PARAMETERS,
    vllm_verifier.SAMPLING_FIELDS,
    vllm_verifier.SPEC_DECODE_FIELDS,
)


def test_the_tested_interfaces_have_no_difference() -> None:
    assert vllm_verifier.interface_differences(*TESTED) == []


def test_each_interface_difference_is_named() -> None:
    version, forward, sampling, spec = TESTED
    assert vllm_verifier.interface_differences("0.33.0", forward, sampling, spec) == [
        "vLLM 0.33.0 (tested: 0.32.0)"
    ]
    (moved,) = vllm_verifier.interface_differences(version, forward[:-1], sampling, spec)
    assert moved.startswith("RejectionSampler.forward(")
    (fields,) = vllm_verifier.interface_differences(
        version, forward, (*sampling[1:], "min_p"), spec
    )
    assert fields == "SamplingMetadata fields added ['min_p'], missing ['temperature']"


def plain_metadata(**changes: object) -> SimpleNamespace:
    fields = {
        "max_num_logprobs": None, "logprob_token_ids": None, "no_penalties": True,
        "bad_words_token_ids": {}, "allowed_token_ids_mask": None,
        "thinking_budget_state_holder": None, "logitsprocs": None,
    }  # fmt: skip
    return SimpleNamespace(**{**fields, **changes})


def test_what_the_step_does_not_implement_is_refused_by_name() -> None:
    assert vllm_verifier.unsupported(plain_metadata()) == []
    assert vllm_verifier.unsupported(plain_metadata(), synthetic_mode=True) == [
        "synthetic acceptance (rejection_sample_method='synthetic')"
    ]
    assert vllm_verifier.unsupported(plain_metadata(max_num_logprobs=0)) == ["logprobs"]
    assert vllm_verifier.unsupported(plain_metadata(no_penalties=False)) == ["penalties"]
    assert vllm_verifier.unsupported(plain_metadata(bad_words_token_ids={0: [[1]]})) == [
        "bad_words"
    ]
    mask = torch.zeros(1, 4, dtype=torch.bool)
    assert vllm_verifier.unsupported(plain_metadata(allowed_token_ids_mask=mask)) == [
        "allowed_token_ids"
    ]

    class CustomProcessor:
        pass

    processors = SimpleNamespace(all=[CustomProcessor()], argmax_invariant=[])
    assert vllm_verifier.unsupported(plain_metadata(logitsprocs=processors)) == [
        "logits processor CustomProcessor"
    ]


def test_a_refused_batch_raises_before_any_work() -> None:
    spec = SimpleNamespace()  # never read: the refusal comes first
    with pytest.raises(vllm_verifier.UnsupportedRequest, match="does not implement penalties"):
        vllm_verifier.run_step(spec, None, torch.zeros(2, 4), plain_metadata(no_penalties=False))


def test_the_verifier_reruns_every_speculative_configuration_beside_vllms_controls() -> None:
    shipped = vllm_engine.configurations(TINY)
    swapped = vllm_engine.configurations(TINY, verifier=True)
    speculative = [c for c in shipped if c.speculation.method != "none" and not c.expand_fixed]
    assert [c.name for c in swapped] == [c.name for c in speculative]
    assert all(c.verifier and not c.expand_fixed for c in swapped)
    names = {c.name for c in shipped}
    assert all(c.control in names for c in swapped)
    for group in engine_named("vllm-verifier").groups(TINY):  # never on a shipped engine
        keys = {vllm_engine.by_name(n, TINY, verifier=True).engine_key for n in group}
        assert len(keys) == 1 and next(iter(keys))[2]


def test_min_p_under_speculation_is_recorded_as_refused() -> None:
    refused = [c for c in vllm_engine.configurations(TINY) if c.refused]
    assert [c.name for c in refused] == [
        "T=1 draft model k=3, synthetic acceptance (lossy)",
        "T=0.7 min-p draft model k=3",
    ]
    control = vllm_engine.by_name(refused[1].control, TINY)
    assert control.speculation.method == "none" and control.sampling["min_p"] > 0


def test_what_the_step_refuses_is_tried_last_on_its_engine() -> None:
    """Penalties and the synthetic mode are refused inside the engine by specproof's step,
    which stops the engine: tried first (recorded as refused) and last in their group."""
    swapped = {c.name: c for c in vllm_engine.configurations(TINY, verifier=True)}
    assert swapped["T=1 repetition penalty draft model k=3"].refused
    assert swapped["T=1 draft model k=3, synthetic acceptance (lossy)"].refused
    assert not swapped["T=1 draft model k=3"].refused
    for group in engine_named("vllm-verifier").groups(TINY):
        flags = [swapped[n].refused for n in group]
        assert flags == sorted(flags)


def test_the_verifier_entry_shows_the_version_after_vllm() -> None:
    record = {"engine": "vLLM with specproof's verifier", "version": "0.32.0"}
    assert engine_shown(record) == "vLLM 0.32.0 with specproof's verifier"
    assert engine_shown({"engine": "vLLM", "version": "0.32.0"}) == "vLLM 0.32.0"


def test_the_plugin_does_nothing_without_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(vllm_verifier.PLUGIN_ENV, raising=False)
    vllm_verifier.register()  # would import vllm if it installed
    assert not vllm_verifier.installed()


def test_install_replaces_forward_and_uninstall_restores_vllms_own() -> None:
    rejection_sampler = pytest.importorskip(
        "vllm.v1.sample.rejection_sampler", reason="vLLM is installed in the audit-vllm venv only"
    )
    cls = rejection_sampler.RejectionSampler
    original = cls.forward
    try:
        vllm_verifier.install()
        vllm_verifier.install()  # idempotent
        assert cls.forward is vllm_verifier.verifier_forward
        assert os.environ[vllm_verifier.PLUGIN_ENV] == "1"
    finally:
        vllm_verifier.uninstall()
        vllm_verifier.uninstall()
    assert cls.forward is original
    assert vllm_verifier.PLUGIN_ENV not in os.environ


def test_install_refuses_an_untested_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    vllm = pytest.importorskip("vllm", reason="vLLM is installed in the audit-vllm venv only")
    monkeypatch.setattr(vllm, "__version__", "0.99.0")
    with pytest.raises(vllm_verifier.InterfaceMismatch, match=r"vLLM 0\.99\.0 \(tested: 0\.32"):
        vllm_verifier.install()
    assert not vllm_verifier.installed()
