"""A judge that cannot work stops the run early (exit 4, < 20 calls, stored failed, no verdict),
and a key a provider echoes back reaches no store, export, JSON door or stderr."""

from __future__ import annotations

import http.server
import json
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_SUITE, judge_env, run_judge

from judge.core.text.errors import ProviderError
from judge.core.text.secrets import MASK, Redactor, secret_values
from judge.engine.runner import Breaker
from judge.llm.client import classify

KEY = "team-key-7f3a9c1e5b2d4f60a8"  # not a known key shape: only its value can mask it


class _EchoAuth(http.server.BaseHTTPRequestHandler):
    """Answers every request 401, quoting the Authorization header back (a careless proxy)."""

    calls = 0

    def do_POST(self) -> None:
        type(self).calls += 1
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        echoed = self.headers.get("Authorization", "")
        body = json.dumps({"error": {"message": f"Incorrect API key provided: {echoed} "
                                                f"(x-api-key {echoed.split()[-1]})",
                                     "type": "invalid_request_error",
                                     "code": "invalid_api_key"}}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture
def echo_server() -> Iterator[tuple[str, type[_EchoAuth]]]:
    handler = type("Handler", (_EchoAuth,), {"calls": 0})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def _suite(ws: Path) -> int:
    shutil.copy(EXAMPLE_SUITE, ws / "suite.yaml")
    return 16


def test_echoed_key_reaches_no_store_export_json_or_stderr(
        echo_server: tuple[str, type[_EchoAuth]], workspace: Path) -> None:
    base, handler = echo_server
    _suite(workspace)
    env = judge_env(JUDGE_API_KEY=KEY)
    run = run_judge(["run", "suite.yaml", "--model", "openai/gpt-4o-mini", "--api-base",
                     f"{base}/v1", "--json"], workspace, env=env)
    assert run.returncode == 4, run.stderr
    payload = json.loads(run.stdout)
    assert payload["run"]["status"] == "failed" and payload["baseline"]["hasRegression"] is False
    reasons = [c["reason"] for c in payload["cases"] if c["judgedBy"] == "llm"]
    assert any("Incorrect API key provided" in r and MASK in r for r in reasons), reasons
    assert handler.calls < 20  # 401 is a configuration error: stopped early
    run_id = payload["run"]["id"]
    outputs = {"run --json": run.stdout, "run stderr": run.stderr}
    for args in (["runs", "show", run_id, "--json"], ["check", run_id, "--json"],
                 ["runs", "export", run_id, "-f", "jsonl"], ["runs", "export", run_id, "-f", "csv"],
                 ["cache", "export", "-"], ["runs", "list", "--json"], ["runs", "show", run_id]):
        proc = run_judge(args, workspace, env=env)
        outputs[" ".join(args)] = proc.stdout + proc.stderr
    for path in workspace.rglob("*"):
        if path.is_file():
            outputs[str(path)] = path.read_bytes().decode("utf-8", "replace")
    leaked = [where for where, text in outputs.items() if KEY in text]
    assert not leaked
    # The reason is kept, masked.
    assert "Incorrect API key" in outputs[f"runs show {run_id} --json"]


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed on exit: nothing listens there


@pytest.mark.parametrize("args", [
    ["--model", "hosted_vllm/fake-judge", "--api-base", f"http://127.0.0.1:{_closed_port()}/v1"],
    ["--model", "no-such-provider-zzz/judge"],
], ids=["connection-refused", "unknown-model"])
def test_a_judge_that_cannot_work_stops_early_with_exit_4(args: list[str],
                                                          workspace: Path) -> None:
    cases = _suite(workspace)
    proc = run_judge(["run", "suite.yaml", *args, "--concurrency", "4", "--json"], workspace)
    assert proc.returncode == 4, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["run"]["status"] == "failed"
    assert payload["run"]["totals"]["calls"] < 20 and payload["run"]["totals"]["calls"] <= 8
    assert len(payload["cases"]) == cases  # every case accounted for, as unscored
    assert payload["baseline"]["skipped"] and not payload["baseline"]["baselineRecorded"]
    assert not (workspace / "baselines" / "task-evaluation-example.json").exists()
    reasons = [c["reason"] for c in payload["cases"] if c["judgedBy"] == "llm"]
    assert sum(r.startswith("provider error: not asked:") for r in reasons) >= 6
    text = run_judge(["run", "suite.yaml", *args, "--concurrency", "4"], workspace)
    assert text.returncode == 4 and "stopped early" in text.stderr
    # A failed run is never the run `check` picks.
    check = run_judge(["check", "--json"], workspace)
    assert check.returncode != 0 and "failed" not in check.stdout.split('"status"')[-1][:20]


def test_breaker_trips_only_on_configuration_failures_with_no_answer() -> None:
    config = ProviderError("AuthenticationError: no", status=401, configuration=True)
    breaker = Breaker(3)
    for _ in range(2):
        breaker.failed(config)
    breaker.check()  # not yet
    breaker.failed(config)
    with pytest.raises(ProviderError, match=r"not asked: .*AuthenticationError"):
        breaker.check()
    flaky = Breaker(2)
    flaky.failed(ProviderError("503", status=503))  # a transient failure: the judge exists
    for _ in range(5):
        flaky.failed(config)
    flaky.check()
    worked = Breaker(2)
    worked.answered()
    for _ in range(5):
        worked.failed(config)
    worked.check()


def test_classify_marks_configuration_errors_and_masks_secrets() -> None:
    class AuthenticationError(Exception):
        status_code = 401

    class InternalServerError(Exception):
        status_code = 500

    class BadRequestError(Exception):
        status_code = 400

    redact = Redactor(secret_values({"JUDGE_API_KEY": KEY}))
    auth = classify(AuthenticationError(f"bad key Bearer {KEY}"), redact)
    assert auth.configuration and KEY not in str(auth) and MASK in str(auth)
    refused = classify(InternalServerError("Cannot connect to host 127.0.0.1:9 "
                                           "[Connect call failed ('127.0.0.1', 9)]"))
    assert refused.configuration and refused.status == 500
    # One line with its fix, not LiteLLM's chain.
    assert str(refused) == ("cannot reach the judge's server at 127.0.0.1:9 (connection "
                            "refused or unknown host); fix: start the server, or check "
                            "--api-base (JUDGE_API_BASE) and --model")
    unknown = classify(BadRequestError("LLM Provider NOT provided. Pass in the provider"))
    assert unknown.configuration
    assert not classify(InternalServerError("upstream overloaded")).configuration
    assert not classify(BadRequestError("context window exceeded")).configuration
