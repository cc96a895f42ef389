"""DFlash is DSpark's backbone without the Markov and confidence heads; the mask-token block
input feeds the target's mask-token embedding to every slot after x_0."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from specproof.e2e.models.dspark import DSparkConfig, DSparkDrafter, dspark_loss
from specproof.e2e.models.target import Target, TargetConfig

TARGET = TargetConfig(
    vocab=64, d_model=32, n_layers=3, n_heads=2, d_ff=64, max_len=48, feature_layers=(0, 1)
)
MASK = 1
DSPARK = DSparkConfig(
    gamma=4, n_layers=1, n_heads=2, d_ff=64, rank=8, block_input="mask_token", mask_token=MASK
)
DFLASH = replace(DSPARK, head="none")
HEAD_KEYS = {"markov_in.weight", "markov_out.weight", "confidence.weight", "confidence.bias"}


@pytest.fixture(scope="module")
def target() -> Target:
    torch.manual_seed(0)
    return Target(TARGET).eval()


def pair(target: Target) -> tuple[DSparkDrafter, DSparkDrafter]:
    """A DSpark drafter with a non-zero Markov head and a DFlash drafter holding its backbone."""
    torch.manual_seed(1)
    dspark = DSparkDrafter(target, DSPARK).eval()
    with torch.no_grad():
        dspark.markov_factors()[1].weight.normal_(0.0, 0.5)
    dflash = DSparkDrafter(target, DFLASH).eval()
    backbone = {k: v for k, v in dspark.state_dict().items() if k not in HEAD_KEYS}
    dflash.load_state_dict(backbone, strict=True)
    return dspark, dflash


def windows(seed: int = 2) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(2, TARGET.vocab, (2, 20), generator=generator)
    anchors = torch.tensor([[1, 5, 9], [3, 8, 16]])
    return tokens, anchors


def test_dflash_has_the_backbone_and_no_heads(target: Target) -> None:
    dspark, dflash = pair(target)
    shapes = {k: v.shape for k, v in dspark.state_dict().items()}
    assert {k: v.shape for k, v in dflash.state_dict().items()} == {
        k: s for k, s in shapes.items() if k not in HEAD_KEYS
    }
    assert set(shapes) >= HEAD_KEYS
    with pytest.raises(ValueError, match="no Markov"):
        dflash.markov_bias(torch.tensor([3]))


def test_dflash_logits_are_dsparks_backbone_logits(target: Target) -> None:
    dspark, dflash = pair(target)
    tokens, anchors = windows()
    features = target(tokens).features
    with torch.no_grad():
        hidden = dspark.backbone(tokens, features, anchors)
        assert torch.equal(dflash.backbone(tokens, features, anchors), hidden)
        flash_logits, flash_conf = dflash.training_outputs(tokens, features, anchors)
        spark_logits, spark_conf = dspark.training_outputs(tokens, features, anchors)
    assert flash_conf is None and spark_conf is not None
    assert torch.equal(flash_logits, target.logits_of(hidden).reshape(flash_logits.shape))
    # DSpark adds the Markov bias of x_{k-1}, the window's token before each slot.
    slots = (anchors[:, :, None] + torch.arange(DSPARK.gamma)).reshape(2, -1)
    bias = dspark.markov_bias(torch.gather(tokens, 1, slots)).reshape(flash_logits.shape)
    assert bias.abs().max() > 0.1
    torch.testing.assert_close(spark_logits, flash_logits + bias)


def test_dflash_drafts_from_its_backbone_laws(target: Target) -> None:
    _, dflash = pair(target)
    prompt = torch.randint(2, TARGET.vocab, (2, 10), generator=torch.Generator().manual_seed(3))
    state = dflash.start(2)
    counts = torch.full((2,), 9)
    cache = target.new_cache(2)
    with torch.no_grad():
        out = target.extend(prompt[:, :-1], counts, cache)
    dflash.observe(state, out, prompt[:, 1:], counts)
    proposal = dflash.propose(state, prompt[:, -1], 0.0, torch.Generator().manual_seed(0))
    assert proposal.confidence_logits is None
    assert proposal.probs.shape == (2, DSPARK.gamma, TARGET.vocab)
    torch.testing.assert_close(proposal.probs.sum(-1), torch.ones(2, DSPARK.gamma))
    assert torch.equal(proposal.tokens, proposal.probs.argmax(-1))


def test_dflash_loss_leaves_out_the_confidence_term() -> None:
    generator = torch.Generator().manual_seed(4)
    logits = torch.randn(3, 2, 4, 16, generator=generator)
    target_probs = torch.softmax(torch.randn(3, 2, 4, 16, generator=generator), -1)
    without, stats = dspark_loss(logits, None, target_probs)
    assert stats["conf"] == 0.0
    assert float(without) == pytest.approx(0.1 * stats["ce"] + 0.9 * stats["tv"], rel=1e-6)
    with_conf, stats_conf = dspark_loss(logits, torch.zeros(3, 2, 4), target_probs)
    assert float(with_conf) == pytest.approx(float(without) + stats_conf["conf"], rel=1e-6)


def test_the_block_after_x0_is_the_targets_mask_embedding(target: Target) -> None:
    dspark, _ = pair(target)
    assert dspark.mask_embedding is None
    first = torch.tensor([[5, 7], [9, 11]])
    block = dspark.block_inputs(first)
    assert block.shape == (2, 2, DSPARK.gamma, TARGET.d_model)
    assert torch.equal(block[..., 0, :], target.embed(first))
    mask_row = target.embed.weight[MASK]
    assert torch.equal(block[..., 1:, :], mask_row.expand(2, 2, DSPARK.gamma - 1, -1))


def test_the_mask_row_of_the_target_is_what_the_drafter_reads() -> None:
    torch.manual_seed(0)
    target = Target(TARGET).eval()
    torch.manual_seed(1)
    dspark = DSparkDrafter(target, DSPARK).eval()
    tokens, anchors = windows()
    features = target(tokens).features
    with torch.no_grad():
        before = dspark.backbone(tokens, features, anchors)
        target.embed.weight[MASK + 1].add_(1.0)  # another row: nothing changes
        assert torch.equal(dspark.backbone(tokens, features, anchors), before)
        target.embed.weight[MASK].add_(1.0)
        after = dspark.backbone(tokens, features, anchors)
    # Slots 2..gamma are the mask row, and every slot attends to them: the output moves.
    assert (after - before).abs().max() > 1e-3


def test_the_learned_block_input_stays_the_default() -> None:
    shipped_style = {"gamma": 7, "n_layers": 2, "n_heads": 4, "d_ff": 416, "rank": 256}
    config = DSparkConfig.from_dict({**shipped_style, "head": "vanilla"})
    assert config.block_input == "learned" and config.mask_token is None
    torch.manual_seed(0)
    drafter = DSparkDrafter(Target(TARGET), replace(DSPARK, block_input="learned", mask_token=None))
    assert drafter.mask_embedding is not None
    assert drafter.mask_embedding.shape == (DSPARK.gamma - 1, TARGET.d_model)


def test_bad_block_inputs_are_refused(target: Target) -> None:
    with pytest.raises(ValueError, match="unknown block input"):
        DSparkConfig(block_input="zeros")
    with pytest.raises(ValueError, match="exactly when"):
        DSparkConfig(block_input="mask_token")
    with pytest.raises(ValueError, match="exactly when"):
        DSparkConfig(mask_token=3)
    with pytest.raises(ValueError, match="outside the vocabulary"):
        DSparkDrafter(target, replace(DSPARK, mask_token=TARGET.vocab))
