"""Compile every Triton kernel for a CUDA target without a GPU.

The interpreter (``TRITON_INTERPRET=1``) runs kernels as numpy code and accepts programs that
the compiler refuses (non-constexpr globals, type changes across branches, ...). This check
lowers each kernel, in each specialisation the entry points can launch, through Triton's whole
pipeline to a cubin for sm_90 (Hopper), with the ptxas that ships in Triton's wheel, so a CPU-only
machine (CI) sees compile errors before a GPU does.

Run as ``python -m specproof.optimized.kernels.compile_check`` with ``TRITON_INTERPRET`` unset
or 0 (the kernels must be real ``JITFunction`` objects). Exit status 1 if any variant fails.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import triton
from triton.backends.compiler import GPUTarget


@dataclass(frozen=True)
class Variant:
    """One specialisation: argument types (``*fp32``, ``i64``, ...; unnamed args are ``i32``)
    and constexpr values."""

    kernel: str
    types: dict[str, str]
    constants: Mapping[str, object]
    label: str = field(default="")
    unit_ints: bool = False
    """Every integer argument equal to 1: the launcher turns each into a compile-time constant
    unless the kernel declares it ``do_not_specialize``."""


ROWS = ("*fp32", "*bf16", "*fp16")
PER_REQUEST = {"lengths_ptr": "*i64", "requests_ptr": "*i64", "temperature_ptr": "*fp32"}
LARGE = {"seed": "u64", "round": "i64", "offset": "u64", "V": "i32"}
"""Words at the top of their ranges: a seed or offset >= 2^63 is passed as uint64, a round
>= 2^31 as int64."""


def chain_variants() -> Iterator[Variant]:
    modes = [(False, 0), (True, 1), (False, 2), (True, 2), (True, 0), (False, 1)]
    for index, (target_logits, q_mode) in enumerate(modes):
        rows = ROWS[index % len(ROWS)]
        draft_rows = ROWS[(index + 1) % len(ROWS)]
        tokens = "*i32" if index % 2 else "*i64"
        words = LARGE if index % 2 else {"seed": "i64", "round": "i32", "offset": "i32"}
        strides = "i64" if index % 3 == 0 else "i32"
        types = {
            "target_ptr": rows,
            "draft_ptr": draft_rows,
            "tokens_ptr": tokens,
            "out_ptr": "*i64",
            "accepted_ptr": "*i64",
            "flags_ptr": "*i8",
            "seeds_ptr": "*i64",
            "offsets_ptr": "*i64",
            "tolerance_p": "fp32",
            "tolerance_q": "fp32",
            "target_stride_b": strides,
            "draft_stride_b": strides,
            **PER_REQUEST,
            **words,
        }
        validate = index < 4
        constants = {
            "TARGET_LOGITS": target_logits,
            "Q_MODE": q_mode,
            "BLOCK": 8192,
            "VALIDATE": validate,
            "PROBABILITIES_ONLY": not target_logits and q_mode != 1,
            "PLACEHOLDER_OK": index == 1,
            "ROW_STREAMS": index in (0, 5),
        }
        yield Variant(
            "chain_verify",
            types,
            constants,
            f"target {rows}{' logits' if target_logits else ''}, q mode {q_mode}, "
            f"draft {draft_rows}, tokens {tokens}, strides {strides}"
            f"{', validated' if validate else ''}{', placeholders' if index == 1 else ''}"
            f"{', per-request streams' if index in (0, 5) else ''}",
        )


def tree_variants() -> Iterator[Variant]:
    for index, is_logits in enumerate((False, True)):
        rows = ROWS[index]
        types = {
            "target_ptr": rows,
            "candidates_ptr": "*i64",
            "first_child_ptr": "*i64",
            "next_sibling_ptr": "*i64",
            "out_ptr": "*i64",
            "nodes_ptr": "*i64",
            "accepted_ptr": "*i64",
            "requests_ptr": "*i64",
            "temperature_ptr": "*fp32",
            **(LARGE if is_logits else {"seed": "i64"}),
        }
        label = f"target {rows}{' logits' if is_logits else ''}"
        yield Variant("tree_verify", types, {"IS_LOGITS": is_logits, "BLOCK": 4096}, label)


def draft_variants() -> Iterator[Variant]:
    for index, is_logits in enumerate((False, True)):
        rows = ROWS[2 * index]
        types = {
            "scores_ptr": rows,
            "requests_ptr": "*i64",
            "temperature_ptr": "*fp32",
            "out_ptr": "*i64",
            **(LARGE if is_logits else {"seed": "i64"}),
        }
        label = f"scores {rows}{' logits' if is_logits else ''}"
        yield Variant("draft_sample", types, {"IS_LOGITS": is_logits, "BLOCK": 4096}, label)


def uniform_variants() -> Iterator[Variant]:
    types = {"out_ptr": "*fp32", "index_ptr": "*i64", "request_ptr": "*i64", **LARGE}
    yield Variant("uniforms", types, {"BLOCK": 1024}, "Philox uniforms")


def kernels() -> dict[str, triton.JITFunction]:
    from .chain_verify import _chain_verify_kernel
    from .draft_sample import _draft_sample_kernel
    from .philox import _uniforms_kernel
    from .tree_verify import _tree_verify_kernel

    return {
        "chain_verify": _chain_verify_kernel,
        "tree_verify": _tree_verify_kernel,
        "draft_sample": _draft_sample_kernel,
        "uniforms": _uniforms_kernel,
    }


def unit_variants() -> Iterator[Variant]:
    """The first variant of each kernel with every integer argument equal to 1."""
    for variants in (chain_variants(), tree_variants(), draft_variants(), uniform_variants()):
        first = next(iter(variants))
        scalars = {
            name: kind for name, kind in first.types.items() if kind[0] == "*" or kind[0] == "f"
        }
        yield Variant(first.kernel, scalars, first.constants, "every integer argument = 1", True)


def all_variants() -> list[Variant]:
    return [
        *chain_variants(),
        *tree_variants(),
        *draft_variants(),
        *uniform_variants(),
        *unit_variants(),
    ]


def compile_variant(kernel: triton.JITFunction, variant: Variant, target: GPUTarget) -> object:
    """Lower one specialisation to a cubin; raises Triton's CompilationError on failure."""
    constants = dict(variant.constants)
    if variant.unit_ints:
        for param in kernel.params:
            unknown = param.name not in variant.types and param.name not in constants
            if unknown and not param.do_not_specialize:
                constants[param.name] = 1
    signature = {
        name: "constexpr" if name in constants else variant.types.get(name, "i32")
        for name in kernel.arg_names
    }
    source = triton.compiler.ASTSource(
        fn=kernel, signature=signature, constexprs=constants, attrs={}
    )
    options = triton.compiler.make_backend(target).parse_options({"num_warps": 16})
    return triton.compile(source, target=target, options=options.__dict__)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", type=int, default=90, help="CUDA compute capability (90)")
    args = parser.parse_args(argv)
    if os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"):
        print("compile_check needs TRITON_INTERPRET unset or 0", file=sys.stderr)
        return 2
    target = GPUTarget("cuda", args.arch, 32)
    table = kernels()
    failures = 0
    for variant in all_variants():
        start = time.perf_counter()
        try:
            compile_variant(table[variant.kernel], variant, target)
            verdict = "ok"
        except Exception as error:  # report every variant, then fail
            failures += 1
            verdict = f"FAIL: {type(error).__name__}: {error}"
        seconds = time.perf_counter() - start
        print(f"{variant.kernel:13} {variant.label:70} {seconds:5.1f} s  {verdict}", flush=True)
    print(f"sm_{args.arch}: {failures} of {len(all_variants())} variants failed to compile")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
