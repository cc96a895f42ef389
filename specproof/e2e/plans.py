"""What one end-to-end run trains and measures: model sizes, training shares, prompt counts."""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from .decoding.rounds import VerifyStep
from .decoding.verifier import generator_chain_verify
from .models.dspark import DSparkConfig
from .models.eagle import EagleConfig
from .models.target import TargetConfig

FAST_VERIFY: VerifyStep = generator_chain_verify
"""The verifier of the speed tables; see :mod:`specproof.e2e.decoding.verifier` for why."""
SIGN_TEST_ALPHA = 0.05
SIGN_TEST_SLOWER_SHARE = 0.9
LOSSLESS_BETA = 1e-3
LOSSLESS_TOLERANCE = 1e-4
RANK_CELLS = 9
TEMPERATURES = (1.0, 0.0)


@dataclass(frozen=True)
class Plan:
    target: TargetConfig
    dspark: DSparkConfig
    eagle: EagleConfig
    target_batch: int
    drafter_batch: int
    window: int
    anchors_per_window: int
    target_lr: float
    drafter_lr: float
    target_share: float
    drafter_share: float
    prompt_length: int
    new_tokens: int
    requests: int
    calibration_prompts: int
    evaluation_prompts: int
    sps_new_tokens: int
    sps_sweeps: int
    sps_seconds: float
    lossless_delta: float
    pool_size: int
    pool_prefix: int
    threshold: Fraction
    latency_prompts: int = 12
    """Batch-1 decodes per domain and temperature (each its own chunk)."""
    scheduler_chunks: int = 6
    """Chunks per domain at each batch size of the scheduler comparison."""
    scheduler_batches: tuple[int, ...] = (4, 8)
    sweep_chunks: int = 2
    """Calibration chunks per domain for the fixed-gamma sweep."""
    lossless_batch: int = 700
    agreement_windows: int = 16
    """Held-out windows per domain for the teacher-forced agreement table."""
    target_steps: int | None = None
    """Fixed training steps (reproducible); None: train for ``target_share`` of the budget."""
    drafter_steps: int | None = None
    """Fixed steps per drafter; None: ``drafter_share`` of the budget each."""


FULL = Plan(
    target=TargetConfig(
        d_model=128, n_layers=4, n_heads=4, d_ff=512, max_len=160, feature_layers=(0, 2)
    ),
    dspark=DSparkConfig(gamma=7, n_layers=1, n_heads=4, d_ff=512, rank=32),
    eagle=EagleConfig(gamma=7, n_heads=4, d_ff=512),
    target_batch=16,
    drafter_batch=8,
    window=128,
    anchors_per_window=32,
    target_lr=3e-3,
    drafter_lr=2e-3,
    target_share=0.42,
    drafter_share=0.17,
    prompt_length=32,
    new_tokens=96,
    requests=4,
    calibration_prompts=24,
    evaluation_prompts=16,
    sps_new_tokens=32,
    sps_sweeps=15,
    sps_seconds=30.0,
    lossless_delta=0.1,
    pool_size=768,
    pool_prefix=16,
    threshold=Fraction(1, 2),
)

SMOKE = Plan(
    target=TargetConfig(
        d_model=32, n_layers=3, n_heads=2, d_ff=64, max_len=48, feature_layers=(0, 1)
    ),
    dspark=DSparkConfig(gamma=3, n_layers=1, n_heads=2, d_ff=64, rank=8),
    eagle=EagleConfig(gamma=3, n_heads=2, d_ff=64),
    target_batch=4,
    drafter_batch=4,
    window=32,
    anchors_per_window=4,
    target_lr=3e-3,
    drafter_lr=2e-3,
    target_share=0.4,
    drafter_share=0.2,
    prompt_length=8,
    new_tokens=12,
    requests=2,
    calibration_prompts=4,
    evaluation_prompts=2,
    sps_new_tokens=6,
    sps_sweeps=2,
    sps_seconds=5.0,
    lossless_delta=0.5,
    pool_size=8,
    pool_prefix=4,
    threshold=Fraction(1, 2),
    latency_prompts=1,
    scheduler_chunks=1,
    scheduler_batches=(2, 3),
    sweep_chunks=1,
    lossless_batch=400,
)

