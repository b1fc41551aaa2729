"""The local judge starts its server only when a cache miss needs a call."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest
from conftest import EXAMPLE_SUITE, run_judge

from judge.llm.client import Completion, JudgeRequest, LiteLLMClient, ModelSpec
from judge.llm.local import LocalServer, local_available
from judge.llm.local_client import LazyLocalClient

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "examples" / "task-evaluation" / "local-smollm2.cache.jsonl"


@pytest.mark.skipif(not local_available(), reason="the local judge is not installed")
def test_fully_cached_local_run_starts_no_server(workspace: Path) -> None:
    shutil.copy(EXAMPLE_SUITE, workspace / "suite.yaml")
    imported = run_judge(["cache", "import", str(SHIPPED)], workspace)
    assert imported.returncode == 0, imported.stderr
    # Read-write, not --offline: a miss would start llama.cpp; every case is a hit.
    done = run_judge(["run", "suite.yaml", "--model", "local/smollm2", "--no-check",
                      "--json"], workspace)
    assert done.returncode == 0, done.stderr
    run = json.loads(done.stdout)
    llm = [c for c in run["cases"] if c["judgedBy"] == "llm"]
    assert llm and all(c["judge"]["cached"] for c in llm)
    # start_server writes its log before the process exists: no log, no server.
    assert not (workspace / ".judge" / "local" / "smollm2.log").exists()
    assert not (workspace / ".judge" / "local" / "smollm2.json").exists()


class _Inner(LiteLLMClient):
    def __init__(self) -> None:
        super().__init__(ModelSpec(name="hosted_vllm/x", api_base="http://127.0.0.1:9/v1"))

    async def complete(self, request: JudgeRequest, messages: object = None) -> Completion:
        self.attempts += 1
        return Completion(text="{}", finish_reason="stop", model_reported="x", prompt_tokens=1,
                          completion_tokens=1, cost_usd=None, latency_ms=1.0,
                          output_mode="json_object")


def test_lazy_client_starts_once_on_first_call_and_releases() -> None:
    started: list[int] = []
    released: list[int] = []

    def start() -> LocalServer:
        started.append(1)
        return LocalServer(name="local/smollm2", litellm_model="hosted_vllm/x",
                           api_base="http://127.0.0.1:9/v1", pid=0, owned=True,
                           release=lambda: released.append(1), engine={"engine": "t"})

    client = LazyLocalClient(start, lambda server: _Inner(), max_concurrency=1)
    client.release()
    assert (started, released, client.attempts, client.engine) == ([], [], 0, None)
    request = JudgeRequest(model="local/smollm2", messages=({"role": "user", "content": "x"},),
                           temperature=0.0, seed=42, schema=None, output_mode="auto")

    async def calls() -> None:
        await asyncio.gather(*(client.complete(request) for _ in range(3)))

    asyncio.run(calls())
    assert started == [1] and client.attempts == 3
    client.release()
    assert released == [1]
