"""Drift canaries: the fake server's answers change under the same model name, or not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import load_fake_server, run_judge

from judge.app.judges.canary import CanaryRequest, run_canary
from judge.app.runs.running import RunRequest, run_suite
from judge.app.workspace.fingerprints import fingerprint_notice
from judge.app.workspace.suites import GenerateRequest, generate_suite
from judge.app.workspace.workspace import Workspace
from judge.cache.disk import JudgmentCache
from judge.core.stats.drift import CanaryItem, Tolerance, summarize

MODEL = "openai/gpt-4o-mini"
ENV = {"JUDGE_API_KEY": "sk-fake-canary"}


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    handle = load_fake_server().start_in_thread(seed=7)
    try:
        yield handle
    finally:
        handle.stop()


def open_ws(root: Path, server: Any, **overrides: Any) -> Workspace:
    return Workspace.open(root, {"model": MODEL, "api_base": server.openai_base_url,
                                 **overrides}, env=ENV)


def export(ws: Workspace) -> list[str]:
    with JudgmentCache(ws.path(ws.settings.cache_dir), "read-only") as cache:
        return sorted(repr(e) for e in cache.iter_entries())


def test_canary_quiet_then_catches_the_switched_model(tmp_path: Path, server: Any) -> None:
    server.set_options(drift=0)
    generate_suite(Workspace.open(tmp_path, env={}), GenerateRequest(
        suite_id="canaried", count=30, output=tmp_path / "suite.jsonl"))
    ws = open_ws(tmp_path, server)
    first = run_suite(ws, RunRequest(suite=Path("suite.jsonl")))
    assert first.run.totals.scored == 30
    before = export(ws)

    server.reset_stats()
    quiet = run_canary(ws, CanaryRequest(suite=Path("suite.jsonl"), sample=10, seed=3))
    assert server.stats()["requests"] == 10  # asked live, never from the cache
    s = quiet.summary
    assert quiet.exit_code == 0 and not s.drifted and s.compared == 10
    assert s.exact_match_rate == 1.0 and s.band_flips == 0 and not s.notices
    assert s.fingerprints_cached == s.fingerprints_fresh == ("fp_fake_7",)
    assert {c.tolerance.source for c in s.categories} == {"threshold"}
    same = run_canary(ws, CanaryRequest(suite=Path("suite.jsonl"), sample=10, seed=3))
    assert [i.case for i in same.items] == [i.case for i in quiet.items]  # seeded sample

    server.set_options(drift=3)  # another model behind the same name
    try:
        drifted = run_canary(ws, CanaryRequest(suite=Path("suite.jsonl"), sample=10, seed=3))
        d = drifted.summary
        assert drifted.exit_code == 1 and d.drifted and d.reasons
        assert d.exact_match_rate is not None and d.exact_match_rate < 0.5
        assert any(c.drifted and c.mean_abs_diff > 5 for c in d.categories)
        assert d.fingerprints_fresh == ("fp_fake_7_d3",)
        assert any("fingerprint" in n for n in d.notices)
        # A generous tolerance from the flag: the same differences are not drift.
        lenient = run_canary(ws, CanaryRequest(suite=Path("suite.jsonl"), sample=10, seed=3,
                                               tolerance=100))
        assert lenient.exit_code == 0

        # The report of a later run that judged anew says the fingerprint changed.
        assert fingerprint_notice(ws, first.run) is None
        # (Three cases are enough to judge anew: the notice compares reported identities.)
        fresh = run_suite(open_ws(tmp_path, server, cache_mode="refresh"),
                          RunRequest(suite=Path("suite.jsonl"), check=False,
                                     ids=tuple(i.case for i in quiet.items[:3])))
        assert fresh.run.totals.judged_anew == 3
        notice = fingerprint_notice(ws, fresh.run)
        assert notice is not None and "fp_fake_7 → fp_fake_7_d3" in notice
    finally:
        server.set_options(drift=0)
    assert export(open_ws(tmp_path, server)) != before  # (the refresh run rewrote it)

    with ws.open_store() as store:
        assert quiet.run.suite == f"{first.run.suite}:canary"
        canary_runs = store.list_runs(quiet.run.suite)
        assert len(canary_runs) == 4
        assert all(r.settings.kind == "canary" for r in canary_runs)
        assert (canary_runs[-1].settings.canary or {})["drifted"] is False
        latest = store.latest_run(first.run.suite)
        assert latest is not None and latest.id == fresh.run.id  # never the gate's pick


def test_canary_never_writes_the_cache(tmp_path: Path, server: Any) -> None:
    generate_suite(Workspace.open(tmp_path, env={}), GenerateRequest(
        suite_id="untouched", count=6, output=tmp_path / "suite.jsonl"))
    ws = open_ws(tmp_path, server)
    run_suite(ws, RunRequest(suite=Path("suite.jsonl")))
    before = export(ws)
    server.set_options(drift=5)
    try:
        report = run_canary(ws, CanaryRequest(suite=Path("suite.jsonl"), sample=6))
    finally:
        server.set_options(drift=0)
    assert report.summary.drifted and export(ws) == before


def test_measured_noise_sets_the_tolerance() -> None:
    item = CanaryItem(case="c", model="m", sample=0, key="k", status="compared",
                      diffs={"a": 4, "b": 1}, cached_band="strong", fresh_band="strong")
    noisy = {"a": Tolerance(points=6, source="measured noise (run r, 3 samples)")}
    verdict = summarize([item], noisy, Tolerance(points=0, source="threshold"))
    by = {c.category: c for c in verdict.categories}
    assert not by["a"].drifted and by["b"].drifted  # b: no measured noise, threshold 0
    assert verdict.drifted and len(verdict.reasons) == 1 and "b:" in verdict.reasons[0]


def test_canary_and_batch_doors(tmp_path: Path, server: Any) -> None:
    import json

    generate_suite(Workspace.open(tmp_path, env={}), GenerateRequest(
        suite_id="doors", count=4, output=tmp_path / "suite.jsonl"))
    env = {"JUDGE_API_KEY": "sk-fake", "JUDGE_MODEL": MODEL,
           "JUDGE_API_BASE": server.openai_base_url}
    submitted = run_judge(["run", "suite.jsonl", "--batch", "--json"], tmp_path, env=env)
    assert submitted.returncode == 0, submitted.stderr
    job = json.loads(submitted.stdout)["job"]
    assert job["jobs"][0]["keys"] == 4 and job["status"] == "submitted"
    waited = run_judge(["runs", "batch", "wait", job["id"], "--interval", "0", "--json"], tmp_path,
                       env=env)
    assert waited.returncode == 0, waited.stderr
    out = json.loads(waited.stdout)
    assert out["run"]["totals"]["batchCalls"] == 4 and out["job"]["status"] == "finished"
    canary = run_judge(["judges", "canary", "suite.jsonl", "--sample", "2", "--json"], tmp_path,
                       env=env)
    assert canary.returncode == 0, canary.stderr
    assert json.loads(canary.stdout)["summary"]["compared"] == 2
    status = run_judge(["runs", "batch", "status", job["id"]], tmp_path, env=env)
    assert status.returncode == 0 and "finished" in status.stdout
