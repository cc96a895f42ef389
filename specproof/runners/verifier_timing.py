"""specproof's verification step in vLLM timed against what it replaces: vLLM's own step with
only its CPU expand kernel corrected (``vllm_sampler.expand_in_place``, the fastest correct
vLLM path on a CPU without a Triton backend). Run in the ``audit-vllm`` venv:

    python -m specproof.runners.verifier_timing [--quick]

- ``step``: ``RejectionSampler.forward`` alone on one sampler, vLLM's forward and the
  installed one called alternately on the same inputs (pairs in ABBA order), at engine shapes
  (requests B, drafts k per request, vocabulary V, logits dtype, sampling setting); per shape
  the median and quartiles of each and of the per-pair ratio specproof / vLLM. specproof's
  step validates its inputs, as shipped.
- ``generate``: ``LLM.generate`` tokens per second on one in-process engine (draft model k = 3
  on the tiny models), the step uninstalled and installed alternately between calls.

Writes benchmarks/vllm_verifier_timing.json and .md (thread count and load average with them).
``--only B,k,V[,dtype[,drafts[,sampling]]]`` times only the matching step rows, and ``--merge``
puts them into the existing table in place of their earlier measurements (each row carries the
date it was measured; the earlier runs' load averages are kept).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[2]
JSON_PATH = ROOT / "benchmarks" / "vllm_verifier_timing.json"
MD_PATH = ROOT / "benchmarks" / "vllm_verifier_timing.md"
TARGET_RATIO = 1.05
SAMPLINGS: dict[str, dict[str, Any]] = {
    "T=1": {"temperature": 1.0, "top_k": None, "top_p": None},
    "T=0.7 top-k 50 top-p 0.9": {"temperature": 0.7, "top_k": 50, "top_p": 0.9},
}
SHAPES = [  # (B, k, V)
    (1, 3, 32000), (16, 3, 32000), (64, 8, 32000), (256, 1, 32000), (256, 4, 32000),
    (1, 3, 151936), (16, 3, 151936), (64, 4, 151936), (256, 1, 151936),
]  # fmt: skip
QUICK_SHAPES = [(4, 3, 32000), (16, 3, 151936)]


def quartiles(values: list[float]) -> dict[str, float]:
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return {"q1": q1, "median": median, "q3": q3}


def prepared_sampler() -> Any:
    """vLLM's ``RejectionSampler`` with its CPU expand kernel corrected before the CPU kernels are
    registered (what :func:`specproof.adapters.vllm_sampler.forward_logits_expand_fixed` does)."""
    from vllm.utils import cpu_triton_utils
    from vllm.v1.sample.rejection_sampler import RejectionSampler
    from vllm.v1.sample.sampler import Sampler

    from specproof.adapters.vllm_sampler import _prepared, expand_in_place

    cpu_triton_utils._expand_kernel_impl = expand_in_place
    _prepared()
    return RejectionSampler(Sampler())


DRAFTS = ("rejected", "accepted")
"""Random drafts (almost all rejected at the first position: specproof's step reads little
past it), or drafts on a token given most of the mass (almost all accepted: every row read)."""


def step_inputs(
    batch: int, k: int, vocab: int, dtype: torch.dtype, sampling: str, drafts: str = "rejected"
) -> tuple[Any, None, torch.Tensor, Any]:
    """One step's inputs: random logits (scale 4) for B requests of k drafts each, drafts
    taken deterministically (draft_probs None, as n-gram and EAGLE drafts), unseeded requests;
    ``drafts`` "accepted" raises each drafted token's logit by 20 (and the bonus row's first
    token's), so nearly every draft is accepted."""
    from vllm.v1.spec_decode.metadata import SpecDecodeMetadata

    from specproof.adapters.vllm_sampler import sampling_metadata

    generator = torch.Generator().manual_seed(batch * 1000 + k)
    tokens = batch * k
    logits = (torch.randn(tokens + batch, vocab, generator=generator) * 4).to(dtype)
    per_request = torch.arange(batch + 1, dtype=torch.int32)
    # vLLM's layout: request r's k target rows, then its bonus row.
    target = torch.arange(tokens + batch).view(batch, k + 1)
    draft_ids = torch.randint(0, vocab, (tokens,), generator=generator, dtype=torch.int32)
    if drafts == "accepted":
        rows = target[:, :k].reshape(-1)
        logits[rows, draft_ids.to(torch.int64)] += 20
    spec = SpecDecodeMetadata(
        draft_token_ids=draft_ids,
        num_draft_tokens=[k] * batch,
        cu_num_draft_tokens=(per_request[1:] * k).to(torch.int32),
        cu_num_sampled_tokens=(per_request[1:] * (k + 1)).to(torch.int32),
        target_logits_indices=target[:, :k].reshape(-1).to(torch.int32),
        bonus_logits_indices=target[:, k].to(torch.int32),
        logits_indices=torch.arange(tokens + batch, dtype=torch.int32),
    )
    setting = SAMPLINGS[sampling]
    fields = SimpleNamespace(
        temperature=torch.full((batch,), setting["temperature"]),
        all_greedy=False,
        all_random=True,
        top_k=None if setting["top_k"] is None else torch.full((batch,), setting["top_k"]),
        top_p=None if setting["top_p"] is None else torch.full((batch,), setting["top_p"]),
        generators={},
    )
    return spec, None, logits, sampling_metadata(fields, batch)


