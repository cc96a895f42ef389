"""Compile the Coq proofs, gate every main theorem on its assumptions and its statement, run the
negative tests.

Usage: ``python proofs/coq/check.py [--write-statements]`` (``nox -s coq`` runs it without the
flag). Installs nothing: without ``coqc`` and the mathcomp libraries it prints the Debian packages
to install and exits 1.

A main theorem passes its gate when ``Print Assumptions`` says "Closed under the global context"
(no ``Admitted``, ``Axiom`` or ``Parameter`` under it) and its type, as ``Check @name`` prints it,
equals the one committed in ``statements.txt`` up to whitespace, so a weakened statement fails.
``--write-statements`` rewrites ``statements.txt`` from the compiled theorems instead of comparing;
run it only when a statement is meant to change, and review the diff.

Every file in ``negative/`` is a deliberately wrong variant that names, in a line
``(* expect: TEXT *)``, the failure it must produce: TEXT must occur in its coqc error output or in
the gate's message about it (whitespace normalised). A variant that passes, or fails with another
message (a typo, a wrong name), fails the check.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
NEGATIVE = HERE / "negative"
STATEMENTS = HERE / "statements.txt"
LIBRARY = "Specproof"
WARNINGS = ("-w", "-notation-overridden,-ambiguous-paths")
DEBIAN_PACKAGES = (
    "coq",
    "libcoq-mathcomp-ssreflect",
    "libcoq-mathcomp-algebra",
    "libcoq-mathcomp-algebra-tactics",
)
CLOSED = "Closed under the global context"
# The context types are printed in: the notations the .v files use, one line per type.
PRINTING_CONTEXT = (
    "From mathcomp Require Import all_ssreflect ssralg ssrnum rat.",
    "Import GRing.Theory Num.Theory Order.TTheory.",
    "Local Open Scope ring_scope.",
    "Set Printing Width 100000.",
)
EXPECT = re.compile(r"^\(\* expect: (.*) \*\)$", flags=re.M)
STATEMENTS_HEADER = """\
# The type of each main theorem of check.py, as `Check @name` prints it (mathcomp notations,
# ring_scope), wrapped at spaces. `nox -s coq` fails when a compiled theorem's type differs from
# the one here, whitespace aside. Rewrite this file only when a statement is meant to change:
#   python3 proofs/coq/check.py --write-statements
# and review its diff.
"""


@dataclass(frozen=True)
class Theorem:
    module: str
    name: str
    prose: str

    @property
    def qualified(self) -> str:
        return f"{LIBRARY}.{self.module}.{self.name}"

    @property
    def key(self) -> str:
        """The theorem's name in statements.txt."""
        return f"{self.module}.{self.name}"


@dataclass(frozen=True)
class Printed:
    """What Coq prints about one theorem."""

    assumptions: str
    statement: str


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


def normalised(text: str) -> str:
    """``text`` with every run of whitespace one space, ends stripped."""
    return " ".join(text.split())


