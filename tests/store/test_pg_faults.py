"""PostgreSQL faults: a server restart mid-run, a server down during a write, two
workspaces writing one store at once."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_SUITE, PostgresServer, judge_env
from forked import spawn_judge
from test_store import make_result, make_run

from judge.app.runs.running import RunReport, RunRequest, run_suite
from judge.app.workspace.workspace import Workspace
from judge.store.runs import RunStore

pytestmark = pytest.mark.postgres
MODEL = "hosted_vllm/fake-judge"


def open_ws(root: Path, fake_server: Any, store_url: str, **more: Any) -> Workspace:
    root.mkdir(exist_ok=True)
    return Workspace.open(root, {"model": MODEL, "api_base": fake_server.base_url + "/v1",
                                 "store_url": store_url, **more}, env={})


def test_a_write_while_the_server_is_down_waits_and_is_retried(
        pg_url: str, postgres_server: PostgresServer) -> None:
    store = RunStore(pg_url)
    try:
        store.create_run(make_run())
        store.add_results(make_run().id, [make_result(i) for i in range(3)])
        options = postgres_server.stop()
        starter = threading.Timer(1.0, postgres_server.start, args=(options,))
        starter.start()
        try:
            # The pooled connections died with the server; this batch meets it down.
            store.add_results(make_run().id, [make_result(i) for i in range(2, 8)])
        finally:
            starter.join(timeout=60)
        assert store.count_results(make_run().id)["scored"] == 8  # nothing lost, none twice
        assert [r.id for r in store.iter_results(make_run().id)] == [
            f"case-{i:05d}" for i in range(8)]
    finally:
        store.close()


def test_server_restart_mid_run_loses_nothing(
        fake_server: Any, pg_url: str, postgres_server: PostgresServer, tmp_path: Path) -> None:
    fake_server.set_options(latency_ms=120)
    ws = open_ws(tmp_path / "ws", fake_server, pg_url, concurrency=2)
    done: list[RunReport] = []
    worker = threading.Thread(target=lambda: done.append(
        run_suite(ws, RunRequest(suite=EXAMPLE_SUITE))))
    worker.start()
    deadline = time.monotonic() + 30
    while fake_server.stats()["requests"] < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert worker.is_alive(), "the run ended before the restart: make it slower"
    postgres_server.restart()
    worker.join(timeout=120)
    assert done, "the run did not finish"
    report = done[0]
    assert report.run.status == "complete" and report.exit_code == 0, report
    with RunStore(pg_url) as store:
        stored = list(store.iter_results(report.run.id))
        assert len(stored) == report.summary.cases == 16
        assert store.get_run(report.run.id).status == "complete"


def test_two_workspaces_write_one_store_at_once(
        fake_server: Any, pg_url: str, tmp_path: Path) -> None:
    # Two machines: two processes (one process's threads would share LiteLLM's globals).
    procs = []
    for i in range(2):
        root = tmp_path / f"ws{i}"
        root.mkdir()
        procs.append(spawn_judge(
            ["run", str(EXAMPLE_SUITE), "--model", MODEL, "--api-base",
             fake_server.base_url + "/v1", "--store", pg_url, "--no-check", "--json"],
            root, judge_env()))
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outputs]
    ids = {json.loads(out)["run"]["id"] for out, _ in outputs}
    assert len(ids) == 2
    with RunStore(pg_url) as store:
        assert sorted(r.id for r in store.list_runs()) == sorted(ids)
        for run_id in ids:
            assert store.count_results(run_id)["scored"] == 16