def paired_times(
    first: Callable[[], Any], second: Callable[[], Any], pairs: int
) -> tuple[list[float], list[float]]:
    """Seconds of ``first`` and ``second`` over ``pairs`` pairs, in ABBA order (one warm-up
    call of each first)."""
    first(), second()
    times: tuple[list[float], list[float]] = ([], [])
    for index in range(pairs):
        order = (0, 1) if index % 2 == 0 else (1, 0)
        for which in order:
            call = (first, second)[which]
            started = time.perf_counter()
            call()
            times[which].append(time.perf_counter() - started)
    return times


SMALL_STEP_ELEMENTS = 4 * 2**20
"""A step whose logits have at most this many entries is timed with ``--small-pairs`` pairs: it
takes milliseconds, so its ratio is noisier per pair and more pairs are cheap."""


def row_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["batch"], row["k"], row["vocab"], row["dtype"], row["sampling"], row["drafts"])


def time_steps(
    shapes: list[tuple[int, int, int]],
    pairs: int,
    small_pairs: int | None = None,
    wanted: Callable[[tuple[Any, ...]], bool] = lambda key: True,
) -> list[dict[str, Any]]:
    from vllm.v1.sample.rejection_sampler import RejectionSampler

    from specproof.adapters import vllm_verifier

    sampler = prepared_sampler()
    vllm_forward = RejectionSampler.forward
    rows = []
    for batch, k, vocab in shapes:
        for dtype, sampling, drafts in itertools.product(
            (torch.float32, torch.bfloat16), SAMPLINGS, DRAFTS
        ):
            key = (batch, k, vocab, str(dtype).split(".")[-1], sampling, drafts)
            if not wanted(key):
                continue
            small = batch * (k + 1) * vocab <= SMALL_STEP_ELEMENTS
            row_pairs = small_pairs if small and small_pairs else pairs
            args = step_inputs(batch, k, vocab, dtype, sampling, drafts)
            with torch.no_grad():
                theirs, ours = paired_times(
                    lambda: vllm_forward(sampler, *args),  # noqa: B023
                    lambda: vllm_verifier.verifier_forward(sampler, *args),  # noqa: B023
                    row_pairs,
                )
            ratios = [o / t for o, t in zip(ours, theirs, strict=True)]
            row = {
                "batch": batch, "k": k, "vocab": vocab, "dtype": str(dtype).split(".")[-1],
                "sampling": sampling, "drafts": drafts, "pairs": row_pairs,
                "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "vllm_ms": {n: v * 1e3 for n, v in quartiles(theirs).items()},
                "specproof_ms": {n: v * 1e3 for n, v in quartiles(ours).items()},
                "ratio": quartiles(ratios),
            }  # fmt: skip
            print(step_line(row), flush=True)
            rows.append(row)
    return rows


