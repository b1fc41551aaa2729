"""`judge run --batch` killed with SIGKILL mid-submit: the next command resumes, nothing twice."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import httpx
from conftest import judge_env, load_fake_server
from forked import spawn_judge

from judge.app.runs.batching import batch_status, collect_batch
from judge.app.workspace.suites import GenerateRequest, generate_suite
from judge.app.workspace.workspace import Workspace

MODEL = "openai/gpt-4o-mini"


def test_kill_9_between_submit_and_collect(tmp_path: Path) -> None:
    server = load_fake_server().start_in_thread(seed=7)
    try:
        control = f"{server.base_url}/_batch_control"
        # The provider creates the job, then takes its time to answer: the client is
        # killed after the job exists at the provider and before it heard of its id.
        httpx.post(control, json={"create_delay": 30.0})
        generate_suite(Workspace.open(tmp_path, env={}), GenerateRequest(
            suite_id="resume", count=12, output=tmp_path / "suite.jsonl"))
        env = judge_env(JUDGE_API_KEY="sk-fake")
        proc = spawn_judge(["run", "suite.jsonl", "--batch", "--model", MODEL, "--api-base",
                            server.openai_base_url], tmp_path, env)
        try:
            deadline = time.monotonic() + 90
            while httpx.get(f"{server.base_url}/_batch_stats").json()["batches"] < 1:
                assert proc.poll() is None, proc.communicate(timeout=30)
                assert time.monotonic() < deadline, "the batch was never created"
                time.sleep(0.05)
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=30)  # and close its pipes
        assert proc.returncode == -signal.SIGKILL
        httpx.post(control, json={"create_delay": 0.0})

        ws = Workspace.open(tmp_path, {"model": MODEL, "api_base": server.openai_base_url},
                            env={"JUDGE_API_KEY": "sk-fake"})
        job = batch_status(ws)  # the newest unfinished job: found again by its tag
        assert job.status == "submitted" and job.jobs[0].provider_job_id == "batch_fake_1"
        for _ in range(5):
            done = collect_batch(ws, job.id)
            if done.report is not None:
                break
        assert done.report is not None and done.exit_code == 0
        assert done.report.run.totals.batch_calls == 12
        stats = httpx.get(f"{server.base_url}/_batch_stats").json()
        assert stats["batches"] == 1 and stats["files"] == 2  # one input file, one output
        assert server.stats()["requests"] == 0  # and no judgment asked live
    finally:
        server.stop()
