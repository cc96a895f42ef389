"""OpenVINO GenAI's draft-model speculative sampling changes the law of the tokens it emits.

Run with the engine and the GGUF writer installed (CPU; under a minute, no download, no torch):

    pip install openvino-genai==2026.4.1.0 gguf numpy
    python docs/findings/openvino_genai_speculative_sampling.py

Two random 2-layer Llamas with 8 tokens (the draft: the target's weights plus noise) are
written as float16 GGUF; OpenVINO GenAI reads each once and saves it as OpenVINO IR
(``enable_save_ov_model``). ``ContinuousBatchingPipeline.generate`` then runs N requests of
three tokens at T = 1 (``do_sample``, ``ignore_eos``, a distinct ``rng_seed`` each) on the same
prompt, once without speculation and once with ``draft_model`` and ``num_assistant_tokens=2``,
with a scheduler token budget that holds every prompt of a call (``max_num_batched_tokens``: a
smaller one splits prefills across steps, a separate defect:
openvino_genai_speculative_split_prefill.md). The laws of the first and second tokens are known
exactly from the IR's own logits (the second: the first's law times the next softmax, summed).
Speculative decoding must leave both unchanged; the script prints the TV distance of each run's
frequencies from them. Exit status 1 when the speculative TV of the second token exceeds
:data:`BOUND` while both plain ones stay under it.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import gguf
import numpy as np
import openvino as ov
import openvino_genai

VOCAB, HIDDEN, FFN, HEADS, KV_HEADS, LAYERS = 8, 64, 128, 2, 1, 2
HEAD = HIDDEN // HEADS
PROMPT = [4] * 8
N = 10_000
BATCH = 500
"""Requests per ``generate`` call (one call of all N takes minutes: the scheduler slows)."""
TOKEN_BUDGET = 1_000_000
"""``max_num_batched_tokens``: every prompt of a call is prefilled in one step."""
BOUND = 0.05
"""TV a correct engine stays under: the expected TV of N = 10,000 draws over 8 tokens from
their law is about 0.015, and 0.05 is more than 8 standard deviations above it."""


def weights(seed: int, noise: float = 0.0) -> dict[str, np.ndarray]:
    """A Llama's matrices (numpy order: out, in), std 0.2: logits of a few units; ``noise``
    adds that fraction of fresh noise (seed + 1) to each matrix."""
    rng = np.random.default_rng(seed)
    jitter = np.random.default_rng(seed + 1)
    per_layer = {
        "attn_q": (HIDDEN, HIDDEN), "attn_k": (KV_HEADS * HEAD, HIDDEN),
        "attn_v": (KV_HEADS * HEAD, HIDDEN), "attn_output": (HIDDEN, HIDDEN),
        "ffn_gate": (FFN, HIDDEN), "ffn_up": (FFN, HIDDEN), "ffn_down": (HIDDEN, FFN),
    }  # fmt: skip
    shapes = {"token_embd": (VOCAB, HIDDEN), "output": (VOCAB, HIDDEN)}
    for layer in range(LAYERS):
        shapes |= {f"blk.{layer}.{name}": shape for name, shape in per_layer.items()}
    out = {}
    for name, shape in shapes.items():
        matrix = 0.2 * rng.standard_normal(shape)
        out[name] = matrix + noise * 0.2 * jitter.standard_normal(shape)
    return out


def write_gguf(path: Path, matrices: dict[str, np.ndarray]) -> None:
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(128)
    writer.add_embedding_length(HIDDEN)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_freq_base(10000.0)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_key_length(HEAD)
    writer.add_value_length(HEAD)
    writer.add_rope_dimension_count(HEAD)
    writer.add_vocab_size(VOCAB)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(["<s>", "a", "b", "c", "d", "e", "ab", "</s>"])
    writer.add_token_types([3, 1, 1, 1, 1, 1, 1, 3])
    writer.add_token_merges(["a b"])
    writer.add_bos_token_id(0)
    writer.add_eos_token_id(VOCAB - 1)
    for name, matrix in matrices.items():
        writer.add_tensor(f"{name}.weight", matrix.astype(np.float16))
    for layer in range(LAYERS):
        for norm in ("attn_norm", "ffn_norm"):
            writer.add_tensor(f"blk.{layer}.{norm}.weight", np.ones(HIDDEN, dtype=np.float32))
    writer.add_tensor("output_norm.weight", np.ones(HIDDEN, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def as_ir(folder: Path, matrices: dict[str, np.ndarray]) -> Path:
    """The model as the IR folder OpenVINO GenAI saves from its GGUF."""
    folder.mkdir()
    write_gguf(folder / "model.gguf", matrices)
    openvino_genai.LLMPipeline(str(folder / "model.gguf"), "CPU", enable_save_ov_model=True)
    return folder


def next_token_law(infer: ov.InferRequest, sequence: list[int]) -> np.ndarray:
    """The softmax of the IR's logits after ``sequence`` (one pass from an empty state)."""
    infer.reset_state()
    length = len(sequence)
    infer.infer({
        "input_ids": np.array([sequence]), "attention_mask": np.ones((1, length), np.int64),
        "position_ids": np.arange(length)[None], "beam_idx": np.zeros(1, np.int32),
    })  # fmt: skip
    logits = np.array(infer.get_tensor("logits").data[0, -1], dtype=np.float64)
    return np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()