def time_generate(pairs: int, requests: int, tokens: int) -> dict[str, Any]:
    """``LLM.generate`` tokens per second, vLLM's corrected step and specproof's alternately
    on one in-process engine (draft model k = 3, tiny models, T = 1, seeded requests)."""
    os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    os.environ.pop("TRITON_INTERPRET", None)
    from vllm.utils import cpu_triton_utils

    from specproof.adapters import vllm_engine as ve
    from specproof.adapters import vllm_verifier
    from specproof.adapters.vllm_sampler import expand_in_place
    from specproof.subjects.real_models import PROMPT, build_models

    cpu_triton_utils._expand_kernel_impl = expand_in_place
    os.environ.update({k: v for k, v in ve.ENV.items() if k not in os.environ})
    import vllm

    with tempfile.TemporaryDirectory() as folder:
        paths = build_models(Path(folder))
        llm = vllm.LLM(
            model=str(paths.target), dtype="float32", max_model_len=ve.MAX_MODEL_LEN, seed=0,
            speculative_config=ve.speculative_config(ve.Speculation("draft", 3), paths),
            generation_config="vllm", enable_prefix_caching=False, enforce_eager=True,
            distributed_executor_backend="uni",
        )  # fmt: skip
        prompts = [{"prompt_token_ids": list(PROMPT)}] * requests
        counter = [0]

        def generate() -> None:
            counter[0] += 1
            params = [
                vllm.SamplingParams(temperature=1.0, max_tokens=tokens, ignore_eos=True,
                                    detokenize=False, seed=counter[0] * 100_003 + i)
                for i in range(requests)
            ]  # fmt: skip
            llm.generate(prompts, params, use_tqdm=False)

        def with_vllm() -> None:
            vllm_verifier.uninstall()
            generate()

        def with_specproof() -> None:
            vllm_verifier.install()
            generate()

        theirs, ours = paired_times(with_vllm, with_specproof, pairs)
        vllm_verifier.uninstall()
    made = requests * tokens
    ratios = [o / t for o, t in zip(ours, theirs, strict=True)]
    return {
        "engine": "draft model k=3, tiny models, float32, in-process engine (uni executor)",
        "requests": requests, "tokens_per_request": tokens, "pairs": pairs,
        "vllm_tokens_per_s": {n: made / v for n, v in quartiles(theirs).items()},
        "specproof_tokens_per_s": {n: made / v for n, v in quartiles(ours).items()},
        "time_ratio": quartiles(ratios),
    }  # fmt: skip


def step_line(row: dict[str, Any]) -> str:
    v, s, r = row["vllm_ms"], row["specproof_ms"], row["ratio"]
    return (
        f"| {row['batch']} | {row['k']} | {row['vocab']} | {row['dtype']} | {row['sampling']} | "
        f"{row['drafts']} | "
        f"{v['median']:.2f} ({v['q1']:.2f}-{v['q3']:.2f}) | "
        f"{s['median']:.2f} ({s['q1']:.2f}-{s['q3']:.2f}) | "
        f"{r['median']:.3f} ({r['q1']:.3f}-{r['q3']:.3f}) | {row['pairs']} | "
        f"{row.get('measured', '')} |"
    )


def markdown(result: dict[str, Any]) -> str:
    meta = result["machine"]
    lines = [
        f"Measured {meta['date']} on {meta['machine']}: torch {meta['torch']} with "
        f"{meta['threads']} threads, vLLM {meta['vllm']}; load average {meta['load_before']} "
        f"before, {meta['load_after']} after.",
        *(
            f"An earlier run whose rows this table keeps ended {run['date']} (load average "
            f"{run['load_before']} before, {run['load_after']} after)."
            for run in result.get("earlier_runs", [])
        ),
        "",
        "Verification step alone (`RejectionSampler.forward`, pairs in ABBA order; milliseconds "
        "and ratio specproof / vLLM: median (quartiles)):",
        "",
        "| B | k | V | logits | sampling | drafts | vLLM, expand kernel corrected | specproof "
        "| ratio | pairs | measured |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *(step_line(row) for row in result["step"]),
    ]
    generate = result.get("generate")
    if generate:
        v, s = generate["vllm_tokens_per_s"], generate["specproof_tokens_per_s"]
        r = generate["time_ratio"]
        lines += [
            "",
            f"`LLM.generate` ({generate['engine']}; {generate['requests']} requests of "
            f"{generate['tokens_per_request']} tokens per call, {generate['pairs']} pairs): "
            f"vLLM's step {v['median']:.0f} tokens/s ({v['q3']:.0f}-{v['q1']:.0f}, the time "
            f"quartiles), specproof's {s['median']:.0f} ({s['q3']:.0f}-{s['q1']:.0f}); time ratio "
            f"{r['median']:.3f} ({r['q1']:.3f}-{r['q3']:.3f})"
            + (f", measured {generate['measured']}." if "measured" in generate else "."),
        ]
    if result["step"]:
        worst = max(row["ratio"]["median"] for row in result["step"])
        lines += ["", f"Largest median step ratio: {worst:.3f} (target <= {TARGET_RATIO})."]
    return "\n".join(lines) + "\n"