def query(modules: list[str], names: list[str]) -> dict[str, Printed]:
    """``Print Assumptions`` and the type of each qualified name, after requiring ``modules``."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        script = [*PRINTING_CONTEXT, f"From {LIBRARY} Require Import {' '.join(modules)}."]
        for index, name in enumerate(names):
            script.append(f'Redirect "{folder / f"a{index}"}" Print Assumptions {name}.')
            script.append(f'Redirect "{folder / f"t{index}"}" Check @{name}.')
        (folder / "Gate.v").write_text("\n".join(script) + "\n")
        result = coqc(str(folder / "Gate.v"), cwd=folder)
        if result.returncode != 0:
            raise SystemExit(f"FAIL querying the theorems:\n{result.stdout}{result.stderr}")
        printed = {}
        for index, name in enumerate(names):
            checked = (folder / f"t{index}.out").read_text()
            # ``Check @name`` prints the name, then ":" and the type on the next line.
            type_text = checked.strip().partition("\n")[2].strip()
            if not type_text.startswith(":"):
                raise SystemExit(f"FAIL reading the type of {name} from Check: {checked!r}")
            printed[name] = Printed(
                assumptions=(folder / f"a{index}.out").read_text().strip(),
                statement=normalised(type_text[1:]),
            )
        return printed


def read_statements(path: Path = STATEMENTS) -> dict[str, str]:
    """statements.txt: a name at the start of a line, its type on the indented lines below."""
    statements: dict[str, list[str]] = {}
    current: str | None = None
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        if not line[0].isspace():
            current = line.strip()
            if current in statements:
                raise SystemExit(f"FAIL {path.name} line {number}: {current} stated twice")
            statements[current] = []
        elif current is None:
            raise SystemExit(f"FAIL {path.name} line {number}: a type before any theorem name")
        else:
            statements[current].append(line)
    return {name: normalised(" ".join(lines)) for name, lines in statements.items()}


def write_statements(statements: dict[str, str], path: Path = STATEMENTS) -> None:
    """Write ``statements`` (name -> type) in the format ``read_statements`` reads."""
    blocks = [STATEMENTS_HEADER]
    for name, statement in statements.items():
        wrapped = textwrap.wrap(
            statement,
            width=100,
            initial_indent="    ",
            subsequent_indent="    ",
            break_long_words=False,
            break_on_hyphens=False,
        )
        blocks.append("\n".join([name, *wrapped]) + "\n")
    path.write_text("\n".join(blocks))


def first_difference(expected: str, actual: str) -> int:
    """The index of the first character where the two texts differ."""
    for index, (left, right) in enumerate(zip(expected, actual, strict=False)):
        if left != right:
            return index
    return min(len(expected), len(actual))


def statement_failure(name: str, expected: str | None, actual: str) -> str | None:
    """None when ``actual`` is the committed statement up to whitespace, else the message."""
    if expected is None:
        return f"FAIL {name} has no statement in {STATEMENTS.name} (actual: {actual})"
    if normalised(expected) == normalised(actual):
        return None
    expected, actual = normalised(expected), normalised(actual)
    at = first_difference(expected, actual)
    excerpts = f"expected {expected[at : at + 40]!r}, actual {actual[at : at + 40]!r}"
    lines = [
        f"FAIL statement of {name} differs from {STATEMENTS.name}"
        f" (from character {at}: {excerpts})",
        "  expected:",
        *textwrap.wrap(expected, 100, initial_indent="    ", subsequent_indent="    "),
        "  actual:",
        *textwrap.wrap(actual, 100, initial_indent="    ", subsequent_indent="    "),
    ]
    return "\n".join(lines)


def check_theorems(seconds: dict[str, float], write: bool) -> tuple[int, int]:
    """Gate every main theorem; print the table; return (not closed, statements differing).

    With ``write``, statements.txt is rewritten from the compiled theorems instead of compared.
    """
    modules = [Path(name).stem for name in build_order()]
    printed = query(modules, [theorem.qualified for theorem in THEOREMS])
    committed = {} if write else read_statements()
    not_closed = 0
    messages = []
    print(f"\n{'theorem':<28} {'prose statement (Tn part)':<58} {'s':>6}  gate")
    for theorem in THEOREMS:
        output = printed[theorem.qualified]
        closed = output.assumptions == CLOSED
        not_closed += not closed
        gate = "closed" if closed else "NOT CLOSED: " + normalised(output.assumptions)
        if not write:
            message = statement_failure(theorem.key, committed.get(theorem.key), output.statement)
            if message is not None:
                messages.append(message)
            gate += ", statement as committed" if message is None else ", STATEMENT DIFFERS"
        spent = seconds.get(theorem.name, float("nan"))
        print(f"{theorem.name:<28} {theorem.prose:<58} {spent:6.2f}  {gate}")
    stale = sorted(set(committed) - {theorem.key for theorem in THEOREMS})
    messages += [f"FAIL {name} is in {STATEMENTS.name}, not a main theorem" for name in stale]
    for message in messages:
        print("\n" + message)
    if write:
        write_statements(
            {theorem.key: printed[theorem.qualified].statement for theorem in THEOREMS}
        )
        print(f"\nwrote the {len(THEOREMS)} statements to {STATEMENTS}; review its diff")
    return not_closed, len(messages)


def expected_failure(source: str) -> str | None:
    """The text a negative variant's ``(* expect: TEXT *)`` line names; None without one."""
    found = EXPECT.findall(source)
    return normalised(found[0]) if len(found) == 1 else None


def negative_failure(path: Path) -> str | None:
    """How a negative variant fails: coqc's errors or the gate's message; None if it passes."""
    result = coqc(str(path))
    if result.returncode != 0:
        return "does not compile: " + normalised(result.stdout + result.stderr)
    names = re.findall(r"^(?:Theorem|Lemma)\s+(\w+)", path.read_text(), flags=re.M)
    qualified = [f"{LIBRARY}.negative.{path.stem}.{name}" for name in names]
    printed = query([f"negative.{path.stem}"], qualified)
    open_ones = [
        f"{name} not closed: {normalised(printed[name].assumptions)}"
        for name in qualified
        if printed[name].assumptions != CLOSED
    ]
    return "gate: " + "; ".join(open_ones) if open_ones else None


def negative_verdict(expected: str | None, failure: str | None) -> str | None:
    """None when the variant failed with the expected text, else why the check fails."""
    if expected is None:
        return "names no expected failure (one line '(* expect: TEXT *)')"
    if failure is None:
        return "PASSED its gate, but it is a wrong variant"
    if normalised(expected) not in failure:
        return f"fails, but not as expected\n    expected: {expected}\n    actual:   {failure}"
    return None


def check_negatives() -> int:
    """Every negative variant must fail with its expected message; return how many did not."""
    wrong = 0
    files = sorted(NEGATIVE.glob("*.v"))
    print(f"\nnegative tests ({len(files)}): each must fail with the message it names")
    for path in files:
        expected = expected_failure(path.read_text())
        failure = negative_failure(path)
        verdict = negative_verdict(expected, failure)
        if verdict is None:
            print(f"  {path.name}: fails as expected ({expected})")
        else:
            wrong += 1
            print(f"  FAIL {path.name}: {verdict}")
    return wrong


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--write-statements",
        action="store_true",
        help=f"rewrite {STATEMENTS.name} from the compiled theorems instead of comparing with it",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    arguments = parse_arguments(argv)
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
    not_closed, differing = check_theorems(seconds, write=arguments.write_statements)
    wrong = check_negatives()
    if not_closed or differing or wrong:
        print(
            f"\nFAILED: {not_closed} theorem(s) not closed, {differing} statement(s) differ from"
            f" {STATEMENTS.name}, {wrong} negative test(s) not failing as expected"
        )
        return 1
    pinned = "written" if arguments.write_statements else f"as in {STATEMENTS.name}"
    print(
        f"\nall {len(THEOREMS)} theorems closed under the global context, statements {pinned};"
        " negatives fail as expected"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
