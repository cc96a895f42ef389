"""Compile the Coq proofs, gate every main theorem on ``Print Assumptions``, run the negative tests.

Usage: ``python proofs/coq/check.py`` (``nox -s coq`` runs it). Installs nothing: without ``coqc``
and the mathcomp libraries it prints the Debian packages to install and exits 1.

A main theorem passes its gate when ``Print Assumptions`` says "Closed under the global context"
(no ``Admitted``, ``Axiom`` or ``Parameter`` under it). Every file in ``negative/`` is a
deliberately wrong variant; it must fail to compile or fail the gate, and the check fails if one
of them gets through.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
NEGATIVE = HERE / "negative"
LIBRARY = "Specproof"
WARNINGS = ("-w", "-notation-overridden,-ambiguous-paths")
DEBIAN_PACKAGES = (
    "coq",
    "libcoq-mathcomp-ssreflect",
    "libcoq-mathcomp-algebra",
    "libcoq-mathcomp-algebra-tactics",
)
CLOSED = "Closed under the global context"


@dataclass(frozen=True)
class Theorem:
    module: str
    name: str
    prose: str

    @property
    def qualified(self) -> str:
        return f"{LIBRARY}.{self.module}.{self.name}"


THEOREMS = (
    Theorem("Step", "T1_one_step", "T1 part 1: one step emits p; if 1 - TV = 1 no rejection"),
    Theorem("Step", "T1_one_step_same", "T1 part 1: p = q gives 1 - TV = 1, rejection prob. 0"),
    Theorem("Round", "T1_round", "T1 part 2: chain round (l drafts + bonus) is stopped"),
    Theorem("Round", "T1_round_total", "T1 part 2: the round's law has total mass 1"),
    Theorem("Round", "T1_round_ge0", "T1 part 2: the round's law is non-negative"),
    Theorem("Round", "T1_N_tokens", "T1 part 3: rounds until N tokens give T(y | c)"),
    Theorem("Round", "round_stopped", "T2 (one request): non-anticipating round is stopped"),
    Theorem("Round", "decode_exact", "T2 (one request): non-anticipating rounds, N tokens"),
    Theorem("Lookahead", "T5a_global_search", "T5(a): global search gives (17/20, 3/20)"),
    Theorem("Lookahead", "T5a_with_break", "T5(a): with the break, (7/10, 3/10) = p"),
    Theorem("Lookahead", "T5a_contrast", "T5(a): causal admission gives p, lookahead not"),
    Theorem("Anticipating", "T5b_formula", "T5(b): first-token law when admission reads x_1"),
    Theorem("Anticipating", "T5b_same", "T5(b): p = q: exact iff admission const. on supp q"),
    Theorem("Anticipating", "T5b_one_hot", "T5(b): one-hot p: exact for every admission"),
    Theorem("Block", "T8_keep", "T8 part 1: P(tau >= m | x_<=m) = p_m"),
    Theorem("Block", "T8_keep_eq", "T8 part 1: P(tau = m | x_<=m) = rho_m for m < l"),
    Theorem("Lookahead", "T1_residual_from_p_biased", "T1 part 1: residual from p is biased"),
    Theorem("Tokens", "T7_expected_tokens", "T7 part 1: E|O| = 1 + sum_j P(A_1..A_j)"),
    Theorem("Tokens", "T7_product", "T7 part 1: P(A_1..A_j) = b_1 ... b_j"),
    Theorem("Step", "T7_accept_tv", "T7 part 2: acceptance = sum min(p, q) = 1 - TV"),
    Theorem("Tokens", "T7_iid", "T7 part 3: i.i.d. 1 + b + ... + b^l, gap b^(l+1)/(1-b)"),
    Theorem("Tokens", "T7_iid_085", "T7 part 3: b = 0.85: 37/20 (l = 1), 20/3 (1 - b^(l+1))"),
    Theorem("DraftedPath", "T7_drafted_path", "T7 part 4: drafted-path product 21/32 vs 5/8"),
)


def missing_tools() -> str | None:
    """Why the proofs cannot be checked here, or None when coqc and mathcomp are installed."""
    coqc = shutil.which("coqc")
    if coqc is None:
        return "coqc is not installed"
    where = subprocess.run([coqc, "-where"], capture_output=True, text=True, check=True)
    contrib = Path(where.stdout.strip()) / "user-contrib" / "mathcomp"
    for folder in ("ssreflect", "algebra", "algebra_tactics"):
        if not (contrib / folder).is_dir():
            return f"the mathcomp library {folder} is not installed ({contrib / folder})"
    return None


def build_order() -> list[str]:
    """The .v files in _CoqProject's order (each needs the ones before it)."""
    lines = (HERE / "_CoqProject").read_text().splitlines()
    return [line.strip() for line in lines if line.strip().endswith(".v")]


def coqc(*args: str, cwd: Path = HERE) -> subprocess.CompletedProcess[str]:
    command = ["coqc", "-R", str(HERE), LIBRARY, *WARNINGS, *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True)


