"""The HTTP door's limits, in process (no server process but one).

Each test failed before this work: bodies were parsed before the token check and without a
limit, reads needed no token, any ``Host`` was served, 404s named the store's absolute
path, an unknown evidence group and an ambiguous run id prefix answered 500 in plain text,
``passed: 0`` was read as false, ``OPTIONS`` listed one route's method, FastAPI's 422 was
documented as ``application/json``, and the start-up line printed ``http://::1:PORT``.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import EXAMPLE_SUITE, ROOT, run_judge
from fastapi.testclient import TestClient

from judge.app.workspace.workspace import Workspace
from judge.core.formats.models import RunInfo
from judge.server.app import create_app
from judge.server.problems import PROBLEM_JSON

TOKEN = "door-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SUITE = "task-evaluation-example"
CASE = {"id": "c", "output": "x", "judged_by": "deterministic",
        "checks": [{"type": "contains", "value": "x"}]}


def _root(root: Path, toml: str = "") -> Path:
    (root / "suites").mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLE_SUITE, root / "suites" / "task.yaml")
    (root / "judge.toml").write_text('cache_mode = "offline"\n' + toml, encoding="utf-8")
    return root


def _client(root: Path, *, bind: str | None = None, base: str = "http://127.0.0.1",
            **env: str) -> TestClient:
    workspace = Workspace.open(root, env=env)
    app = create_app(workspace) if bind is None else create_app(workspace, bind=bind)
    return TestClient(app, base_url=base)


def _problem(answer: httpx.Response, status: int) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == PROBLEM_JSON, answer.headers
    body: dict[str, Any] = answer.json()
    assert body["status"] == status and body["type"].startswith("urn:judgeflow:problem:")
    return body


async def _call(app: Any, method: str, path: str, headers: dict[str, str],
                chunks: list[bytes]) -> tuple[int, int]:
    """Send one request straight to the ASGI app; (status, body messages it read)."""
    read = 0
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal read
        read += 1
        if read > len(chunks):
            await asyncio.sleep(3600)  # the client holds the rest: the app must not wait
        return {"type": "http.request", "body": chunks[read - 1],
                "more_body": read < len(chunks)}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
             "query_string": b"", "root_path": "", "server": ("127.0.0.1", 8000),
             "client": ("127.0.0.1", 5000),
             "headers": [(k.lower().encode(), v.encode()) for k, v in
                         {"host": "127.0.0.1:8000", **headers}.items()]}
    await asyncio.wait_for(app(scope, receive, send), 30)
    return sent[0]["status"], read


async def test_a_huge_body_is_refused_before_a_byte_is_read(tmp_path: Path) -> None:
    app = create_app(Workspace.open(_root(tmp_path / "ws", "server_max_body = 2048\n"),
                                    env={"JUDGE_SERVER_TOKEN": TOKEN}))
    huge = {"content-type": "application/json", "content-length": str(100 * 1024 ** 2)}
    # No token: 401 before the body (before: FastAPI read all 100 MB, then answered 401).
    assert await _call(app, "POST", "/api/evaluate", huge, [b"{"]) == (401, 0)
    # With the token, over the limit: 413, unread.
    assert await _call(app, "POST", "/api/evaluate", {**huge, **AUTH}, [b"{"]) == (413, 0)
    # No Content-Length (chunked): read up to the limit, refused as it crosses it.
    chunked = {"content-type": "application/json", **AUTH}
    status, read = await _call(app, "POST", "/api/evaluate", chunked, [b" " * 1500] * 10)
    assert (status, read) == (413, 2)
    # Under the limit it goes through, parsed as before.
    body = json.dumps({"case": CASE}).encode()
    small = {**chunked, "content-length": str(len(body))}
    assert (await _call(app, "POST", "/api/evaluate", small, [body]))[0] == 200


def test_the_limit_answers_a_problem_and_is_a_setting(tmp_path: Path) -> None:
    with _client(_root(tmp_path / "ws", "server_max_body = 2048\n")) as client:
        big = client.post("/api/evaluate", json={"case": {**CASE, "output": "x" * 4000}})
        assert "2048" in _problem(big, 413)["detail"]
        assert client.post("/api/evaluate", json={"case": CASE}).status_code == 200


def test_reads_need_the_token_when_one_is_set(tmp_path: Path) -> None:
    with _client(_root(tmp_path / "ws"), JUDGE_SERVER_TOKEN=TOKEN) as client:
        for path in ("/api/suites", f"/api/suites/{SUITE}/eval/history", "/api/eval/baselines",
                     "/api/runs/x", f"/api/monitor/{SUITE}", "/metrics", "/api/version"):
            answer = client.get(path)
            _problem(answer, 401)
            assert answer.headers["www-authenticate"] == "Bearer", path
            assert client.get(path, headers={"Authorization": "Bearer wrong"}).status_code \
                == 401
            assert client.get(path, headers=AUTH).status_code in {200, 404}, path
        for path in ("/healthz", "/readyz", "/openapi.json"):  # probes and the contract
            assert client.get(path).status_code == 200, path


def test_the_host_must_name_this_server(tmp_path: Path) -> None:
    root = _root(tmp_path / "ws", 'server_hosts = "judge.internal, Other.Example"\n')
    with _client(root) as client:
        for host in ("127.0.0.1:8000", "localhost:8000", "[::1]:8000", "judge.internal",
                     "other.example:80"):
            assert client.get("/api/suites", headers={"Host": host}).status_code == 200, host
        # A page at rebound.example whose name now points at 127.0.0.1 sends its own name.
        for host in ("rebound.example", "rebound.example:8000", "127.0.0.2", "[::2]:80", ""):
            _problem(client.get("/api/suites", headers={"Host": host}), 421)
    with _client(root, bind="0.0.0.0", base="http://192.0.2.7", JUDGE_SERVER_TOKEN=TOKEN) \
            as client:  # a wildcard bind: any address, names only if listed
        assert client.get("/api/suites", headers=AUTH).status_code == 200
        assert client.get("/api/suites", headers={**AUTH, "Host": "judge.internal"}) \
            .status_code == 200
        _problem(client.get("/api/suites", headers={**AUTH, "Host": "localhost"}), 421)


def test_no_answer_shows_where_the_workspace_is(tmp_path: Path) -> None:
    root = _root(tmp_path / "ws")
    with _client(root) as client:
        for path in ("/api/runs/20000101T000000-000000", "/api/runs/nope/cases",
                     "/api/suites/nope/eval/baseline"):
            answer = client.get(path)
            assert answer.status_code == 404, answer.text
            assert str(tmp_path) not in answer.text and "sqlite:" not in answer.text, path


def test_unknown_evidence_group_and_ambiguous_prefix_are_problems(tmp_path: Path) -> None:
    root = _root(tmp_path / "ws")
    with Workspace.open(root, env={}).open_store(create=True) as store:
        for n in (1, 2):
            store.create_run(RunInfo(id=f"20260101T000000-abc{n}", suite=SUITE, rubric="r",
                                     rubric_hash="h", models=("m",), seed=1, temperature=0,
                                     template_id="t", template_hash="h",
                                     created_at="2026-01-01T00:00:00Z"))
    with _client(root) as client:
        bad = client.post("/api/evaluate",
                          json={"case": {**CASE, "evidence": {"nonsense": [{"id": "x"}]}}})
        problem = _problem(bad, 422)
        assert "nonsense" in problem["detail"] and problem["where"].endswith("evidence.nonsense")
        for path in ("/api/runs/20260101T000000-abc", "/api/runs/20260101T000000-abc/cases",
                     "/api/runs/20260101T000000-abc/events"):
            problem = _problem(client.get(path), 422)
            assert problem["type"].endswith("ambiguous-run") and "abc1" in problem["detail"]
        assert client.get("/api/runs/20260101T000000-abc1").status_code == 200


def test_booleans_are_booleans(tmp_path: Path) -> None:
    with _client(_root(tmp_path / "ws")) as client:
        for value in (0, 1, "no", "true"):
            answer = client.post("/api/evaluate",
                                 json={"case": {**CASE, "human": {"passed": value}}})
            assert _problem(answer, 422)["where"] == "body.case.human.passed", value
            harness = client.post(f"/api/suites/{SUITE}/eval/harness", json={"check": 0})
            assert _problem(harness, 422)["where"] == "body.check"
        ok = client.post("/api/evaluate", json={"case": {**CASE, "human": {"passed": False}}})
        assert ok.status_code == 200, ok.text


def test_options_and_405_list_every_method_of_the_path(tmp_path: Path) -> None:
    with _client(_root(tmp_path / "ws")) as client:
        baseline = f"/api/suites/{SUITE}/eval/baseline"
        options = client.options(baseline)
        assert options.status_code == 204
        assert options.headers["allow"] == "GET, HEAD, OPTIONS, POST"
        put = client.put(baseline)
        _problem(put, 405)
        assert put.headers["allow"] == "GET, HEAD, OPTIONS, POST"
        run = client.options("/api/runs/x")
        assert run.headers["allow"] == "DELETE, GET, HEAD, OPTIONS"


def test_every_error_is_documented_as_a_problem() -> None:
    spec = json.loads((ROOT / "docs" / "openapi.json").read_text(encoding="utf-8"))
    assert "HTTPValidationError" not in spec["components"]["schemas"]
    problem = {"$ref": "#/components/schemas/Problem"}
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            where = f"{method.upper()} {path}"
            assert "400" not in responses, where
            assert "421" in responses, where
            if operation.get("parameters") or "requestBody" in operation:
                assert "422" in responses, where
            if "requestBody" in operation:
                assert "413" in responses, where
            if path not in {"/healthz", "/readyz"}:
                assert operation.get("security") and "401" in responses, where
            for code, answer in responses.items():
                if int(code) >= 400:
                    assert answer["content"] == {PROBLEM_JSON: {"schema": problem}}, \
                        (where, code)


def test_the_start_up_line_brackets_an_ipv6_address(tmp_path: Path) -> None:
    (tmp_path / "judge.toml").write_text('concurrency = "many"\n', encoding="utf-8")
    done = run_judge(["workspace", "serve", "--host", "::1", "--port", "0"], tmp_path)
    assert done.returncode == 2, done.stderr
    assert "judge workspace serve: http://[::1]:" in done.stderr, done.stderr


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_a_served_url_is_one_a_client_can_use(host: str) -> None:
    from judge.server.serving import url_of

    url = url_of(host, 8123)
    assert httpx.URL(url).host == host and httpx.URL(url).port == 8123