def parse_only(text: str) -> tuple[Any, ...]:
    """``B,k,V[,dtype[,drafts[,sampling]]]`` as a row key (batch, k, vocab, dtype, sampling,
    drafts) with None for a field not given; sampling is an index into :data:`SAMPLINGS`."""
    parts = text.split(",")
    if not 3 <= len(parts) <= 6:
        raise ValueError(f"expected B,k,V[,dtype[,drafts[,sampling]]], got {text!r}")
    shape = tuple(int(x) for x in parts[:3])
    if shape not in SHAPES:
        raise ValueError(f"{text!r}: shape {shape} is not one of {SHAPES}")
    dtype, drafts, sampling = [*parts[3:], None, None, None][:3]
    if dtype is not None and dtype not in ("float32", "bfloat16"):
        raise ValueError(f"{text!r}: dtype must be float32 or bfloat16")
    if drafts is not None and drafts not in DRAFTS:
        raise ValueError(f"{text!r}: drafts must be one of {DRAFTS}")
    names = list(SAMPLINGS)
    if sampling is not None and sampling not in ("0", "1"):
        raise ValueError(f"{text!r}: sampling must be 0 ({names[0]}) or 1 ({names[1]})")
    return (*shape, dtype, None if sampling is None else names[int(sampling)], drafts)


def matches(key: tuple[Any, ...], wanted: tuple[Any, ...]) -> bool:
    return all(w is None or k == w for k, w in zip(key, wanted, strict=True))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="two small shapes, few pairs")
    parser.add_argument("--pairs", type=int, default=7, help="pairs per step shape")
    parser.add_argument(
        "--small-pairs",
        type=int,
        default=None,
        help=f"pairs per step shape of at most {SMALL_STEP_ELEMENTS} logits (default: --pairs)",
    )
    parser.add_argument("--generate-pairs", type=int, default=7, help="LLM.generate pairs")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="B,k,V[,dtype[,drafts[,sampling]]]",
        help="time only the step rows matching (repeatable); sampling is 0 (T=1) or 1",
    )
    parser.add_argument(
        "--merge",
        action="store_true",
        help="replace the timed rows in the existing JSON, keep the others (each row dated)",
    )
    parser.add_argument("--no-generate", action="store_true", help="skip LLM.generate")
    parser.add_argument(
        "--no-step", action="store_true", help="skip the step alone (with --merge: kept)"
    )
    parser.add_argument("--json", type=Path, default=JSON_PATH)
    parser.add_argument("--markdown", type=Path, default=MD_PATH)
    args = parser.parse_args(argv)
    if min(args.pairs, args.small_pairs or 2, args.generate_pairs) < 2:
        parser.error("--pairs, --small-pairs and --generate-pairs must be at least 2")
    try:
        filters = [parse_only(text) for text in args.only]
    except ValueError as error:
        parser.error(f"--only: {error}")
    import vllm

    load_before = [round(x, 2) for x in os.getloadavg()]
    shapes = QUICK_SHAPES if args.quick else SHAPES
    if filters and not args.quick:
        shapes = sorted({f[:3] for f in filters}, key=SHAPES.index)

    def wanted(key: tuple[Any, ...]) -> bool:
        return not filters or any(matches(key, f) for f in filters)

    pairs = 3 if args.quick else args.pairs
    steps = (
        []
        if args.no_step
        else time_steps(shapes, pairs, None if args.quick else args.small_pairs, wanted)
    )
    previous = json.loads(args.json.read_text()) if args.merge and args.json.exists() else {}
    if previous:
        fresh = {row_key(row): row for row in steps}
        old = previous.get("step", [])
        for row in old:  # rows of an earlier run keep that run's date
            row.setdefault("measured", previous["machine"]["date"])
        steps = [fresh.pop(row_key(row), row) for row in old] + list(fresh.values())
    result: dict[str, Any] = {"step": steps}
    if not args.no_generate:
        result["generate"] = time_generate(3 if args.quick else args.generate_pairs, 64, 24)
        result["generate"]["measured"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    elif previous.get("generate"):
        result["generate"] = previous["generate"]
    result["machine"] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "vllm": vllm.__version__,
        "load_before": load_before,
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    if previous:
        earlier = previous.get("earlier_runs", [])
        result["earlier_runs"] = [*earlier, previous["machine"]]
    args.json.write_text(json.dumps(result, indent=1) + "\n")
    table = markdown(result)
    args.markdown.write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
