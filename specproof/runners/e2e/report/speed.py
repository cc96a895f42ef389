"""The setup and speed sections of the end-to-end tables: batch-1 latency, the round-time
breakdown, the drafter comparison, Table 1's shape and the scheduler sign tests."""

from __future__ import annotations

import statistics
from typing import Any

from specproof.e2e.data.corpora import DOMAIN_WEIGHTS
from specproof.e2e.decoding.rounds import PHASES
from specproof.e2e.plans import SIGN_TEST_ALPHA, SIGN_TEST_SLOWER_SHARE
from specproof.runners.e2e.report.agreement import agreement_section
from specproof.runners.e2e.report.table import fmt, table
from specproof.stats.sign_test import sign_test_slower

PAPER_TAU = {"code": 5.12, "math": 5.57, "chat": 3.49}
"""The paper's Table 1 (Qwen3-4B, block of 7, temperature 1, scheduler disabled)."""


def ratio_range(row: dict[str, Any], key: str = "speed_vs_target_by_chunk") -> str:
    ratios = row[key]
    return f"{min(ratios):.2f}-{max(ratios):.2f}"


def setup_lines(results: dict[str, Any]) -> list[str]:
    plan = results["plan"]
    params = results["parameters"]
    training = results["training"]
    machine = results["machine"]
    gamma = plan["dspark"]["gamma"]
    weights = results.get("weights")
    target_tokens = training["target"]["tokens"]
    if weights == "scratch":
        origin = f"trained here {training['target']['seconds']:.0f} s ({target_tokens:,} tokens)"
        drafters = (
            f"trained {training['dspark']['seconds']:.0f} s and "
            f"{training['eagle']['seconds']:.0f} s"
        )
    else:
        shipped = weights == "shipped"
        command = (
            "`nox -s train-target`" if shipped else "`python -m specproof.runners.e2e.train_target`"
        )
        place = "the shipped bf16 safetensors" if shipped else f"the bf16 safetensors in {weights}"
        origin = (
            f"trained once by {command} ({training['target']['steps']} steps, "
            f"{target_tokens:,} tokens, fixed seeds and data) and loaded from {place} "
            "(float32 in memory)"
        )
        steps = {training[name]["steps"] for name in ("dspark", "eagle")}
        drafters = (
            f"trained {training['dspark']['steps']} steps each"
            if len(steps) == 1
            else f"trained {training['dspark']['steps']} and {training['eagle']['steps']} steps"
        ) + " on the same windows in the same order"
    return [
        f"- Target: {params['target']:,} parameters, {plan['target']['n_layers']} layers, "
        f"d={plan['target']['d_model']}, bytes as tokens; {origin}, on the standard library "
        "source (code), the pydoc topics (prose) and generated worked arithmetic (math), "
        + "/".join(f"{round(100 * w)}" for w in DOMAIN_WEIGHTS.values())
        + ".",
        "- Held-out bits per byte (mean entropy of the target's law, bits): "
        + ", ".join(
            f"{k} {v['bits_per_byte']:.3f} ({v['entropy_bits']:.2f})"
            for k, v in results["held_out_statistics"].items()
        )
        + ".",
        f"- DSpark drafter: {params['dspark']:,} parameters ({plan['dspark']['n_layers']} "
        f"draft layers over embedding(x_0) and mask slots, the target's layers "
        f"{tuple(plan['target']['feature_layers'])} fused as keys/values of every layer, Markov "
        f"rank {plan['dspark']['rank']}, gamma={gamma}, one parallel pass per block, "
        f"{plan['anchors_per_window']} anchors per window without replacement); EAGLE-3 "
        f"drafter: {params['eagle']:,} parameters (the same fused layers, 1 layer over "
        "[norm(embedding); norm(hidden)], training-time test over gamma steps, one pass per "
        f"drafted token); {drafters}: half real-text windows, half a pool of "
        f"{training['pool']['windows']} windows the target wrote itself.",
        f"- Decoding: prompts of {plan['prompt_length']} bytes from held-out documents, "
        f"{plan['new_tokens']} new tokens per request, KV caches for target and drafters. "
        "Chain verification for the speed tables: `specproof.e2e.decoding.verifier` (the rule of "
        "`specproof.optimized.chain_verify`, all positions in one set of tensor operations, "
        "uniforms from a seeded generator; the optimized torch backend evaluates Philox with "
        "many small integer operations per position, which alone costs more than a target step "
        "here). Losslessness is checked for both verifiers.",
        f"- Machine: {machine.get('device', 'CPU')}; {machine['threads']} torch thread(s) on a "
        "2-core machine that other jobs may share. Speeds are therefore paired: "
        "the decoders of one table decode each chunk of prompts back to back, in a fresh random "
        "order per chunk, and 'x target' is the median over chunks of the per-chunk ratio of "
        "tokens/s to the target alone on the same chunk (ranges and per-chunk ratios in the "
        "JSON). tok/s counts all tokens over all decoding time (prefill excluded). 'Full "
        "batch' counts only rounds in which every request of the batch was still decoding (a "
        "static batch ends in a tail that an engine with continuous batching would refill).",
    ]