SHIPPED = replace(
    FULL,
    # Deep and narrow: at batch 1 a step costs mostly per-layer fixed work (weight reads and
    # operator dispatch), so verifying 8 tokens costs little more than decoding 1.
    target=TargetConfig(
        d_model=256, n_layers=8, n_heads=4, d_ff=1024, max_len=192, feature_layers=(1, 4, 6)
    ),
    dspark=DSparkConfig(gamma=7, n_layers=2, n_heads=4, d_ff=416, rank=256),
    # d_ff chosen so the EAGLE-3 drafter has DSpark's parameter count within 0.1%.
    eagle=EagleConfig(gamma=7, n_heads=4, d_ff=1222),
    target_steps=900,
    drafter_steps=1000,
    anchors_per_window=96,
    pool_size=2048,
    new_tokens=64,
    calibration_prompts=96,
    evaluation_prompts=16,
    sps_new_tokens=24,
    sps_sweeps=5,
    sps_seconds=20.0,
    lossless_delta=0.15,
    scheduler_batches=(4, 8, 16),
)
"""The shipped models (``nox -s train-target`` trains them at these fixed step counts) and the
measurement sizes ``python -m specproof.runners.e2e.run`` uses on them."""


@dataclass(frozen=True)
class SubwordPlan:
    """The sub-word configuration: a target on :mod:`specproof.e2e.data.subword`'s vocabulary
    and the three drafters trained on it for the learning curves
    (:mod:`specproof.runners.e2e.experiments.learning_curves`). ``dflash`` is ``dspark`` without the
    Markov and confidence heads (the same backbone); both build the block input as the release
    does, from the target's mask-token embedding."""

    target: TargetConfig
    dspark: DSparkConfig
    dflash: DSparkConfig
    eagle: EagleConfig
    target_steps: int
    target_batch: int
    drafter_batch: int
    window: int
    anchors_per_window: int
    target_lr: float
    drafter_lr: float
    checkpoints: tuple[int, ...]
    seeds: tuple[int, ...]
    prompt_length: int
    new_tokens: int
    prompts_per_domain: int
    requests_per_chunk: int
    temperatures: tuple[float, ...] = TEMPERATURES
    warmup_steps: int = 100


SUBWORD_VOCAB = 4096
"""The committed tokenizer's vocabulary (``specproof/e2e/subword_tokenizer.json``)."""
SUBWORD_MASK_TOKEN = 1
"""Its ``<|mask|>`` token (:data:`specproof.e2e.data.subword.MASK_TOKEN`)."""

_SUBWORD_DSPARK = DSparkConfig(
    gamma=7,
    n_layers=1,
    n_heads=8,
    d_ff=512,
    rank=256,
    block_input="mask_token",
    mask_token=SUBWORD_MASK_TOKEN,
)

SUBWORD = SubwordPlan(
    # 42.0M parameters, 6.5x the shipped byte-level target's 6.4M (tests/e2e/test_subword_plan.py).
    target=TargetConfig(
        vocab=SUBWORD_VOCAB,
        d_model=512,
        n_layers=12,
        n_heads=8,
        d_ff=2048,
        max_len=256,
        feature_layers=(1, 5, 9),
    ),
    dspark=_SUBWORD_DSPARK,
    dflash=replace(_SUBWORD_DSPARK, head="none"),
    # d_ff chosen so EAGLE-3 has DSpark's parameter count (within one parameter).
    eagle=EagleConfig(gamma=7, n_heads=8, d_ff=1792),
    target_steps=8000,
    target_batch=16,
    drafter_batch=8,
    window=192,
    anchors_per_window=64,
    target_lr=1e-3,
    drafter_lr=1e-3,
    checkpoints=(1000, 2000, 4000, 8000),
    seeds=(0, 1),
    prompt_length=24,
    new_tokens=48,
    prompts_per_domain=64,
    requests_per_chunk=4,
)
"""The full sub-word configuration (``nox -s train-subword``)."""