def proof_seconds(source: bytes, timings: str) -> dict[str, float]:
    """Seconds per theorem from ``coqc -time``: its statement through its Qed.

    coqc abbreviates each sentence, so the sentence is read back from ``source`` at the byte
    offsets coqc reports.
    """
    seconds: dict[str, float] = {}
    current: str | None = None
    for line in timings.splitlines():
        match = re.match(r"Chars (\d+) - (\d+) \[.*\] ([0-9.]+) secs", line)
        if match is None:
            continue
        start, end, spent = int(match.group(1)), int(match.group(2)), float(match.group(3))
        sentence = source[start:end].decode()
        opening = re.match(r"(?:Theorem|Lemma|Corollary)\s+(\w+)", sentence)
        if opening is not None:
            current = opening.group(1)
            seconds[current] = 0.0
        if current is not None:
            seconds[current] += spent
            if sentence.strip() in ("Qed.", "Defined."):
                current = None
    return seconds


def compile_all() -> dict[str, float]:
    """Compile every file in order; return seconds per theorem. Raises on a compile error."""
    seconds: dict[str, float] = {}
    for name in build_order():
        started = time.perf_counter()
        result = coqc("-time", name)
        if result.returncode != 0:
            raise SystemExit(f"FAIL compiling {name}:\n{result.stdout}{result.stderr}")
        seconds.update(proof_seconds((HERE / name).read_bytes(), result.stdout))
        print(f"compiled {name} ({time.perf_counter() - started:.1f} s)", flush=True)
    return seconds


def assumptions(modules: list[str], names: list[str]) -> dict[str, str]:
    """``Print Assumptions`` of each qualified name, after requiring ``modules``."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        script = [f"From {LIBRARY} Require Import {' '.join(modules)}."]
        for index, name in enumerate(names):
            script.append(f'Redirect "{folder / str(index)}" Print Assumptions {name}.')
        (folder / "Gate.v").write_text("\n".join(script) + "\n")
        result = coqc(str(folder / "Gate.v"), cwd=folder)
        if result.returncode != 0:
            raise SystemExit(f"FAIL running Print Assumptions:\n{result.stdout}{result.stderr}")
        return {
            name: (folder / f"{index}.out").read_text().strip() for index, name in enumerate(names)
        }


def check_theorems(seconds: dict[str, float]) -> int:
    """Gate every main theorem; print the table; return the number of failures."""
    modules = [Path(name).stem for name in build_order()]
    printed = assumptions(modules, [theorem.qualified for theorem in THEOREMS])
    failures = 0
    print(f"\n{'theorem':<28} {'prose statement (Tn part)':<58} {'s':>6}  gate")
    for theorem in THEOREMS:
        output = printed[theorem.qualified]
        closed = output == CLOSED
        failures += not closed
        gate = "closed" if closed else "NOT CLOSED: " + " ".join(output.split())
        spent = seconds.get(theorem.name, float("nan"))
        print(f"{theorem.name:<28} {theorem.prose:<58} {spent:6.2f}  {gate}")
    return failures


def check_negatives() -> int:
    """Every negative variant must fail to compile or fail its gate; return how many did not."""
    escaped = 0
    files = sorted(NEGATIVE.glob("*.v"))
    print(f"\nnegative tests ({len(files)}): each must fail")
    for path in files:
        result = coqc(str(path))
        if result.returncode != 0:
            first = next((ln for ln in result.stderr.splitlines() if "Error" in ln), "error")
            print(f"  {path.name}: fails as expected (does not compile: {first.strip()})")
            continue
        names = re.findall(r"^(?:Theorem|Lemma)\s+(\w+)", path.read_text(), flags=re.M)
        qualified = [f"{LIBRARY}.negative.{path.stem}.{name}" for name in names]
        printed = assumptions([f"negative.{path.stem}"], qualified)
        open_ones = [name for name in qualified if printed[name] != CLOSED]
        if open_ones:
            print(f"  {path.name}: fails as expected (gate: {', '.join(open_ones)} not closed)")
        else:
            escaped += 1
            print(f"  {path.name}: PASSED its gate, but it is a wrong variant")
    return escaped


def main() -> int:
    reason = missing_tools()
    if reason is not None:
        print(f"{reason}. Install the Debian packages (as root), then rerun:")
        print(
            "  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
            + " ".join(DEBIAN_PACKAGES)
        )
        return 1
    version = subprocess.run(["coqc", "--version"], capture_output=True, text=True, check=True)
    print(version.stdout.splitlines()[0], flush=True)
    seconds = compile_all()
    failures = check_theorems(seconds)
    escaped = check_negatives()
    if failures or escaped:
        print(f"\nFAILED: {failures} theorem(s) not closed, {escaped} negative test(s) passed")
        return 1
    print(f"\nall {len(THEOREMS)} theorems closed under the global context; negatives fail")
    return 0


if __name__ == "__main__":
    sys.exit(main())
