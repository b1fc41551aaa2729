"""Who may call what: the review page's token labels its run and nothing else, the API docs
page is not served, and the token check has one home.

``judge review`` used to hand the page a full API token, and ``/docs`` (same origin, no CSP,
Swagger's scripts from a CDN) could ask the page's tabs for it. ``server/door.py`` and
``server/security.py`` each checked the token, with two definitions of a write.
"""

from __future__ import annotations

import ast
import re
import shutil
import time
from pathlib import Path

import httpx
import pytest
from conftest import ROOT, judge_env
from fastapi.testclient import TestClient
from forked import spawn_judge
from report_runs import example_runs

from judge.app.workspace.workspace import Workspace
from judge.server.app import create_app
from judge.server.security import PUBLIC_PATHS, WRITES, ReviewGrant

FULL = "full-token-0123456789"
REVIEW = "review-token-0123456789"
LABEL = {"reviewer": "bo", "labels": [{"case": "fix-login-redirect",
                                       "category": "agentPerformance", "score": 70}]}


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A workspace of its own holding a run of the example suite (labels are written)."""
    source, _, run_id = example_runs()
    root = tmp_path_factory.mktemp("tokens") / "ws"
    shutil.copytree(source, root)
    return root, run_id


def _client(root: Path, run_id: str) -> TestClient:
    app = create_app(Workspace.open(root, env={}), token=FULL,
                     review=ReviewGrant(run_id, REVIEW))
    return TestClient(app, base_url="http://127.0.0.1")


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_review_token_reads_and_labels_its_run_and_nothing_else(
        judged: tuple[Path, str]) -> None:
    """Every operation the schema documents, with every path parameter the run's id: the
    review token gets 403 on all but its run's review data and labels; the full token and
    no token are answered as before."""
    root, run_id = judged
    with _client(root, run_id) as client:
        assert client.get(f"/api/review/{run_id}", headers=_bearer(REVIEW)).status_code == 200
        saved = client.post(f"/api/review/{run_id}/labels", json=LABEL,
                            headers=_bearer(REVIEW))
        assert saved.status_code == 200, saved.text
        allowed = {("get", f"/api/review/{run_id}"), ("post", f"/api/review/{run_id}/labels")}
        tried = set()
        for template, ops in client.app.openapi()["paths"].items():  # type: ignore[attr-defined]
            path = re.sub(r"\{[^}]+\}", run_id, template)
            for method in ops:
                if (method, path) in allowed or path in PUBLIC_PATHS:
                    continue
                answer = client.request(method.upper(), path, headers=_bearer(REVIEW),
                                        json={})
                assert answer.status_code == 403, (method, path, answer.text)
                assert "only reads and labels its run" in answer.json()["title"]
                tried.add(path)
        assert {"/api/suites", "/api/evaluate", "/metrics", f"/api/review/{run_id}/export",
                f"/api/runs/{run_id}/cases", "/api/eval/baselines"} <= tried
        for method, path in (("GET", f"/api/review/{run_id[:12]}"),  # a prefix: another path
                             ("POST", "/api/review/20260101T000000-aaaaaa/labels")):
            assert client.request(method, path, headers=_bearer(REVIEW),
                                  json=LABEL).status_code == 403
        assert client.get("/api/suites", headers=_bearer(FULL)).status_code == 200
        assert client.get("/api/suites").status_code == 401
        assert client.get(f"/api/review/{run_id}").status_code == 401


def test_judge_review_prints_a_review_token_never_the_servers(
        judged: tuple[Path, str]) -> None:
    """``judge review RUN``'s address carries a fresh review token, not JUDGE_SERVER_TOKEN:
    it labels the run and gets 403 elsewhere; the server's own token still works."""
    root, run_id = judged
    proc = spawn_judge(["review", run_id, "--port", "0"], root,
                       judge_env(PYTHONPATH=str(ROOT), JUDGE_SERVER_TOKEN=FULL), server=True)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith("review page: http://127.0.0.1:") and FULL not in line, line
        page, token = line.split(": ", 1)[1].strip().split("#token=")
        base = page.split("/review/")[0]
        deadline = time.monotonic() + 60
        while not _up(base):
            assert time.monotonic() < deadline, "judge review did not serve"
            time.sleep(0.1)
        for method, path, given, status in (
                ("POST", f"/api/review/{run_id}/labels", token, 200),
                ("GET", f"/api/review/{run_id}", token, 200),
                ("POST", f"/api/review/{run_id}/export", token, 403),
                ("GET", "/api/suites", token, 403),
                ("GET", "/api/suites", FULL, 200)):
            answer = httpx.request(method, base + path, json=LABEL, headers=_bearer(given),
                                   timeout=30)
            assert answer.status_code == status, (method, path, answer.text)
    finally:
        proc.terminate()
        proc.wait(30)
        if proc.stderr is not None:
            proc.stderr.close()


def _up(base: str) -> bool:
    try:
        return httpx.get(base + "/readyz", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def test_no_api_docs_page_is_served(judged: tuple[Path, str]) -> None:
    """``/docs`` and ``/redoc`` (Swagger's and ReDoc's scripts from a CDN, no CSP, on the
    review page's origin) are not served, whatever the token; the schema is."""
    root, run_id = judged
    with _client(root, run_id) as client:
        for path in ("/docs", "/docs/oauth2-redirect", "/redoc"):
            assert client.get(path, headers=_bearer(FULL)).status_code == 404, path
        assert client.get("/openapi.json").status_code == 200
        page = client.get(f"/review/{run_id}")
        assert page.status_code == 200
        assert "script-src 'sha256-" in page.headers["Content-Security-Policy"]


def test_the_token_check_and_what_a_write_is_have_one_home() -> None:
    """``Access.refusal`` and ``WRITES`` in ``server/security.py`` are the check and the
    definition of a write; a token compared, or a write method named, anywhere else under
    ``judge/server`` is a second one (the guard once counted OPTIONS as a write, the door
    did not)."""
    second = []
    for path in sorted((ROOT / "judge" / "server").rglob("*.py")):
        if path.name == "security.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            where = f"{path.name}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Constant) and node.value in WRITES:
                second.append(f"{where}: the method {node.value!r}")
            name = node.attr if isinstance(node, ast.Attribute) else \
                node.id if isinstance(node, ast.Name) else ""
            if name in ("compare_digest", "HTTPBearer"):
                second.append(f"{where}: {name}")
    assert second == []
