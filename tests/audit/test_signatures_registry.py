"""A signature is an object found by name: the registry names the four engines' call shapes,
refuses an unknown name with the known ones, and a fifth signature is one class plus one
``register`` line: the audit's cases, the hunt and the command line reach it with no other
change. Beyond that, no module outside ``specproof/audit/signatures/`` compares a signature's
name or keys a table by the names (an AST scan)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch

from specproof.audit import audit_verifier
from specproof.audit.audit_settings import AuditSettings
from specproof.audit.cases import verifier_problems
from specproof.audit.drafting import Drafts
from specproof.audit.hunt import hunt_case, hunt_cases
from specproof.audit.problems import TableProblem
from specproof.audit.settings import CallLimits, CallSettings, HuntSettings
from specproof.audit.signatures import (
    RepeatedCalls,
    Verifier,
    VerifierSignature,
    in_parts,
    register,
    row_slices,
    signature_named,
    signature_names,
    unregister,
)
from specproof.commands.audit import parser
from specproof.subjects import examples

ROOT = Path(__file__).resolve().parents[2]
ENGINES = ("flashinfer", "vllm", "vllm-logits", "hf")


def test_the_registry_names_the_four_engines_in_the_cli_order() -> None:
    assert signature_names() == ENGINES
    assert [signature_named(name).name for name in ENGINES] == list(ENGINES)
    shape = signature_named("vllm")
    assert signature_named(shape) is shape


def test_an_unknown_name_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown signature 'vllm-probs'") as refused:
        signature_named("vllm-probs")
    assert all(name in str(refused.value) for name in ENGINES)


def test_what_differs_between_the_engines() -> None:
    """The engines' call shapes as their documentation gives them."""
    fields = ("sends_bonus_row", "draft_logits", "target_logits", "carries_requests")
    table = {name: tuple(getattr(signature_named(name), f) for f in fields) for name in ENGINES}
    assert table == {
        "flashinfer": (True, False, False, False),
        "vllm": (False, False, False, True),
        "vllm-logits": (False, False, True, True),
        "hf": (True, True, True, False),
    }


class DenseToy(VerifierSignature):
    """A fifth call shape: ``fn(target_probs [B, n + 1, V], draft_probs [B, n, V],
    draft_tokens [B, n] int64) -> tokens [B, n + 1]`` (dense, full draft length)."""

    name: ClassVar[str] = "toy-dense"
    default_filter_order = "sequential"
    sends_bonus_row: ClassVar[bool] = True
    takes_request_filters: ClassVar[bool] = False
    target_argument: ClassVar[int] = 0

    def _dense(self, fn: Verifier, drafts: Drafts, limits: CallLimits) -> torch.Tensor:
        batch, gamma = drafts.tokens.shape
        out = torch.full((batch, gamma + 1), -1, dtype=torch.int64)
        for length in torch.unique(drafts.lengths).tolist():
            rows = torch.nonzero(drafts.lengths == length).squeeze(1)
            for part in row_slices(len(rows), limits):
                chosen = rows[part]
                out[chosen, : length + 1] = fn(
                    drafts.target_probs[chosen, : length + 1],
                    drafts.draft_probs[chosen, :length],
                    drafts.tokens[chosen, :length],
                ).to(torch.int64)
        return out

    def call(
        self,
        fn: Verifier,
        drafts: Drafts,
        problem: TableProblem,
        generator: torch.Generator,
        settings: CallSettings,
    ) -> torch.Tensor:
        torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator)))
        return self._dense(fn, drafts, settings.limits)

    def repeated_calls(
        self,
        fn: Verifier,
        drafts: Drafts,
        problem: TableProblem,
        stream: torch.Generator,
        settings: CallSettings,
    ) -> RepeatedCalls:
        first = self.call(fn, drafts, problem, stream, settings)
        again = self.call(fn, drafts, problem, stream, settings)
        return RepeatedCalls(first, again, first, None)

    def nonfinite_call(
        self,
        fn: Verifier,
        draft: torch.Tensor,
        tokens: torch.Tensor,
        target: torch.Tensor,
        where: str,
        corrupt: Any,
        limits: CallLimits,
    ) -> Any:
        draft = corrupt(draft) if where == "draft" else draft
        target = corrupt(target) if where == "target" else target
        return in_parts(
            lambda rows: fn(target[rows], draft[rows], tokens[rows]), len(tokens), limits
        )

    def hunt_call(
        self,
        fn: Verifier,
        tokens: torch.Tensor,
        draft: torch.Tensor,
        target: torch.Tensor,
        batch: int,
    ) -> Any:
        gamma, vocab = draft.shape
        args = (
            target.expand(batch, gamma + 1, vocab),
            draft.expand(batch, gamma, vocab),
            tokens.expand(batch, gamma),
        )
        return lambda size, generator: fn(*args)