def token_laws(folder: Path) -> tuple[np.ndarray, np.ndarray]:
    """The exact laws of the first and of the second token after PROMPT."""
    core = ov.Core()
    infer = core.compile_model(core.read_model(folder / "openvino_model.xml"), "CPU")
    request = infer.create_infer_request()
    first = next_token_law(request, PROMPT)
    second = sum(first[x] * next_token_law(request, [*PROMPT, x]) for x in range(VOCAB))
    return first, second


def two_tokens(target: Path, properties: dict[str, object], draft: bool) -> np.ndarray:
    """[2, VOCAB]: the frequencies of the first and the second token over N requests."""
    scheduler = openvino_genai.SchedulerConfig()
    scheduler.cache_size = 1
    scheduler.max_num_batched_tokens = TOKEN_BUDGET
    pipeline = openvino_genai.ContinuousBatchingPipeline(str(target), scheduler, "CPU", properties)
    requests = []
    for seed in range(N):
        request = openvino_genai.GenerationConfig(
            max_new_tokens=3, do_sample=True, temperature=1.0, ignore_eos=True, rng_seed=seed
        )
        if draft:
            request.num_assistant_tokens = 2
        requests.append(request)
    prompt = ov.Tensor(np.array([PROMPT], dtype=np.int64))
    runs = []
    for start in range(0, N, BATCH):
        chunk = requests[start : start + BATCH]
        runs += [r.m_generation_ids[0] for r in pipeline.generate([prompt] * len(chunk), chunk)]
    return np.stack([np.bincount([run[i] for run in runs], minlength=VOCAB) / N for i in (0, 1)])


def main() -> int:
    with tempfile.TemporaryDirectory() as scratch:
        target = as_ir(Path(scratch) / "target", weights(0))
        draft = as_ir(Path(scratch) / "draft", weights(0, noise=0.25))
        laws = np.stack(token_laws(target))
        plain = two_tokens(target, {}, draft=False)
        speculative = two_tokens(
            target, {"draft_model": openvino_genai.draft_model(str(draft), "CPU")}, draft=True
        )
    np.set_printoptions(precision=4, suppress=True)
    print(f"openvino-genai {openvino_genai.__version__}; prompt {PROMPT}; T = 1; N = {N}")
    tv = {}
    for index, name in enumerate(("first", "second")):
        print(f"{name} token's law (the IR's logits)  {laws[index]}")
        print(f"  no speculation                      {plain[index]}")
        print(f"  draft_model, num_assistant_tokens=2 {speculative[index]}")
        tv[name] = (0.5 * float(np.abs(plain[index] - laws[index]).sum()),
                    0.5 * float(np.abs(speculative[index] - laws[index]).sum()))  # fmt: skip
        print(f"  TV from the law: plain {tv[name][0]:.4f}, speculative {tv[name][1]:.4f} "
              f"(a correct engine stays under {BOUND})")  # fmt: skip
    plain_ok = tv["first"][0] <= BOUND and tv["second"][0] <= BOUND
    return 1 if plain_ok and tv["second"][1] > BOUND else 0


if __name__ == "__main__":
    sys.exit(main())
