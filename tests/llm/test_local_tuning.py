"""How a run drives the local server, without the model: limits, timeouts, server flags.

The real server is exercised in test_local_model.py (marked ``local_model``); here the
rules that keep a one-slot server from being flooded are checked against a loopback fake.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_SUITE

from judge.core.text.errors import ProviderError
from judge.engine.judging import JudgeSettings, build_request, prepare
from judge.llm import local
from judge.llm.client import LiteLLMClient, ModelSpec
from judge.llm.local import (
    LOCAL_TIMEOUT,
    busy_now,
    call_limits,
    physical_cores,
    server_args,
    threads_for,
)
from judge.render.prompts import PromptRenderer
from judge.system.resources import load_rubric, load_suite


def test_calls_in_flight_are_the_slots_unless_the_user_sets_concurrency() -> None:
    # The default concurrency (16) is not the user's: one call at a time, a local budget.
    assert call_limits(concurrency=16, concurrency_set=False, timeout=60.0,
                       timeout_set=False) == (1, LOCAL_TIMEOUT)
    # Set explicitly: theirs, and the timeout covers the queue behind the one slot.
    assert call_limits(concurrency=4, concurrency_set=True, timeout=60.0,
                       timeout_set=False) == (4, 4 * LOCAL_TIMEOUT)
    assert call_limits(concurrency=4, concurrency_set=True, timeout=30.0,
                       timeout_set=True) == (4, 120.0)
    assert call_limits(concurrency=5, concurrency_set=True, timeout=10.0, timeout_set=True,
                       slots=2) == (5, 30.0)
    # A timeout the user set is their per-judgment budget, even below the local default.
    assert call_limits(concurrency=16, concurrency_set=False, timeout=5.0,
                       timeout_set=True) == (1, 5.0)


def test_threads_leave_busy_cores_alone() -> None:
    assert threads_for(2, 0.0) == 2
    assert threads_for(2, 0.9) == 2
    assert threads_for(2, 1.2) == 1
    assert threads_for(2, 11.0) == 1
    assert threads_for(8, 3.5) == 5
    assert physical_cores() >= 1


def test_busy_now_counts_what_runs_now_not_the_last_minute(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    """The kernel's running count, this process left out; a busy process is seen at once."""
    hog = subprocess.Popen([sys.executable, "-c", "import time\nend = time.time() + 20\n"
                            "while time.time() < end: pass"])
    try:
        time.sleep(0.3)
        assert busy_now() >= 1
    finally:
        hog.kill()
        hog.wait(timeout=10)
    # What it reads, and the fallback where /proc is missing: the 1-minute load average.
    stat = tmp_path / "stat"
    stat.write_bytes(b"cpu  1 2 3\nprocs_running 4\nprocs_blocked 0\n")
    real_open = open
    monkeypatch.setattr(local, "open", lambda path, mode="r": real_open(stat, mode),
                        raising=False)
    assert busy_now(samples=3, interval=0) == 3.0

    def missing(path: str, mode: str = "r") -> Any:
        raise FileNotFoundError(path)

    monkeypatch.setattr(local, "open", missing, raising=False)
    monkeypatch.setattr(local.os, "getloadavg", lambda: (5.5, 1.0, 1.0))
    assert busy_now(samples=3, interval=0) == 5.5


def test_server_flags() -> None:
    args = server_args(cores=2, load=0.0)
    flags = dict(zip(args[::2], args[1::2], strict=True))
    assert flags["--n_threads"] == flags["--n_threads_batch"] == "2"
    assert flags["--n_batch"] == flags["--n_ubatch"] == "512"
    assert flags["--logits_all"] == "False" and flags["--interrupt_requests"] == "False"
    assert "--cache" not in flags  # its state restore changed a verdict's bytes
    assert dict(zip(*[iter(server_args(cores=2, load=6.0))] * 2, strict=True))[
        "--n_threads"] == "1"


@pytest.mark.parametrize("retry_timeouts, sent", [(False, 1), (True, 3)])
async def test_a_timed_out_call_is_not_sent_again_to_a_local_server(
        fake_server: Any, retry_timeouts: bool, sent: int) -> None:
    """The server goes on computing a call its client gave up on: a re-send only queues."""
    case = next(c for c in load_suite(EXAMPLE_SUITE).cases if c.id == "fix-login-redirect")
    prep = prepare(case, load_rubric("task-evaluation"), PromptRenderer())
    request = build_request(prep, "hosted_vllm/fake", JudgeSettings(), 0)
    fake_server.set_options(latency_ms=3000)
    client = LiteLLMClient(ModelSpec(
        name="hosted_vllm/fake", api_base=fake_server.openai_base_url, timeout=0.3,
        max_attempts=3, backoff_base=0.01, backoff_max=0.02, retry_timeouts=retry_timeouts))
    with pytest.raises(ProviderError) as info:
        await client.complete(request)
    assert info.value.status == 408
    assert client.attempts == sent and client.retries == sent - 1
