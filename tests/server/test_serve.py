"""`judge workspace serve` as a real process on loopback, over HTTP, against the fake judge.

One server process serves the module's workspace; the SIGTERM test stops it mid-run and
restarts it, then resumes the run through the CLI's operation in this process (the store
and the cache shared by a CLI run and an API run). Slow runs are made by the fake judge's
latency and a seed no other test uses, so every judgment of such a run is a cache miss.
"""

from __future__ import annotations

import asyncio
import json
import queue
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import EXAMPLE_SUITE, ROOT, judge_env, load_fake_server, run_judge
from forked import spawn_judge

from judge.app.runs.running import RunRequest, run_suite
from judge.app.workspace.workspace import Workspace
from judge.core.outcomes.monitor import MonitorConfig, evaluate

TOKEN = "test-token-0123456789"
SECRET = "sk-test-secret-key-that-must-never-leak"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
NO_AUTH = {"Authorization": ""}
"""The server has a token, so every route but the probes needs it: the clients send it;
a request meant to go without it overrides it with this."""
SUITE = "task-evaluation-example"
BROKEN = """\
id: broken
cases:
  - id: one
    input: x
    output: y
    deterministic: {agentPerformance: 150}
"""
VERDICT_FIELDS = ("hasRegression", "scoreDelta", "previousScore", "currentScore", "baselineId",
                  "blockedReasons", "regressedCases", "comparedCases")


def _workspace(root: Path, api_base: str) -> Path:
    (root / "suites").mkdir(parents=True)
    shutil.copy(EXAMPLE_SUITE, root / "suites" / "task.yaml")
    (root / "judge.toml").write_text(
        f'model = "hosted_vllm/fake-judge"\napi_base = "{api_base}"\nconcurrency = 2\n'
        "monitor_rate = 1.0\nmonitor_min_samples = 3\n", encoding="utf-8")
    return root


