"""Every specproof command ends with its documented exit status, never a signal.

The abort (status 134, ``terminate called without an active exception``) came from the
interpreter's shutdown: CPython 3.11 stops a daemon thread that asks for the GIL during
finalization with ``pthread_exit``, and a thread inside a torch call that released the GIL
(torch's generated bindings release it around each op) unwinds through a ``noexcept`` C++
destructor, so ``std::terminate`` aborts the process after the verdict was printed. The
commands now end through ``command_rules.end_process`` (flush, ``os._exit``), and the guard
joins its idle worker. A subject that leaves a daemon thread inside a torch call aborted every
run on the old code (the tests below); one that leaves a non-daemon thread made it hang.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

PASSED, ROW_FAILED, USAGE_ERROR = 0, 1, 2
ROOT = Path(__file__).resolve().parents[2]
WALL_LIMIT = 240  # seconds: a child past this is killed, so a hang fails instead of waiting

SUBJECT = """
import sys
import threading

import torch

from specproof.subjects.examples import algorithm1_schedule

TABLE = torch.tensor([[0.5, 0.3, 0.2, 0.0], [0.1, 0.6, 0.2, 0.1],
                      [0.25, 0.25, 0.25, 0.25], [0.4, 0.0, 0.3, 0.3]], dtype=torch.float64)
CALLS = [0]


def target_probs(sequences):
    return TABLE[sequences]


def generate(prompt, num_new_tokens, seed):
    out, last = [], prompt[-1]
    for _ in range(num_new_tokens):
        last = int(TABLE[last].argmax())
        out.append(last)
    return out


def generate_wrong(prompt, num_new_tokens, seed):
    return [3] * num_new_tokens  # not the argmax after any prefix


def _native_forever():
    a = torch.randn(300, 300)
    while True:  # each matmul releases the GIL: the thread sits inside a torch call
        a = torch.tanh(a @ a)


def _leave(daemon):
    if CALLS[0] == 0:
        threading.Thread(target=_native_forever, daemon=daemon).start()
        if not daemon:
            threading.Thread(target=threading.Event().wait, daemon=False).start()
    CALLS[0] += 1


def generate_leaves_native_call(prompt, num_new_tokens, seed):
    _leave(daemon=True)
    return generate(prompt, num_new_tokens, seed)


def generate_leaves_thread(prompt, num_new_tokens, seed):
    _leave(daemon=False)
    return generate(prompt, num_new_tokens, seed)


def generate_exits_third(prompt, num_new_tokens, seed):
    CALLS[0] += 1
    if CALLS[0] == 3:
        sys.exit(0)
    return generate(prompt, num_new_tokens, seed)


def schedule_exits_third(confidences, sps):
    CALLS[0] += 1
    if CALLS[0] == 3:
        sys.exit(0)
    return algorithm1_schedule(confidences, sps)


def algorithm1_schedule_ok(confidences, sps):
    return algorithm1_schedule(confidences, sps)


def schedule_leaves_native_call(confidences, sps):
    _leave(daemon=True)
    return [0] * len(confidences)  # drafts nothing: a valid schedule, lossless
