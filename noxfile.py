"""Every way to check specproof. ``nox`` alone runs the default CPU test suite."""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["tests"]
nox.options.reuse_existing_virtualenvs = True

PYTHON = "3.11"
CONSTRAINTS = ("-c", "constraints.txt")
CPU_ENV = {"TRITON_INTERPRET": "1"}


def install(session: nox.Session, extras: str) -> None:
    session.install(*CONSTRAINTS, "-e", f".[{extras}]")


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The whole CPU suite (Triton kernels run under the interpreter)."""
    install(session, "test")
    env = {**CPU_ENV, "HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "ci")}
    session.run("pytest", "-m", "not slow and not gpu", *session.posargs, env=env)


@nox.session(python=PYTHON, default=False)
def thorough(session: nox.Session) -> None:
    """Exhaustive and slow tests, with the thorough hypothesis profile."""
    install(session, "test")
    env = {**CPU_ENV, "HYPOTHESIS_PROFILE": "thorough"}
    session.run("pytest", "-m", "not gpu", *session.posargs, env=env)


@nox.session(python=False, default=False)
def gpu(session: nox.Session) -> None:
    """The optimized suite on a CUDA device, compiled kernels (not interpreted).

    Runs in the current environment, which must already hold a CUDA build of torch and triton.
    """
    session.run("python", "-m", "pip", "install", "--no-deps", "-e", ".")
    session.run(
        "python",
        "-m",
        "pytest",
        "tests/optimized",
        "tests/stats/test_optimized_decoder.py",
        "-m",
        "not slow",
        *session.posargs,
        env={"SPECPROOF_DEVICE": "cuda", "TRITON_INTERPRET": "0"},
    )


@nox.session(python=PYTHON, default=False)
def lint(session: nox.Session) -> None:
    session.install(*CONSTRAINTS, "ruff")
    session.run("ruff", "check", ".", *session.posargs)
    session.run("ruff", "format", "--check", ".")


@nox.session(python=PYTHON, default=False)
def typecheck(session: nox.Session) -> None:
    install(session, "typecheck")
    session.run("mypy", "specproof", "reference", "optimized", *session.posargs)


@nox.session(python=PYTHON, default=False)
def demo(session: nox.Session) -> None:
    """The main job: the lossless matrix on the built-in models."""
    install(session, "test")
    session.run("specproof", "matrix", *session.posargs)


@nox.session(python=PYTHON, default=False)
def proofs(session: nox.Session) -> None:
    """Run every theorem's executable certificate."""
    install(session, "test")
    session.run("python", "proofs/check_all.py", *session.posargs)


@nox.session(python=PYTHON, default=False)
def notebooks(session: nox.Session) -> None:
    """Execute every notebook headless; each asserts the claim it plots."""
    install(session, "test,notebooks")
    session.run(
        "python",
        "notebooks/run_all.py",
        "--check-stripped",
        *session.posargs,
        env={**CPU_ENV, "MPLBACKEND": "Agg"},
    )


@nox.session(python=PYTHON, default=False)
def bench(session: nox.Session) -> None:
    """Kernel benchmarks: writes BENCHMARKS.md and benchmarks/results.json."""
    install(session, "test")
    session.run("python", "bench/run.py", *session.posargs, env=CPU_ENV)


@nox.session(python=PYTHON, default=False)
def calibration(session: nox.Session) -> None:
    """Observed false-fail rate and power of the statistical tests, beside alpha and 1 - beta."""
    install(session, "test")
    session.run("python", "-m", "specproof.stats.calibrate", *session.posargs)


@nox.session(python=PYTHON, default=False)
def e2e(session: nox.Session) -> None:
    """Train the small target and drafters here and regenerate the end-to-end tables."""
    install(session, "test,e2e")
    session.run("python", "-m", "specproof.e2e.run", *session.posargs)