def toy_verifier(target: torch.Tensor, draft: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """The example FlashInfer verifier behind the toy call shape."""
    return examples.chain_speculative_sampling(draft, tokens.to(torch.int32), target)[0]


def shifted_toy_verifier(
    target: torch.Tensor, draft: torch.Tensor, tokens: torch.Tensor
) -> torch.Tensor:
    """The correct verifier reading the target one token id off (the plugin's must-fail twin)."""
    return toy_verifier(torch.roll(target, 1, dims=-1), draft, tokens)


@pytest.fixture
def toy() -> Iterator[VerifierSignature]:
    yield register(DenseToy())
    unregister(DenseToy.name)


def small_vocab() -> list[TableProblem]:
    return [p for p in verifier_problems(0) if p.name == "small-vocab"]


def test_a_fifth_signature_is_one_class_and_one_registration(toy: VerifierSignature) -> None:
    """The toy reaches every row kind: the sampled case, the calls rows, the non-finite rows
    and the hunt; the correct verifier passes all of them. Each statistical row has false-fail
    rate <= alpha = 1e-6 (the audit's default), so this test fails spuriously at most a few
    times in 10^6 runs."""
    report = audit_verifier(toy_verifier, "toy-dense", problems=small_vocab())
    cases = {r.case for r in report.results} | {r.case for r in report.robustness}
    assert {"small-vocab", "calls", "nonfinite"} <= cases
    assert all(r.verdict != "FAIL" for r in [*report.results, *report.robustness])
    assert report.kind == "toy-dense verifier"
    settings = AuditSettings.of("toy-dense", hunt=HuntSettings(4096, batch=512))
    hunted = hunt_case(toy_verifier, hunt_cases()[0], settings)
    assert hunted.verdict == "pass"
    assert parser().parse_args(["m:f", "--signature", "toy-dense"]).signature == "toy-dense"


def test_the_fifth_signature_fails_a_wrong_verifier(toy: VerifierSignature) -> None:
    """The shifted target puts the round law at exact TV 0.587 from the expected one on
    small-vocab, seed 0 (tests/plugin/test_twins.py), far beyond the default delta = 0.05;
    the row has power >= 1 - 1e-4 there, so this test fails spuriously at most once in 10^4
    runs."""
    report = audit_verifier(
        shifted_toy_verifier, "toy-dense", problems=small_vocab(), calls=False, robustness=False
    )
    assert [r.verdict for r in report.results if r.case == "small-vocab"].count("FAIL") >= 1


def _signature_comparisons(path: Path, names: set[str]) -> Iterator[str]:
    """Comparisons of an expression naming a signature with a registered name, ``startswith``
    on one, and dict literals keyed by two or more of the names."""

    def is_name(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value in names or any(n.startswith(node.value) for n in names)
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            return any(is_name(e) for e in node.elts)
        return False

    for node in ast.walk(ast.parse(path.read_text())):
        where = f"{path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(is_name(s) for s in sides) and any("signature" in ast.unparse(s) for s in sides):
                yield where
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "startswith" and "signature" in ast.unparse(node.func.value):
                yield where
        elif isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            if len(names & {k for k in keys if isinstance(k, str)}) >= 2:
                yield where


def test_no_module_outside_the_package_branches_on_a_signature_name() -> None:
    names = set(signature_names())
    inside = ROOT / "specproof" / "audit" / "signatures"
    found = [
        hit
        for folder in ("specproof", "optimized", "reference", "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if inside not in path.parents
        for hit in _signature_comparisons(path, names)
    ]
    assert not found


def test_the_scan_finds_the_branches_it_forbids(tmp_path: Path) -> None:
    """The scan is not blind: each form the signature objects replaced is found."""
    source = tmp_path / "old.py"
    source.write_text(
        'if signature == "hf": pass\n'
        'if signature in ("vllm", "flashinfer"): pass\n'
        'if signature.startswith("vllm"): pass\n'
        'ORDER = {"vllm": 1, "hf": 2}\n'
        'if args.engine == "vllm": pass\n'
    )
    hits = list(_signature_comparisons(source, set(ENGINES)))
    assert [h.rsplit(":", 1)[1] for h in hits] == ["1", "2", "3", "4"]