class Served:
    """A `judge workspace serve` process: its URL, and its stderr drained on a thread."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.start()

    def start(self) -> None:
        env = judge_env(JUDGE_SERVER_TOKEN=TOKEN, JUDGE_API_KEY=SECRET, PYTHONPATH=str(ROOT))
        self.proc = spawn_judge(["workspace", "serve", "--port", "0"], self.workspace, env,
                                server=True)
        self.lines: queue.Queue[str] = queue.Queue()
        self.log: list[str] = []
        threading.Thread(target=self._drain, daemon=True).start()
        self.url = self._wait_ready()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.log.append(line)
            self.lines.put(line)

    def _wait_ready(self) -> str:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                if self.proc.poll() is not None:
                    break
                continue
            found = re.search(r"judge workspace serve: (http://127\.0\.0\.1:\d+)", line)
            if found:
                return self._wait_open(found.group(1), deadline)
        self.stop()
        raise AssertionError("judge workspace serve did not start:\n" + "".join(self.log))

    def _wait_open(self, url: str, deadline: float) -> str:
        """``url`` once ``/readyz`` says the workspace is open (``/healthz`` answers before)."""
        with httpx.Client(base_url=url, timeout=10) as client:
            health = client.get("/healthz")
            assert health.status_code == 200 and health.json()["status"] == "ok", health.text
            while time.monotonic() < deadline and self.proc.poll() is None:
                if client.get("/readyz").status_code == 200:
                    return url
                time.sleep(0.05)
        self.stop()
        raise AssertionError("judge workspace serve never got ready:\n" + "".join(self.log))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self.proc.stderr is not None:
            self.proc.stderr.close()

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture(scope="module")
def judge_server() -> Iterator[Any]:
    handle = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory, judge_server: Any) -> Path:
    root = _workspace(tmp_path_factory.mktemp("serve") / "ws", judge_server.openai_base_url)
    (root / "suites" / "broken.yaml").write_text(BROKEN, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def server(ws: Path) -> Iterator[Served]:
    served = Served(ws)
    try:
        yield served
    finally:
        served.stop()


@pytest.fixture
def api(server: Served) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60, headers=AUTH) as client:
        yield client


@pytest.fixture
def slow_judge(judge_server: Any) -> Iterator[Any]:
    judge_server.set_options(latency_ms=250)
    try:
        yield judge_server
    finally:
        judge_server.set_options(latency_ms=0, bias=0)


def _harness(api: httpx.Client, body: dict[str, Any] | None = None, *,
             wait: bool = True) -> httpx.Response:
    return api.post(f"/api/suites/{SUITE}/eval/harness", params={"wait": wait}, json=body,
                    headers=AUTH)


def _until(api: httpx.Client, run: str, ready: Any, *, seconds: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        view: dict[str, Any] = api.get(f"/api/runs/{run}").json()
        if ready(view):
            return view
        time.sleep(0.05)
    raise AssertionError(f"run {run} never got there: {view}")


def _verdict(body: dict[str, Any]) -> dict[str, Any]:
    return {k: body[k] for k in VERDICT_FIELDS}


def test_seed_endpoints_end_to_end_and_the_cli_operations_agree(
        api: httpx.Client, judge_server: Any, tmp_path: Path) -> None:
    assert api.get("/healthz").json() == {"status": "ok", "ready": True}
    assert api.get("/readyz").status_code == 200
    suites = {s["id"]: s for s in api.get("/api/suites").json()}
    assert suites[SUITE]["cases"] == 16 and suites[SUITE]["error"] is None
    assert "deterministic.agentPerformance" in suites["broken"]["error"]
    assert api.post(f"/api/suites/{SUITE}/eval/harness", headers=NO_AUTH).status_code == 401
    assert api.get("/api/suites", headers=NO_AUTH).status_code == 401

    first = _harness(api)
    assert first.status_code == 200, first.text
    view = first.json()
    assert view["status"] == "complete" and view["exitCode"] == 0
    assert view["summary"]["cases"] == 16
    assert view["regression"]["baselineRecorded"] is True
    assert view["regression"]["hasRegression"] is False

    baseline = api.get(f"/api/suites/{SUITE}/eval/baseline")
    assert baseline.status_code == 200 and baseline.json()["recordedFrom"] == view["id"]
    recorded = api.post(f"/api/suites/{SUITE}/eval/baseline", json={"run": view["id"]},
                        headers=AUTH)
    assert recorded.status_code == 201, recorded.text
    assert recorded.json()["changed"] is False
    assert recorded.json()["path"] == f"baselines/{SUITE}.json"

    judge_server.set_options(bias=-40)  # a worse judge: every AI score 40 lower
    try:
        worse = _harness(api, {"cacheMode": "refresh"}).json()
    finally:
        judge_server.set_options(bias=0)
    regression = worse["regression"]
    assert regression["hasRegression"] is True and worse["exitCode"] == 1
    assert regression["scoreDelta"] < -5 and regression["blockedReasons"]
    assert regression["blockedReasons"][0].startswith("mean score fell by")
    # What was compared: the baseline file, its judge, rubric and template, the cases. No
    # noise model: the suite's mean decides, no case listed alone.
    assert regression["outcome"] == "compared" and regression["comparedCases"] == 16
    assert regression["against"]["file"].endswith(f"baselines/{SUITE}.json")
    assert regression["against"]["judge"] == ["hosted_vllm/fake-judge"]
    assert regression["against"]["templateId"] == "judge"
    assert regression["regressedCases"] == [] and regression["test"]["rule"] == "paired"

    history = api.get(f"/api/suites/{SUITE}/eval/history", params={"limit": 1}).json()
    assert [r["id"] for r in history["items"]] == [worse["id"]] and history["next"] == 1
    older = api.get(f"/api/suites/{SUITE}/eval/history", params={"offset": 1}).json()
    assert view["id"] in [r["id"] for r in older["items"]]
    listed = api.get("/api/eval/baselines").json()
    assert [(b["suite"], b["baseline"]["baselineId"]) for b in listed] == [
        (SUITE, baseline.json()["baselineId"])]
    metrics = api.get("/metrics").text
    assert re.search(r'judge_runs_total\{status="complete"\} [1-9]', metrics), metrics
    assert re.search(r"judge_model_calls_total [1-9]", metrics), metrics

    # The same scenario through `judge run` and `judge check` (the CLI, in this process) in
    # another workspace: the same verdicts, printed by the same serializer.
    other = _workspace(tmp_path / "cli", judge_server.openai_base_url)
    first_cli = run_judge(["run", "suites/task.yaml", "--json"], other)
    assert first_cli.returncode == 0, first_cli.stderr
    assert json.loads(first_cli.stdout)["baseline"]["baselineRecorded"] is True
    judge_server.set_options(bias=-40)
    try:
        worse_cli = run_judge(["run", "suites/task.yaml", "--cache-mode", "refresh", "--json"],
                              other)
    finally:
        judge_server.set_options(bias=0)
    assert worse_cli.returncode == worse["exitCode"] == 1, worse_cli.stderr
    assert _verdict(json.loads(worse_cli.stdout)["baseline"]) == _verdict(regression)
    checked = run_judge(["check", "--json"], other)
    assert checked.returncode == 1, checked.stderr
    assert _verdict(json.loads(checked.stdout)) == _verdict(regression)


def test_sse_progress_then_summary(api: httpx.Client, slow_judge: Any) -> None:
    started = _harness(api, {"seed": 101}, wait=False)
    assert started.status_code == 202, started.text
    run = started.json()["run"]
    assert started.headers["location"] == f"/api/runs/{run}"
    events: list[tuple[str, dict[str, Any]]] = []
    with api.stream("GET", f"/api/runs/{run}/events") as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        kind = ""
        for line in stream.iter_lines():
            if line.startswith("event:"):
                kind = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                events.append((kind, json.loads(line.split(":", 1)[1])))
                if kind == "summary":
                    break
    kinds = [k for k, _ in events]
    assert kinds[-1] == "summary" and kinds.count("summary") == 1 and "progress" in kinds
    done = [e["progress"]["done"] for k, e in events if k == "progress"]
    assert done == sorted(done)
    summary = events[-1][1]
    assert summary["status"] == "complete" and summary["progress"]["done"] == 16
    assert summary["summary"]["cases"] == 16


def test_conflict_cancel_and_resume(api: httpx.Client, slow_judge: Any) -> None:
    body = {"seed": 202}
    run = _harness(api, body, wait=False).json()["run"]
    second = _harness(api, body, wait=False)
    assert second.status_code == 409
    assert second.headers["content-type"] == "application/problem+json"
    assert second.json()["run"] == run and run in second.json()["detail"]
    _until(api, run, lambda v: v["progress"]["judgments"] >= 3)
    assert api.delete(f"/api/runs/{run}", headers=NO_AUTH).status_code == 401
    cancelled = api.delete(f"/api/runs/{run}", headers=AUTH)
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "interrupted"
    stored = api.get(f"/api/runs/{run}").json()
    assert stored["status"] == stored["run"]["status"] == "interrupted"
    page = api.get(f"/api/runs/{run}/cases", params={"limit": 500}).json()
    judged = [c for c in page["items"] if c["judgedBy"] == "llm" and c["status"] == "scored"]
    assert len(judged) >= 3 and len(page["items"]) < 16 and page["total"] == len(page["items"])
    assert api.delete(f"/api/runs/{run}", headers=AUTH).status_code == 409

    slow_judge.set_options(latency_ms=0)
    resumed = _harness(api, body).json()
    assert resumed["status"] == "complete"
    totals = resumed["run"]["totals"]
    assert totals["cacheHits"] >= len(judged) and totals["judgedAnew"] <= 14 - len(judged)


def test_bad_suite_unknown_ids_and_paths(api: httpx.Client) -> None:
    broken = api.post("/api/suites/broken/eval/harness", headers=AUTH)
    assert broken.status_code == 422
    problem = broken.json()
    assert broken.headers["content-type"] == "application/problem+json"
    assert problem["file"] == "suites/broken.yaml"
    assert problem["where"] == "case 'one': deterministic.agentPerformance"
    assert api.get("/api/suites/nope/eval/baseline").json()["status"] == 404
    assert api.get("/api/suites/broken/eval/baseline").json()["type"].endswith("no-baseline")
    assert api.get("/api/runs/20000101T000000-000000").status_code == 404
    for sneaky in ("..", "..%2F..%2Fetc%2Fpasswd", "%2Fetc%2Fpasswd", "a%5C..%5Cb"):
        answer = api.get(f"/api/suites/{sneaky}/eval/baseline")
        assert answer.status_code in {404, 422}, (sneaky, answer.text)
    bad_rubric = _harness(api, {"rubric": "../../etc/passwd"})
    assert bad_rubric.status_code == 422 and bad_rubric.json()["where"] == "body.rubric"
    assert _harness(api, {"samples": 0}).json()["where"].startswith("setting samples")


def test_evaluate_and_monitor(api: httpx.Client) -> None:
    import yaml

    cases = yaml.safe_load(EXAMPLE_SUITE.read_text(encoding="utf-8"))["cases"]
    llm = [c for c in cases if c.get("judged_by", "llm") == "llm"][:4]
    assert api.post("/api/evaluate", json={"case": llm[0]}, headers=NO_AUTH).status_code == 401
    one = api.post("/api/evaluate", json={"case": llm[0]}, headers=AUTH)
    assert one.status_code == 200 and one.json()["status"] == "scored", one.text
    records = [{**c, "id": f"live-{n}"} for n, c in enumerate(llm)]
    ingest = api.post(f"/api/monitor/{SUITE}/records", json={"records": records}, headers=AUTH)
    assert ingest.status_code == 200, ingest.text
    report = ingest.json()
    assert report["received"] == report["sampled"] == 4 and len(report["judged"]) == 4
    expected = evaluate(({"id": r["id"], "passed": r["passed"],
                          "overallScore": r["overallScore"]} for r in report["judged"]),
                        MonitorConfig(sample_rate=1.0, min_samples=3))
    state = api.get(f"/api/monitor/{SUITE}").json()
    assert state["monitor"] == expected.model_dump(mode="json")
    assert state["window"]["records"] == 4 and state["window"]["capacity"] == 1000
    bad = api.post(f"/api/monitor/{SUITE}/records", json={"records": [{"input": 1}]},
                   headers=AUTH)
    assert bad.status_code == 422
    assert api.get(f"/api/monitor/{SUITE}").json()["window"]["records"] == 4


async def test_fifty_concurrent_reads_while_a_run_writes(server: Served, api: httpx.Client,
                                                         slow_judge: Any) -> None:
    run = _harness(api, {"seed": 303}, wait=False).json()["run"]
    paths = [f"/api/runs/{run}", f"/api/runs/{run}/cases", f"/api/suites/{SUITE}/eval/history",
             "/api/suites", "/healthz"] * 10
    async with httpx.AsyncClient(base_url=server.url, timeout=30, headers=AUTH) as client:
        answers = await asyncio.wait_for(
            asyncio.gather(*(client.get(p) for p in paths)), timeout=60)
    assert [a.status_code for a in answers] == [200] * 50
    assert any(a.json().get("active") for a in answers[::5])  # read while it judged
    done = _until(api, run, lambda v: not v["active"])
    assert done["status"] == "complete"


def test_no_key_in_any_response(api: httpx.Client) -> None:
    for path in ("/api/suites", f"/api/suites/{SUITE}/eval/history", "/api/eval/baselines",
                 "/metrics", "/openapi.json"):
        text = api.get(path).text
        assert SECRET not in text and TOKEN not in text, path
    history = api.get(f"/api/suites/{SUITE}/eval/history").json()["items"]
    for run in history[:3]:
        for path in (f"/api/runs/{run['id']}", f"/api/runs/{run['id']}/cases"):
            assert SECRET not in api.get(path).text


def test_sigterm_mid_run_stores_what_was_judged_and_a_restart_serves_it(
        server: Served, slow_judge: Any) -> None:
    with httpx.Client(base_url=server.url, timeout=30, headers=AUTH) as client:
        run = _harness(client, {"seed": 404}, wait=False).json()["run"]
        _until(client, run, lambda v: v["progress"]["judgments"] >= 3)
        seen = client.get(f"/api/runs/{run}").json()["progress"]["judgedAnew"]
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(timeout=30)
    log = "".join(server.log)
    assert "Traceback" not in log, log
    server.restart()  # the module's later tests get the restarted server
    with httpx.Client(base_url=server.url, timeout=30, headers=AUTH) as client:
        stored = client.get(f"/api/runs/{run}").json()
        assert stored["status"] == "interrupted" and stored["active"] is False
        page = client.get(f"/api/runs/{run}/cases", params={"limit": 500}).json()
    judged = [c for c in page["items"] if c["judgedBy"] == "llm" and c["status"] == "scored"]
    assert len(judged) >= seen >= 3  # every judgment reported before the signal was stored
    # Resume through the CLI's operation, sharing the server's store and cache.
    slow_judge.set_options(latency_ms=0)
    resumed = run_suite(Workspace.open(server.workspace, {"seed": 404}, env=judge_env()),
                        RunRequest(suite=Path("suites/task.yaml"), check=False))
    assert resumed.run.status == "complete"
    assert resumed.run.totals.cache_hits >= len(judged)  # nothing judged was lost