def latency_section(results: dict[str, Any]) -> list[str]:
    latency = results.get("latency")
    if not latency:
        return []
    matched = results["drafting_time_match"]
    lines = [
        "### Batch size 1: speed against the target alone",
        "",
        "One prompt per chunk. Algorithm 1 uses SPS(B) profiled at one request and the STS "
        "confidences fitted at the decoding temperature. 'draft ms' is the drafter's time per "
        "round (DSpark: its whole block in one pass, then the Markov head's sequential draws; "
        "EAGLE-3: one layer pass per token).",
        "",
    ]
    rows = []
    for key, entries in latency.items():
        for label, row in entries.items():
            draft = row["breakdown_ms"]["draft"] if "breakdown_ms" in row else None
            rows.append(
                [
                    key,
                    label,
                    row["tau"],
                    row["tokens_per_second"],
                    row["speed_vs_target"],
                    ratio_range(row),
                    draft,
                ]
            )
    lines += table(
        [
            "domain / T",
            "decoder",
            "tau",
            "tok/s",
            "x target (median)",
            "per-chunk range",
            "draft ms",
        ],
        rows,
    )
    lines += [
        "",
        f"The EAGLE-3 drafter at DSpark's drafting time: at batch 1 DSpark's block took "
        f"{matched['dspark_draft_ms']:.2f} ms per round, the EAGLE-3 drafter "
        + ", ".join(f"{v:.2f} ms at gamma={g}" for g, v in matched["eagle_draft_ms"].items())
        + f" (calibration prompts); the closest, gamma={matched['gamma']}, is the matched row.",
    ]
    return lines + paired_drafter_lines(latency, results["plan"]["dspark"]["gamma"])


def paired_drafter_lines(latency: dict[str, Any], gamma: int) -> list[str]:
    """DSpark + Algorithm 1 against EAGLE-3 at the full block, chunk by chunk: the exact
    one-sided sign test of "DSpark + Algorithm 1 is faster" on the recorded per-chunk ratios."""
    candidate, reference = "DSpark + Algorithm 1", f"EAGLE-3, fixed gamma={gamma}"
    rows = []
    for key, entries in latency.items():
        if candidate not in entries or reference not in entries:
            continue
        ours = entries[candidate]["speed_vs_target_by_chunk"]
        theirs = entries[reference]["speed_vs_target_by_chunk"]
        # Both are ratios to the target on the same chunk, so their quotient is the two
        # decoders' speed ratio on that chunk; "faster" is "the reference is slower".
        test = sign_test_slower(
            [t / o for o, t in zip(ours, theirs, strict=True)],
            SIGN_TEST_ALPHA,
            SIGN_TEST_SLOWER_SHARE,
        )
        rows.append(
            [
                key,
                fmt(statistics.median(o / t for o, t in zip(ours, theirs, strict=True))),
                f"{test.slower}/{test.n}",
                fmt(test.p_value),
                fmt(test.power),
                "faster" if test.rejected else "not shown faster",
            ]
        )
    if not rows:
        return []
    return [
        "",
        f"{candidate} against {reference}, paired on the same chunks: exact one-sided sign "
        f"test of '{candidate} is faster', alpha = {SIGN_TEST_ALPHA} per row, power against "
        f"'faster on a chunk with probability {SIGN_TEST_SLOWER_SHARE}'.",
        "",
        *table(
            [
                "domain / T",
                "median speed ratio",
                "chunks faster",
                "p",
                "power",
                "verdict",
            ],
            rows,
        ),
    ]


def breakdown_section(results: dict[str, Any]) -> list[str]:
    lines = [
        "### Round-time breakdown",
        "",
        "Mean milliseconds per round in each phase: draft (DSpark's confidence head included, "
        "computed with its block), confidences (calibration and the copy to the host "
        "scheduler), schedule, target pass (the cached pass over the verified tokens and its "
        "softmax), verify, commit (cache commits, the drafter's update, the scatter of the "
        "emitted tokens). The round has no loop over requests; its host syncs are the "
        "scheduler's input and the count of requests still decoding.",
        "",
    ]
    rows = []
    for key, entries in results.get("latency", {}).items():
        if not key.endswith("T=1"):
            continue
        for label, row in entries.items():
            if "breakdown_ms" in row:
                b = row["breakdown_ms"]
                rows.append([f"B=1 {key}", label, *[b[p] for p in PHASES], b["round"]])
            else:
                rows.append([f"B=1 {key}", "target only (one step)", *[None] * 6, row["step_ms"]])
    for key, row in results["evaluation"].items():
        if key.endswith("T=1"):
            for name in ("dspark", "eagle"):
                if "breakdown_ms" in row[name]:
                    b = row[name]["breakdown_ms"]
                    label = "DSpark" if name == "dspark" else "EAGLE-3"
                    rows.append(
                        [
                            f"B={results['plan']['requests']} {key}",
                            f"{label}, fixed gamma",
                            *[b[p] for p in PHASES],
                            b["round"],
                        ]
                    )
    lines += table(["batch / domain", "decoder", *PHASES, "round"], rows)
    return lines


