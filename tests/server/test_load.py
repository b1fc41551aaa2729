"""Concurrent requests and runs in one server never break each other.

Bounded: 100 ``POST /api/evaluate`` (200 in the finding) at 20 at a time, and two harness
runs beside them, against the loopback fake judge with a delay on every call. The app runs
in this process (its event loop is the test's), served over ASGI: the LiteLLM sessions, the
cache, the store and the jobs are the ones ``judge workspace serve`` shares between requests. Before
the fix, each request closed LiteLLM's process-wide sessions at its end: requests beside it
lost their connection ("Server disconnected", unscored) or answered 500 (``RuntimeError:
dictionary changed size during iteration``), and a run the API reported ``failed`` stayed
``running`` in the store.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from conftest import EXAMPLE_SUITE, load_fake_server

from judge.app.runs.jobs import RunJobs
from judge.app.runs.running import RunRequest
from judge.app.workspace.workspace import LiteLLMJudges, Workspace
from judge.server.app import create_app
from judge.server.problems import PROBLEM_JSON

REQUESTS = int(os.environ.get("JUDGE_TEST_LOAD_REQUESTS", "100"))
"""100 by default keeps the default run short; the finding's 200: JUDGE_TEST_LOAD_REQUESTS=200."""
AT_ONCE = 20
LATENCY_MS = 100
SUITES = ("load-a", "load-b")
FINAL = {"complete", "interrupted", "failed"}


@pytest.fixture
def slow_judge() -> Iterator[Any]:
    handle = load_fake_server().start_in_thread(latency_ms=LATENCY_MS, seed=11)
    try:
        yield handle
    finally:
        handle.stop()


def _workspace(root: Path, api_base: str) -> Path:
    (root / "suites").mkdir(parents=True)
    text = EXAMPLE_SUITE.read_text(encoding="utf-8")
    for suite in SUITES:
        (root / "suites" / f"{suite}.yaml").write_text(
            text.replace("id: task-evaluation-example", f"id: {suite}", 1), encoding="utf-8")
    (root / "judge.toml").write_text(
        f'model = "hosted_vllm/fake-judge"\napi_base = "{api_base}"\nconcurrency = 4\n',
        encoding="utf-8")
    return root


def _cases() -> list[dict[str, Any]]:
    cases = yaml.safe_load(EXAMPLE_SUITE.read_text(encoding="utf-8"))["cases"]
    llm = [c for c in cases if c.get("judged_by", "llm") == "llm"]
    # Every request its own case text, so every one is a cache miss and a model call.
    return [{**llm[n % len(llm)], "id": f"load-{n}",
             "output": f"{llm[n % len(llm)]['output']} (variant {n})"} for n in range(REQUESTS)]


def _answered_well(answer: httpx.Response) -> bool:
    if answer.status_code == 200:
        return bool(answer.json()["status"] == "scored")
    return (answer.headers["content-type"] == PROBLEM_JSON
            and answer.json()["status"] == answer.status_code)


async def test_two_hundred_evaluations_at_twenty_at_once_beside_two_runs(
        tmp_path: Path, slow_judge: Any) -> None:
    root = _workspace(tmp_path / "ws", slow_judge.openai_base_url)
    app = create_app(Workspace.open(root, env={}))
    cases = _cases()
    gate = asyncio.Semaphore(AT_ONCE)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1",
            timeout=60) as client:

        async def evaluate(case: dict[str, Any]) -> httpx.Response:
            async with gate:
                return await client.post("/api/evaluate", json={"case": case})

        runs = [await client.post(f"/api/suites/{s}/eval/harness", json={"check": False})
                for s in SUITES]
        assert [r.status_code for r in runs] == [202, 202], [r.text for r in runs]
        answers = await asyncio.wait_for(asyncio.gather(*(evaluate(c) for c in cases)), 120)
        views = []
        for run in runs:
            run_id = run.json()["run"]
            deadline = time.monotonic() + 60
            view = (await client.get(f"/api/runs/{run_id}")).json()
            while view["active"] and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                view = (await client.get(f"/api/runs/{run_id}")).json()
            views.append(view)

    bad = [(a.status_code, a.text[:200]) for a in answers if not _answered_well(a)]
    assert not bad, f"{len(bad)} of {REQUESTS} answers neither scored nor a problem: {bad[:3]}"
    scored = sum(a.status_code == 200 for a in answers)
    assert scored == REQUESTS  # the fake judge never faults: every one is a judgment
    with Workspace.open(root, env={}).open_store() as store:
        for view in views:
            stored = store.get_run(view["id"])
            assert view["status"] == "complete" and stored.status == "complete", view
            results = [r for r in store.iter_results(view["id"]) if r.judged_by == "llm"]
            assert results and all(r.status == "scored" for r in results), view["id"]


class _BuggyPool:
    """The real clients; closing them raises an error of ours (not a JudgeError)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.clients = inner.clients

    async def aclose(self) -> None:
        await self.inner.aclose()
        raise RuntimeError("a bug of ours, after every judgment was stored")


class _BuggyJudges:
    def open(self, workspace: Workspace, models: Any) -> _BuggyPool:
        return _BuggyPool(LiteLLMJudges(process_owned=True).open(workspace, models))


async def test_a_run_the_api_reports_failed_is_failed_in_the_store(
        tmp_path: Path, fake_server: Any) -> None:
    root = _workspace(tmp_path / "ws", fake_server.openai_base_url)
    workspace = Workspace.open(root, env={}, judges=_BuggyJudges())
    jobs = RunJobs()
    job = await jobs.start(workspace, RunRequest(suite=root / "suites" / "load-a.yaml",
                                                 check=False), "load-a")
    assert job.task is not None
    await asyncio.gather(job.task, return_exceptions=True)
    view = job.view()
    assert view.status == "failed" and "a bug of ours" in (view.reason or "")
    with workspace.open_store() as store:
        assert store.get_run(view.id).status == "failed"  # before: "running", forever