"""


def specproof(
    tmp_path: Path, *argv: str, wall_limit: float = WALL_LIMIT
) -> subprocess.CompletedProcess[str]:
    """``python -m specproof.commands.cli *argv`` in ``tmp_path`` (which holds the subject
    module)."""
    (tmp_path / "exit_subject.py").write_text(SUBJECT)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    return subprocess.run(
        [sys.executable, "-m", "specproof.commands.cli", *argv],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=wall_limit,
    )


def engine(generate: str, *extra: str) -> list[str]:
    return [
        "audit-engine", "--generate", f"exit_subject:{generate}",
        "--target-probs", "exit_subject:target_probs",
        "--greedy", "--prompt", "0", "--delta", "0.3", "--quiet", *extra,
    ]  # fmt: skip


def scheduler(schedule: str, *extra: str) -> list[str]:
    return ["audit", f"exit_subject:{schedule}", "--scheduler", "--quiet", *extra]


def matrix_usage_error(tmp_path: Path) -> list[str]:
    return ["matrix", "--quiet", "--json", str(tmp_path)]  # a folder: refused before the work


# (argv, expected status, a line the verdict prints) for each command's runs.
ENGINE_RUNS = [
    (engine("generate"), PASSED, "PASS"),
    (engine("generate_wrong"), ROW_FAILED, "FAIL"),
]


def test_a_subject_that_leaves_a_daemon_thread_inside_a_torch_call_ends_with_the_status(
    tmp_path: Path,
) -> None:
    """Aborted (134, ``terminate called without an active exception``) on the old code: the
    left thread is inside a matmul when the interpreter shuts down."""
    done = specproof(tmp_path, *engine("generate_leaves_native_call"))
    assert done.returncode == PASSED, (done.returncode, done.stderr[-2000:])
    assert "PASS" in done.stdout and "terminate called" not in done.stderr


def test_a_subject_that_leaves_a_non_daemon_thread_running_does_not_keep_the_process(
    tmp_path: Path,
) -> None:
    """Hung forever on the old code (the interpreter waits for non-daemon threads)."""
    done = specproof(tmp_path, *engine("generate_leaves_thread"), wall_limit=90)
    assert done.returncode == PASSED, done.stderr[-2000:]


@pytest.mark.slow  # the scheduler audit runs every case with a busy thread beside it
def test_audit_with_a_scheduler_that_leaves_a_torch_call_running_ends_with_the_status(
    tmp_path: Path,
) -> None:
    done = specproof(tmp_path, *scheduler("schedule_leaves_native_call"))
    assert done.returncode in (PASSED, ROW_FAILED), done.stderr[-2000:]
    assert "terminate called" not in done.stderr and "scheduler exit_subject" in done.stdout


@pytest.mark.parametrize("extra", [(), ("--timeout", "60")], ids=["default", "timeout"])
def test_an_engine_that_calls_sys_exit_fails_a_row_with_the_table_kept(
    tmp_path: Path, extra: tuple[str, ...]
) -> None:
    """A FAIL row whose detail says the subject called sys.exit (the old code reported the
    worker's SystemExit as "raised SystemExit: 0"; ``audit`` exited 0, the test below)."""
    report = tmp_path / "report.json"
    done = specproof(tmp_path, *engine("generate_exits_third", "--json", str(report), *extra))
    assert done.returncode == ROW_FAILED, done.stderr[-2000:]
    assert "sys.exit(0)" in done.stdout
    rows = json.loads(report.read_text())["results"]
    assert [r["check"] for r in rows if r["verdict"] == "FAIL"] == ["generate"]


def test_a_scheduler_that_calls_sys_exit_fails_a_row_with_the_table_kept(tmp_path: Path) -> None:
    """Exited 0 with no table on the old code."""
    report = tmp_path / "report.json"
    done = specproof(tmp_path, *scheduler("schedule_exits_third", "--json", str(report)))
    assert done.returncode == ROW_FAILED, done.stderr[-2000:]
    failed = [r for r in json.loads(report.read_text())["results"] if r["verdict"] == "FAIL"]
    assert failed and all("sys.exit(0)" in r["detail"] for r in failed)
    assert "FAIL" in done.stdout.splitlines()[-2]


def repeated(tmp_path: Path, runs: list[tuple[list[str], int, str]], times: int) -> None:
    """Each run ``times`` times, two at a time; every one must end with its status."""
    jobs = [(argv, status, line, i) for argv, status, line in runs for i in range(times)]

    def one(job: tuple[list[str], int, str, int]) -> tuple[list[str], int, int, str]:
        argv, _, _, i = job
        folder = tmp_path / str(id(job))
        folder.mkdir()
        done = specproof(folder, *argv)
        return argv, done.returncode, i, done.stdout + done.stderr[-500:]

    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(one, jobs))
    for (argv, status, line, _), (_, code, i, text) in zip(jobs, results, strict=True):
        assert code == status and line in text, (argv, i, code, text[-800:])


def test_passing_and_failing_engine_audits_end_with_their_status_every_time(
    tmp_path: Path,
) -> None:
    """A default-session sample: one run each of a passing and a failing audit-engine. Against
    an abort in one run of six this misses with probability (5/6)^2 = 0.69; the daemon-thread
    test above forces the cause itself (it aborted every run on the old code) and the slow
    test below is the exhaustive one."""
    repeated(tmp_path, ENGINE_RUNS, 1)


@pytest.mark.slow  # 2 x 40 runs of audit-engine and audit, 40 matrix usage errors: minutes
def test_every_command_ends_with_its_status_over_many_runs(tmp_path: Path) -> None:
    """40 runs of each of: a passing and a failing audit-engine, a passing scheduler audit and
    a failing one (sys.exit in the subject), a matrix usage error; and 4 passing matrix runs
    (27 s of exact arithmetic each; matrix imports no torch and starts no thread). A command
    that aborted one run in six passes all 40 of its runs with probability (5/6)^40 = 6.8e-4;
    over the four audit runs, all pass with probability below (5/6)^160 = 2.2e-13."""
    runs = [
        *ENGINE_RUNS,
        (scheduler("algorithm1_schedule_ok"), PASSED, "PASS"),
        (scheduler("schedule_exits_third"), ROW_FAILED, "FAIL"),
        (matrix_usage_error(tmp_path), USAGE_ERROR, "is a folder"),
    ]
    repeated(tmp_path, runs, 40)
    repeated(tmp_path, [(["matrix", "--quiet"], PASSED, "computed exactly")], 4)


@pytest.mark.parametrize("timeout", [None, 30.0], ids=["no-limit", "limit"])
def test_the_guard_turns_a_subject_exit_into_a_failure_and_leaves_no_thread(
    timeout: float | None,
) -> None:
    """In-process: ``sys.exit`` inside a call is an ordinary exception (``run`` and ``subject``)
    or a failure of the row (``call``), with and without a time limit; once closed, no worker
    thread of the guard is left for the interpreter's shutdown."""
    import threading

    from specproof.audit.guard import Guard, SubjectExit, SubjectFailure

    def exits(code: object) -> None:
        sys.exit(code)

    guard = Guard(timeout)
    with pytest.raises(SubjectExit, match=r"sys\.exit\(3\)"):
        guard.run("a call", exits, 3)
    with pytest.raises(SubjectExit, match=r"sys\.exit\(None\)"):
        guard.subject(exits)(None)
    with pytest.raises(SubjectFailure, match=r"sys\.exit\('bye'\)") as failure:
        guard.call("generate", "generate run 0", exits, "bye")
    assert failure.value.check == "generate"
    guard.close()
    assert not [t for t in threading.enumerate() if t.name == "specproof-subject"]