def table1_section(results: dict[str, Any]) -> list[str]:
    latency = results.get("latency")
    if not latency:
        return []
    gamma = results["plan"]["dspark"]["gamma"]
    lines = [
        "### Table 1 shape: tau per domain",
        "",
        f"Ours: fixed block of {gamma}, no scheduler, temperature 1, batch 1, held-out prompts, "
        "this tiny byte-level target. The paper's: Qwen3-4B, block of 7, temperature 1, "
        "scheduler disabled, its own benchmarks (math, code, chat). The columns are not "
        "comparable in scale (different targets, tokenizers and data); the shape to compare is "
        "the ordering across domains and between drafters. Our prose (pydoc topics) stands in "
        "for the paper's chat, in a row of its own; nothing is mixed.",
        "",
    ]
    rows = []
    ordered = [d for d in ("math", "code") if d in results["corpora"]]
    ordered += [d for d in results["corpora"] if d not in ordered]
    for domain in ordered:
        entries = latency.get(f"{domain}/T=1", {})
        dspark = entries.get(f"DSpark, fixed gamma={gamma}", {}).get("tau")
        eagle = entries.get(f"EAGLE-3, fixed gamma={gamma}", {}).get("tau")
        rows.append([domain, dspark, eagle, PAPER_TAU.get(domain)])
    rows.append(["chat", None, None, PAPER_TAU["chat"]])
    lines += table(
        ["domain", "ours: DSpark tau", "ours: EAGLE-3 tau", "the paper's DSpark tau"], rows
    )
    return lines


def scheduler_section(results: dict[str, Any]) -> list[str]:
    tests = results.get("scheduler_tests")
    if not tests:
        return []
    first = next(iter(tests.values()))
    any_test = next(iter(next(iter(first["sign_tests"].values())).values()))
    lines = [
        "### Schedulers at larger batches, with a paired sign test",
        "",
        "Clock: the wall clock (measured): paired wall-clock tokens/s of decodes run back to "
        "back, not a model. "
        "DSpark, temperature 1, STS confidences, SPS(B) profiled at the batch size. The "
        "fixed gamma is chosen by a pilot sweep over gamma = "
        f"1..{results['plan']['dspark']['gamma']} "
        "on calibration prompts (full-batch tokens/s), then compared on held-out chunks of every "
        "domain. Tests: exact one-sided "
        "sign tests of 'Algorithm 1 is slower' and (whole decode) of 'Algorithm 1 is faster' "
        "over the per-chunk paired ratios (ties dropped); "
        f"false-alarm rate alpha = {any_test['alpha']} each, for any distribution of the ratios; "
        f"power stated against 'Algorithm 1 is slower (faster) on a chunk with probability "
        f"{any_test['slower_share']}'. The median ratio is Algorithm 1 / the reference in "
        "every row.",
        "",
    ]
    rows = []
    for batch, entry in tests.items():
        for reference, kinds in entry["sign_tests"].items():
            for kind, t in kinds.items():
                claim = t.get("claim", "slower")
                own = kinds["whole_decode"] if claim == "faster" else t
                rows.append(
                    [
                        batch,
                        reference,
                        f"{kind.replace('_faster', '').replace('_', ' ')}: {claim}?",
                        own["median_ratio"],
                        f"{min(own['ratios']):.2f}-{max(own['ratios']):.2f}",
                        f"{t['slower']}/{t['n']} {claim}",
                        t["p_value"],
                        t["critical"],
                        t["power"],
                        claim if t["rejected"] else f"not shown {claim}",
                    ]
                )
    lines += table(
        [
            "B",
            "Algorithm 1 against",
            "speed: Algorithm 1 ...",
            "median ratio",
            "range",
            "chunks",
            "p",
            "reject at >=",
            "power",
            "verdict",
        ],
        rows,
    )
    lines += [
        "",
        "Per domain (x target is the median of per-chunk ratios to the target alone):",
        "",
    ]
    rows = []
    for batch, entry in tests.items():
        for domain, entries in entry["domains"].items():
            for label, row in entries.items():
                rows.append(
                    [
                        batch,
                        domain,
                        label,
                        row["tau"],
                        row.get("mean_verified_drafts"),
                        row["tokens_per_second"],
                        row["speed_vs_target"],
                        row["full_batch_speed_vs_target"],
                    ]
                )
    lines += table(
        [
            "B",
            "domain",
            "decoder",
            "tau",
            "drafts verified",
            "tok/s",
            "x target",
            "full-batch x target",
        ],
        rows,
    )
    lines += [
        "",
        "Fixed-gamma sweeps (full-batch tok/s, calibration prompts): "
        + "; ".join(
            f"B={b}: "
            + ", ".join(
                f"{g}: {fmt(v, 0)}" for g, v in e["sweep_full_batch_tokens_per_second"].items()
            )
            for b, e in tests.items()
        )
        + ".",
    ]
    return lines


def speed_sections(results: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    sections = (
        latency_section,
        breakdown_section,
        agreement_section,
        table1_section,
        scheduler_section,
    )
    for section in sections:
        part = section(results)
        if part:
            lines += [*part, ""]
    return lines
