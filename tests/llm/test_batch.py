"""Provider batch mode through the cache, against the loopback fake server's batch endpoints."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import load_fake_server

from judge.app.runs.batching import (
    EXIT_PENDING,
    batch_status,
    cancel_batch,
    collect_batch,
    submit_batch,
)
from judge.app.runs.running import RunRequest, run_suite
from judge.app.workspace.suites import GenerateRequest, generate_suite
from judge.app.workspace.workspace import Workspace
from judge.cache.disk import JudgmentCache
from judge.core.formats.models import CaseResult
from judge.core.text.errors import UsageError

MODEL = "openai/gpt-4o-mini"  # priced by litellm's map, batch rate included
ENV = {"JUDGE_API_KEY": "sk-fake-batch"}


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    handle = load_fake_server().start_in_thread(seed=7)
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture(autouse=True)
def _fresh_knobs(server: Any) -> None:
    httpx.post(f"{server.base_url}/_batch_control", json={
        "polls": 1, "error_every": 0, "invalid_every": 0, "expire_after": None,
        "cancel_keeps": None, "fail": False, "create_delay": 0.0})
    server.set_options(drift=0)


def knobs(server: Any, **changes: Any) -> None:
    assert httpx.post(f"{server.base_url}/_batch_control", json=changes).status_code == 200


def batch_stats(server: Any) -> dict[str, int]:
    return dict(httpx.get(f"{server.base_url}/_batch_stats").json())


def open_ws(root: Path, server: Any, **overrides: Any) -> Workspace:
    return Workspace.open(root, {"model": MODEL, "api_base": server.openai_base_url,
                                 **overrides}, env=ENV)


def make_suite(root: Path, count: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    path = root / "suite.jsonl"
    generate_suite(Workspace.open(root, env={}), GenerateRequest(
        suite_id="batchy", count=count, output=path))
    return Path("suite.jsonl")


def results(ws: Workspace, run_id: str) -> dict[str, CaseResult]:
    with ws.open_store() as store:
        return {r.id: r for r in store.iter_results(run_id)}


def entries(ws: Workspace) -> dict[str, dict[str, Any]]:
    with JudgmentCache(ws.path(ws.settings.cache_dir), "read-only") as cache:
        return {e.key: e.data for e in cache.iter_entries()}


def verdict(r: CaseResult) -> Any:
    return (r.status, r.overall_score, r.band, r.passed,
            [(c.category, c.ai_score, c.final_score, c.band) for c in r.category_scores])


def until_done(ws: Workspace, job_id: str) -> list[str]:
    seen = []
    for _ in range(10):
        job = batch_status(ws, job_id)
        seen.append(job.jobs[0].status)
        if job.jobs[0].status in ("completed", "expired", "cancelled", "failed"):
            return seen
    raise AssertionError(f"batch never ended: {seen}")


N_EQUAL = 60
"""Cases judged live and by batch: enough for several batch lines, few enough to be quick."""


def test_batch_run_equals_live_run(tmp_path: Path, server: Any) -> None:
    suite = make_suite(tmp_path / "live", N_EQUAL)
    make_suite(tmp_path / "batch", N_EQUAL)
    live_ws = open_ws(tmp_path / "live", server)
    live = run_suite(live_ws, RunRequest(suite=suite))
    assert live.run.totals.scored == N_EQUAL and live.run.totals.calls == N_EQUAL

    ws = open_ws(tmp_path / "batch", server)
    server.reset_stats()
    done = submit_batch(ws, RunRequest(suite=suite))
    assert done.job is not None and done.submitted == N_EQUAL and done.cached == 0
    assert done.job.status == "submitted" and done.job.jobs[0].status == "validating"
    early = collect_batch(ws, done.job.id)  # still in progress: nothing collected
    assert early.report is None and early.exit_code == EXIT_PENDING
    assert until_done(ws, done.job.id)[-1] == "completed"
    collected = collect_batch(ws, done.job.id)
    assert collected.report is not None and collected.exit_code == 0
    assert server.stats()["requests"] == 0  # not one live chat call for batched judgments

    # The same cache entries (keys, requests, replies) and the same verdicts as live.
    a, b = entries(live_ws), entries(ws)
    assert a.keys() == b.keys() and len(a) == N_EQUAL
    for key in a:
        assert a[key]["request"] == b[key]["request"]
        assert [t["text"] for t in a[key]["turns"]] == [t["text"] for t in b[key]["turns"]]
        assert b[key]["meta"]["batchJob"] == done.job.id
    live_results, batch_results = results(live_ws, live.run.id), results(ws, collected.job.run_id
                                                                          or "")
    assert {k: verdict(v) for k, v in live_results.items()} == \
        {k: verdict(v) for k, v in batch_results.items()}

    # The ledger: every judgment billed at the batch rate, half the live price.
    t = collected.report.run.totals
    assert (t.batch_calls, t.calls, t.judged_anew, t.cache_hits) == (N_EQUAL, 0, N_EQUAL, 0)
    assert t.prompt_tokens == live.run.totals.prompt_tokens
    assert live.run.totals.cost_usd is not None and t.batch_cost_usd is not None
    assert t.batch_cost_usd == pytest.approx(live.run.totals.cost_usd / 2, rel=1e-6)
    assert t.cost_usd == pytest.approx(t.batch_cost_usd)
    # The judge's own line says the same: paid judgments, not cache hits.
    (entry,) = t.ledger.values()
    assert (entry.judgments, entry.cache_hits) == (N_EQUAL, 0)
    assert (entry.prompt_tokens, entry.completion_tokens) == (t.prompt_tokens, t.completion_tokens)
    assert entry.cost_usd == pytest.approx(t.batch_cost_usd)
    with ws.open_store() as store:
        assert store.get_run(collected.job.run_id or "").totals.batch_calls == N_EQUAL

    # Collecting again changes nothing; a plain run now replays without a call.
    again = collect_batch(ws, done.job.id)
    assert again.report is None and again.exit_code == 0
    replay = run_suite(ws, RunRequest(suite=suite))
    assert replay.run.totals.cache_hits == N_EQUAL and replay.run.totals.calls == 0
    assert batch_stats(server)["batches"] >= 1 and server.stats()["requests"] == 0
    # Everything cached: --batch has nothing to send.
    nothing = submit_batch(ws, RunRequest(suite=suite))
    assert nothing.job is None and nothing.cached == N_EQUAL


@pytest.mark.parametrize("live", [True, False])
def test_failed_and_invalid_items(tmp_path: Path, server: Any, live: bool) -> None:
    suite = make_suite(tmp_path, 20)
    # Without live fallback also no repair turn: an invalid answer stays unscored, unasked.
    ws = open_ws(tmp_path, server, **({} if live else {"max_repairs": 0}))
    knobs(server, error_every=5, invalid_every=7)
    done = submit_batch(ws, RunRequest(suite=suite))
    assert done.job is not None
    until_done(ws, done.job.id)
    server.reset_stats()
    collected = collect_batch(ws, done.job.id, live=live)
    assert collected.report is not None
    ledger = collected.job.ledger
    assert ledger is not None and len(ledger.failed) == 4
    assert all("HTTP 500" in reason for reason in ledger.failed.values())
    got = results(ws, collected.job.run_id or "")
    t = collected.report.run.totals
    if live:
        # 4 failed items asked live, 2 invalid ones repaired live: 6 calls, all scored.
        assert ledger.repair_calls == 2 and not ledger.invalid and ledger.answered == 16
        assert server.stats()["requests"] == 6 and t.calls == 6
        assert all(r.status == "scored" for r in got.values())
        assert t.batch_calls == 16 and t.judged_anew == 20
    else:
        assert server.stats()["requests"] == 0 and t.calls == 0
        assert len(ledger.invalid) == 2 and ledger.answered == 14
        unscored = {k: r.reason or "" for k, r in got.items() if r.status == "unscored"}
        assert len(unscored) == 6
        assert sum("HTTP 500" in v for v in unscored.values()) == 4
        assert sum("invalid verdict" in v for v in unscored.values()) == 2
        assert t.batch_calls == 14


def test_expired_and_cancelled_jobs(tmp_path: Path, server: Any) -> None:
    suite = make_suite(tmp_path / "a", 10)
    ws = open_ws(tmp_path / "a", server)
    knobs(server, expire_after=6)
    done = submit_batch(ws, RunRequest(suite=suite))
    assert done.job is not None
    assert until_done(ws, done.job.id)[-1] == "expired"
    server.reset_stats()
    expired = collect_batch(ws, done.job.id, live=False)
    assert expired.report is not None
    unscored = [r for r in results(ws, expired.job.run_id or "").values()
                if r.status == "unscored"]
    assert len(unscored) == 4 and all("batch_expired" in (r.reason or "") for r in unscored)
    assert server.stats()["requests"] == 0
    assert expired.report.run.totals.batch_calls == 6

    make_suite(tmp_path / "b", 10)
    ws = open_ws(tmp_path / "b", server)
    knobs(server, expire_after=None, polls=5)
    done = submit_batch(ws, RunRequest(suite=suite))
    assert done.job is not None
    cancelled = cancel_batch(ws, done.job.id)
    assert cancelled.jobs[0].status == "cancelling"
    assert until_done(ws, done.job.id)[-1] == "cancelled"
    server.reset_stats()
    finished = collect_batch(ws, done.job.id)  # the unanswered half is asked live
    assert finished.report is not None and finished.exit_code == 0
    assert server.stats()["requests"] == 5
    t = finished.report.run.totals
    assert (t.batch_calls, t.calls, t.scored) == (5, 5, 10)


def test_provider_without_batches_is_named(tmp_path: Path, server: Any) -> None:
    suite = make_suite(tmp_path, 2)
    ws = open_ws(tmp_path, server, model="hosted_vllm/fake-judge")
    with pytest.raises(UsageError) as caught:
        submit_batch(ws, RunRequest(suite=suite))
    text = str(caught.value)
    assert "hosted_vllm" in text and "openai" in text and "vertex_ai" in text
    with pytest.raises(UsageError, match="read-write"):
        submit_batch(open_ws(tmp_path, server, cache_mode="read-only"), RunRequest(suite=suite))
    assert not (tmp_path / ".judge").exists() or batch_stats(server)["batches"] >= 0


def test_job_document_keeps_no_base_url(tmp_path: Path, server: Any) -> None:
    suite = make_suite(tmp_path, 3)
    ws = open_ws(tmp_path, server)
    done = submit_batch(ws, RunRequest(suite=suite))
    assert done.job is not None
    text = json.dumps(done.job.model_dump(mode="json"))
    assert server.base_url not in text and "sk-fake" not in text
    assert "127.0.0.1" not in text


def test_batch_results_record_cached_tokens(tmp_path: Path, server: Any) -> None:
    """A batch answer's usage is read as a live reply's: the provider's cached prompt tokens
    reach the cache entry's turn, the result, and the job's ledger."""
    suite = make_suite(tmp_path, 6)
    ws = open_ws(tmp_path, server, stable_schema=True)  # one schema: a prefix to share
    server.reset_stats()
    server.set_options(prompt_cache_block=16, prompt_cache_min=0)
    try:
        done = submit_batch(ws, RunRequest(suite=suite, check=False))
        assert done.job is not None
        until_done(ws, done.job.id)
        collected = collect_batch(ws, done.job.id)
    finally:
        server.set_options(prompt_cache_block=0, prompt_cache_min=1024)
    reported = server.stats()["cached_tokens"]
    assert collected.report is not None and reported > 0
    cached = {r.judge.cache_key: r.judge.cached_tokens
              for r in results(ws, collected.job.run_id or "").values() if r.judge is not None}
    assert len(cached) == 6 and None not in cached.values()
    assert sum(v or 0 for v in cached.values()) == reported
    assert {k: e["turns"][0]["cachedTokens"] for k, e in entries(ws).items()} == cached
    assert collected.job.ledger is not None and collected.job.ledger.cached_tokens == reported
    totals = collected.report.run.totals  # the run's totals and its judge's line count them
    assert totals.cached_tokens == reported
    assert [e.cached_tokens for e in totals.ledger.values()] == [reported]
