"""The call ledger adds up: calls = requests + repair turns + retries (by reason) + fallbacks.

And a keyless judge swap: the loopback fake server started as a process, its printed
``api-base`` URL given to ``judge run``, two judges compared (the README's own lines run in
tests/cli/test_readme_jobs.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_SUITE, ROOT, run_judge

from judge.core.outcomes.ledger import retry_reason
from judge.core.text.errors import ProviderError
from judge.llm.client import JudgeRequest, LiteLLMClient, ModelSpec, aclose_clients

MODEL = "hosted_vllm/fake-judge"


def _request(text: str) -> JudgeRequest:
    return JudgeRequest(model=MODEL, messages=({"role": "user", "content": text},),
                        temperature=0, seed=1, schema=None, output_mode="prompt")


def test_retry_reasons() -> None:
    assert retry_reason(429, "RateLimitError") == "429"
    assert retry_reason(503, "ServiceUnavailableError") == "5xx"
    assert retry_reason(408, "ProviderError") == "timeout"
    assert retry_reason(None, "Timeout") == "timeout"
    assert retry_reason(500, "APIConnectionError") == "connection"
    assert retry_reason(None, "IndexError") == "other"


async def test_the_client_itemises_what_it_sent(fake_server: Any) -> None:
    client = LiteLLMClient(ModelSpec(name=MODEL, api_base=fake_server.openai_base_url,
                                     timeout=5, max_attempts=2, backoff_base=0.001,
                                     backoff_max=0.002, retry_after_cap=0.01))
    try:
        fake_server.set_options(fail_first=1)
        await client.complete(_request("one"))
        fake_server.set_options(fail_first=0, fault_rate=1.0, faults=["429"],
                                retry_after=0.001)
        with pytest.raises(ProviderError):
            await client.complete(_request("two"))
        fake_server.set_options(fault_rate=0.0)
        repair = [*_request("three").messages, {"role": "assistant", "content": "?"},
                  {"role": "user", "content": "fix it"}]
        await client.complete(_request("three"), repair)
    finally:
        await aclose_clients()
    counts = client.ledger
    assert (counts.requests, counts.repair_turns, counts.fallbacks) == (2, 1, 0)
    assert counts.retries == {"5xx": 1, "429": 1}
    assert client.attempts == 2 + 1 + 2 == counts.requests + counts.repair_turns + 2


def test_a_run_says_where_its_calls_went(fake_server: Any, workspace: Path) -> None:
    fake_server.set_options(fail_first=1)  # every request fails once with a 500
    done = run_judge(["run", str(EXAMPLE_SUITE), "--model", MODEL, "--api-base",
                      fake_server.openai_base_url, "--no-check", "--json"], workspace)
    assert done.returncode == 0, done.stderr
    totals = json.loads(done.stdout)["run"]["totals"]
    entry = totals["ledger"][MODEL]
    assert entry["requests"] == totals["judgedAnew"] == 14
    assert entry["retries"] == {"5xx": 14}
    assert entry["calls"] == totals["calls"] == 28
    assert entry["calls"] == (entry["requests"] + entry["repairTurns"]
                              + sum(entry["retries"].values()) + entry["fallbacks"])
    assert (entry["cacheHits"], entry["judgments"]) == (0, 14)
    text = run_judge(["runs", "show", json.loads(done.stdout)["run"]["id"]], workspace).stdout
    assert f"judge {MODEL}: 28 calls = 14 requests + 14 retries (5xx 14)" in text


def test_swap_two_judges_with_no_key(workspace: Path) -> None:
    """A keyless judge swap: the test double on loopback as a process, two judges, compare."""
    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fakes" / "fake_server.py"),
                               "--port", "0"], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        assert server.stdout.readline().startswith("READY ")
        words = server.stdout.readline().split()
        assert words[0] == "api-base"
        api_base = words[1]
        runs = []
        for model in (MODEL, MODEL + "+25"):
            done = run_judge(["run", str(EXAMPLE_SUITE), "--model", model, "--api-base",
                              api_base, "--no-check", "--json"], workspace)
            assert done.returncode == 0, done.stderr
            runs.append(json.loads(done.stdout)["run"]["id"])
        compared = run_judge(["compare", *runs], workspace)
        assert compared.returncode == 0, compared.stderr
        lines = compared.stdout.splitlines()
        # The verdict first, a screen in all: 14 cases read in 25 lines (the detail: --detail).
        assert lines[0].startswith(f"{MODEL}+25 scores ") and "points higher" in lines[0]
        assert len(lines) <= 25, compared.stdout
        assert "band flips A → B: " in compared.stdout
    finally:
        server.terminate()
        assert server.wait(timeout=10) == 0
        if server.stdout is not None:
            server.stdout.close()


def test_cached_prompt_tokens_reach_the_run_ledger(fake_server: Any, workspace: Path) -> None:
    """The fake server's OpenAI-style prompt cache (vLLM-like: 16-token blocks, no minimum)
    through LiteLLM to the judgments, the ledger and `judge runs show`."""
    fake_server.set_options(prompt_cache_block=16, prompt_cache_min=0)
    done = run_judge(["run", str(EXAMPLE_SUITE), "--model", MODEL, "--api-base",
                      fake_server.openai_base_url, "--no-check", "--json"], workspace)
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)["run"]
    entry = run["totals"]["ledger"][MODEL]
    # Every case after the first reuses at least the rubric-only system message (~550 tokens).
    assert entry["cachedTokens"] >= 13 * 500
    assert entry["cachedTokens"] == fake_server.stats()["cached_tokens"]
    assert entry["cachedTokens"] < entry["promptTokens"]
    # The run's totals sum every judge's (one judge here).
    assert run["totals"]["cachedTokens"] == entry["cachedTokens"]
    assert run["totals"]["cacheWriteTokens"] == entry["cacheWriteTokens"] == 0
    text = run_judge(["runs", "show", run["id"]], workspace).stdout
    assert f"({entry['cachedTokens']} prompt tokens from the provider's cache)" in text
