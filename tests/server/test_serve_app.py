"""The HTTP door in process: its schema is the checked-in contract, writes are guarded, keys
never leave, and `judge workspace serve` explains what it needs (no server process here)."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from conftest import EXAMPLE_SUITE, ROOT, run_judge
from fastapi.testclient import TestClient

from judge.app.workspace.workspace import Workspace
from judge.core.text.secrets import MASK
from judge.server.app import create_app, open_app
from judge.server.openapi import openapi_text
from judge.server.readiness import Gate

SECRET = "sk-in-process-secret-0123456789"


def test_openapi_json_is_the_apps_schema() -> None:
    checked_in = (ROOT / "docs" / "openapi.json").read_text(encoding="utf-8")
    assert openapi_text() == checked_in, (
        "docs/openapi.json differs from the app: regenerate it with "
        "`python -m judge.server.openapi` and review the diff")


def _app(root: Path, **env: str) -> TestClient:
    (root / "suites").mkdir(parents=True, exist_ok=True)
    shutil.copy(EXAMPLE_SUITE, root / "suites" / "task.yaml")
    return TestClient(create_app(Workspace.open(root, env=env)), base_url="http://127.0.0.1")


async def test_the_gate_answers_health_at_once_and_holds_the_rest_until_ready(
        tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "suites").mkdir(parents=True)
    shutil.copy(EXAMPLE_SUITE, root / "suites" / "task.yaml")
    gate = Gate()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=gate),
                                 base_url="http://127.0.0.1") as client:
        health = await client.get("/healthz")
        assert health.status_code == 200 and health.json() == {"status": "ok", "ready": False}
        starting = await client.get("/readyz")
        assert starting.status_code == 503 and starting.headers["retry-after"] == "1"
        assert starting.headers["content-type"] == "application/problem+json"
        waiting = asyncio.ensure_future(client.get("/api/suites"))
        await asyncio.sleep(0.05)
        assert not waiting.done()  # held: no request sees a half-opened workspace
        gate.open(open_app(root, {}))
        suites = await asyncio.wait_for(waiting, 30)
        assert suites.status_code == 200
        assert [s["id"] for s in suites.json()] == ["task-evaluation-example"]
        assert (await client.get("/healthz")).json() == {"status": "ok", "ready": True}
        assert (await client.get("/readyz")).status_code == 200
    assert (root / ".judge").is_dir()  # the store was opened before the gate let requests in

    failed = Gate()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=failed),
                                 base_url="http://127.0.0.1") as client:
        waiting = asyncio.ensure_future(client.get("/api/suites"))
        await asyncio.sleep(0.05)
        failed.fail("judge.toml: concurrency: not an integer")
        answer = await asyncio.wait_for(waiting, 30)
        assert answer.status_code == 503 and "concurrency" in answer.json()["detail"]
        assert (await client.get("/healthz")).status_code == 503


def test_what_listens_first_imports_nothing_heavy() -> None:
    # The start-up to /healthz: the command and the serving module, without FastAPI, the
    # workspace (SQLAlchemy, Jinja) or litellm; those come after the socket listens.
    probe = ("import sys, judge.cli.workspace_serve, judge.server.serving\n"
             "heavy = ('fastapi', 'sqlalchemy', 'jinja2', 'litellm',\n"
             "         'judge.app.workspace.workspace')\n"
             "print(sorted(m for m in heavy if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60, check=True)
    assert done.stdout.strip() == "[]", done.stdout + done.stderr


def test_serve_with_a_bad_judge_toml_listens_then_exits_2_naming_file_and_place(
        tmp_path: Path) -> None:
    (tmp_path / "judge.toml").write_text('concurrency = "many"\n', encoding="utf-8")
    done = run_judge(["workspace", "serve", "--port", "0"], tmp_path)
    assert done.returncode == 2, done.stderr
    assert "judge workspace serve: http://127.0.0.1:" in done.stderr  # it listened before it knew
    assert "judge.toml: concurrency:" in done.stderr and "fix:" in done.stderr


def test_writes_need_the_token_and_web_pages_cannot_write(tmp_path: Path) -> None:
    with _app(tmp_path / "a", JUDGE_SERVER_TOKEN="tok-0123456789") as client:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "tok"}):
            answer = client.post("/api/suites/task-evaluation-example/eval/baseline",
                                 headers=headers)
            assert answer.status_code == 401, headers
            assert answer.headers["www-authenticate"] == "Bearer"
            assert answer.headers["content-type"] == "application/problem+json"
        ok = client.post("/api/suites/task-evaluation-example/eval/baseline",
                         headers={"Authorization": "Bearer tok-0123456789"})
        assert ok.status_code == 422 and "no complete run" in ok.json()["detail"]
    with _app(tmp_path / "b") as client:  # no token: local programs write, web pages do not
        page = client.delete("/api/runs/x", headers={"Origin": "https://evil.example"})
        assert page.status_code == 403
        assert client.delete("/api/runs/x").status_code == 404


def test_a_key_echoed_in_an_error_is_masked(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    with _app(root, OPENAI_API_KEY=SECRET) as client:
        # A rubric id the lookup echoes back in its error; the key's value is masked.
        answer = client.post("/api/evaluate", json={"case": {"id": "c", "output": "x"},
                                                     "rubric": SECRET})
        assert answer.status_code == 422
        assert SECRET not in answer.text and MASK in answer.text


def test_suite_ids_are_looked_up_never_joined(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    outside = tmp_path / "outside.yaml"
    shutil.copy(EXAMPLE_SUITE, outside)
    (root / "suites").mkdir(parents=True)
    (root / "suites" / "link.yaml").symlink_to(outside)
    with _app(root) as client:
        ids = [s["path"] for s in client.get("/api/suites").json()]
        assert ids == ["suites/task.yaml"]  # the symlink out of the workspace is not a suite


def test_serve_without_the_extra_names_the_install(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path) -> None:
    from judge.cli import main

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JUDGE_SERVER_TOKEN", raising=False)
    import judge

    if "judge.server" in sys.modules:  # undone with the modules: later tests see the real one
        monkeypatch.setattr(judge, "server", sys.modules["judge.server"], raising=False)
    for name in [m for m in sys.modules if m.startswith("judge.server")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "fastapi", None)
    with pytest.raises(SystemExit) as stopped:
        main(["workspace", "serve", "--port", "0"])
    assert stopped.value.code == 2
    assert "pip install 'judgeflow[server]'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:
        main(["workspace", "serve", "--host", "0.0.0.0"])
    assert refused.value.code == 2
    assert "JUDGE_SERVER_TOKEN" in capsys.readouterr().err
