"""specproof's own DSpark decoder with Algorithm 1 as an audited engine
(specproof.adapters.specproof_dspark) on the tiny Llama: its configurations beside their
controls, each request's rounds read from the round logs (worked by hand), and audits that run
in the default suite: DSpark with Algorithm 1 passes truncated, and a lossy verification step
put in the same decoder fails.

Error rates: each audit row's false-fail rate is at most 1e-6 (the engine audit's alpha);
at delta 0.2 its n has power 0.9999 against TV >= 0.2 in every statistical row."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from real_engine_configs import assert_each_beside_its_control

from specproof.adapters import specproof_dspark as sd
from specproof.adapters.hf import load_hf
from specproof.adapters.registry import engine_named
from specproof.audit.engine.audit import audit_engine
from specproof.models import AuditModel
from specproof.subjects.real_models import build_models, tiny_model

DELTA = 0.2


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> AuditModel:
    torch.set_num_threads(1)
    folder = tmp_path_factory.mktemp("models")
    build_models(folder)
    return tiny_model(folder)


def test_every_speculative_configuration_sits_beside_its_control() -> None:
    model = tiny_model(Path("models"))
    configs = sd.configurations(model)
    assert_each_beside_its_control(configs)
    assert [c.name for c in configs] == [
        "T=1 no draft", "T=1 DSpark + Algorithm 1 k=3",
        "truncated no draft", "truncated DSpark + Algorithm 1 k=3",
        "greedy no draft", "greedy DSpark + Algorithm 1 k=3",
    ]  # fmt: skip
    record = engine_named("specproof-dspark")
    assert record.module == "specproof.adapters.specproof_dspark"
    assert record.groups(model) == [[c.name] for c in configs]
    truncated = sd.by_name("truncated DSpark + Algorithm 1 k=3", model).sampling
    assert sd.truncation_of(truncated) == (5, 0.9) and sd.temperature_of(truncated) == 0.8
    assert sd.truncation_of(sd.T1) is None and sd.truncation_of(sd.GREEDY) is None
    assert sd.temperature_of(sd.GREEDY) == 0.0


def test_each_requests_rounds_from_the_round_logs() -> None:
    # 3 requests, 4 tokens each. Round 1: all active, drafts 2, 0, 3, accepted 2, 0, 1
    # (produced 3, 1, 2). Round 2: all active (3 < 4), drafts 1, 2, 0, accepted 0, 2, 0
    # (produced 4, 4, 3). Round 3: request 2 alone, 1 draft, 1 accepted.
    scheduled = [[2, 0, 3], [1, 2, 0], [1]]
    accepted = [[2, 0, 1], [0, 2, 0], [1]]
    assert sd.request_rounds(scheduled, accepted, 3, 4) == [
        ((2, 2), (1, 0)),
        ((2, 2),),
        ((3, 1), (1, 1)),
    ]
    with pytest.raises(ValueError, match="active"):
        sd.request_rounds([[1, 1, 1], [1, 1, 1]], [[1, 1, 1], [1, 1, 1]], 3, 2)


def audit(tiny: AuditModel, name: str, verify: object = None) -> object:
    config = sd.by_name(name, tiny)
    counter = sd.Counter()
    engine = sd.dspark_engine(config, sd.load_target(tiny), load_hf(tiny.target), tiny, counter,
                              verify)  # fmt: skip
    report = audit_engine(engine, num_new_tokens=config.tokens, delta=DELTA)
    return report, counter


def test_truncated_dspark_with_algorithm_1_passes(tiny: AuditModel) -> None:
    report, counter = audit(tiny, "truncated DSpark + Algorithm 1 k=3")
    assert report.verdict == "PASS", report.table()
    # Algorithm 1 admitted prefixes of several lengths, and drafts were accepted.
    assert len([n for n in counter.lengths if n > 0]) >= 2, counter.lengths
    assert counter.accepted > 0


def test_a_lossy_verification_step_in_the_same_decoder_fails(tiny: AuditModel) -> None:
    """Keeping every scheduled draft emits the drafter's law, not the target's."""

    def keep_every_draft(
        target_probs: torch.Tensor,
        draft_probs: torch.Tensor,
        draft_tokens: torch.Tensor,
        lengths: torch.Tensor,
        **_: object,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        rows = torch.arange(len(lengths))
        n = draft_tokens.shape[1]
        bonus = torch.multinomial(target_probs[rows, lengths], 1)[:, 0]
        tokens = torch.cat((draft_tokens, torch.zeros_like(bonus)[:, None]), dim=1)
        tokens[rows, lengths] = bonus
        return torch.where(torch.arange(n + 1)[None] <= lengths[:, None], tokens, -1), lengths

    report, _ = audit(tiny, "T=1 DSpark + Algorithm 1 k=3", keep_every_draft)
    assert report.verdict == "FAIL", report.table()