_SMOKE_DSPARK = replace(_SUBWORD_DSPARK, gamma=3, n_heads=2, d_ff=64, rank=16)

SUBWORD_SMOKE = SubwordPlan(
    target=TargetConfig(
        vocab=SUBWORD_VOCAB,
        d_model=32,
        n_layers=3,
        n_heads=2,
        d_ff=64,
        max_len=48,
        feature_layers=(0, 1),
    ),
    dspark=_SMOKE_DSPARK,
    dflash=replace(_SMOKE_DSPARK, head="none"),
    eagle=EagleConfig(gamma=3, n_heads=2, d_ff=64),
    target_steps=20,
    target_batch=4,
    drafter_batch=2,
    window=32,
    anchors_per_window=4,
    target_lr=3e-3,
    drafter_lr=2e-3,
    checkpoints=(4, 8),
    seeds=(0, 1),
    prompt_length=8,
    new_tokens=8,
    prompts_per_domain=4,
    requests_per_chunk=2,
    warmup_steps=2,
)
"""The smallest sub-word run: wiring only (its tau means nothing)."""

SUBWORD_PLANS = {"full": SUBWORD, "smoke": SUBWORD_SMOKE}


@dataclass(frozen=True)
class SmolLM2Plan:
    """The drafters of SmolLM2-135M-Instruct (V = 49,152) and how their learning curves are
    trained and measured (:mod:`specproof.runners.e2e.experiments.smollm2_curves`). The
    target is the pretrained model, so there is no target to train."""

    dspark: DSparkConfig
    dflash: DSparkConfig
    eagle: EagleConfig
    drafter_batch: int
    window: int
    anchors_per_window: int
    drafter_lr: float
    checkpoints: tuple[int, ...]
    seeds: tuple[int, ...]
    new_tokens: int
    prompts_per_domain: int
    requests_per_chunk: int
    real_text_tokens: int
    """Tokens of real training text per domain beside the target's own continuations."""
    temperatures: tuple[float, ...] = TEMPERATURES
    warmup_steps: int = 20


SMOLLM2_MASK_TOKEN = 16
"""SmolLM2's ``<empty_output>``: a special token no prompt holds, the block's mask slot."""

_SMOLLM2_DSPARK = DSparkConfig(
    gamma=7,
    n_layers=1,
    n_heads=9,
    d_ff=1536,
    rank=256,
    block_input="mask_token",
    mask_token=SMOLLM2_MASK_TOKEN,
    markov_factors="embedding",
)

SMOLLM2 = SmolLM2Plan(
    dspark=_SMOLLM2_DSPARK,
    dflash=replace(_SMOLLM2_DSPARK, head="none"),
    eagle=EagleConfig(gamma=7, n_heads=9, d_ff=1536),
    drafter_batch=2,
    window=128,
    anchors_per_window=16,
    drafter_lr=1e-3,
    checkpoints=(50, 100, 200, 400),
    seeds=(0, 1),
    new_tokens=32,
    prompts_per_domain=32,
    requests_per_chunk=2,
    real_text_tokens=100_000,
)
"""The SmolLM2 curves (``nox -s train-smollm2``); sized in docs/results/e2e_smollm2_drafters.md."""

SMOLLM2_SMOKE = replace(
    SMOLLM2,
    checkpoints=(2, 4),
    new_tokens=4,
    prompts_per_domain=4,
    anchors_per_window=2,
    window=32,
    real_text_tokens=2_000,
    warmup_steps=2,
)
"""Wiring only, on the real target (its tau means nothing)."""

SMOLLM2_PLANS = {"full": SMOLLM2, "smoke": SMOLLM2_SMOKE}
