"""Schemathesis, every check it has, against the live app's OpenAPI.

A real uvicorn server on loopback (port 0) serves a workspace in offline mode (no judge is
called: a judgment is a ``cache_miss``, a run fails with the missing cases named), with a
token, so schemathesis also sends requests without it and expects 401. Bounded: a few
examples per operation (``JUDGE_TEST_SCHEMATHESIS_EXAMPLES``, default 2), and a ceiling on
the whole run (``JUDGE_TEST_SCHEMATHESIS_SECONDS``, default 300). schemathesis spends that
budget (its later phases go on generating until it ends: 280 s of 280 on CI, 484 of 480
beside other work here), so the test asks what the budget bought: every operation in the
live schema tested, none skipped.
Before this work it found undocumented 400s, 422 answered as problem+json but documented as
``application/json``, 500s in plain text, and a wrong ``Allow``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn
from conftest import EXAMPLE_SUITE

from judge.app.workspace.workspace import Workspace
from judge.server.app import create_app

pytestmark = pytest.mark.schemathesis

TOKEN = "schemathesis-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
EXAMPLES = int(os.environ.get("JUDGE_TEST_SCHEMATHESIS_EXAMPLES", "2"))
MAX_SECONDS = int(os.environ.get("JUDGE_TEST_SCHEMATHESIS_SECONDS", "300"))


@pytest.fixture(scope="module")
def live_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("schemathesis") / "ws"
    (root / "suites").mkdir(parents=True)
    shutil.copy(EXAMPLE_SUITE, root / "suites" / "task.yaml")
    (root / "judge.toml").write_text('model = "hosted_vllm/none"\ncache_mode = "offline"\n',
                                     encoding="utf-8")
    app = create_app(Workspace.open(root, env={"JUDGE_SERVER_TOKEN": TOKEN}),
                     bind="127.0.0.1")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False,
                                           lifespan="on", http="h11", ws="none"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started, "uvicorn did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


# What the schema cannot say: the workspace defines its rubric ids, their categories and
# their evidence groups, so a schema-valid body may name one the workspace lacks; that is a
# 422 ``bad-input`` problem naming the place and the fix (tests/server/test_door.py), and
# positive_data_acceptance must accept it. Every other check runs as shipped.
CONFIG = """\
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "422", "429", "5xx"]
"""


def test_the_live_api_holds_to_its_schema(live_url: str, tmp_path: Path) -> None:
    (tmp_path / "schemathesis.toml").write_text(CONFIG, encoding="utf-8")
    command = [str(Path(sys.executable).parent / "schemathesis"),
               "--config-file", str(tmp_path / "schemathesis.toml"), "run",
               f"{live_url}/openapi.json", "--checks", "all", "--max-examples", str(EXAMPLES),
               "--seed", "30", "--generation-deterministic", "--workers", "1",
               "--header", f"Authorization: Bearer {TOKEN}", "--request-timeout", "30",
               "--max-time", str(MAX_SECONDS), "--report", "ndjson", "--report-dir",
               str(tmp_path), "--output-truncate", "true", "--no-color"]
    done = subprocess.run(command, capture_output=True, text=True, check=False,
                          timeout=MAX_SECONDS + 120, cwd=tmp_path,
                          env={**os.environ, "SCHEMATHESIS_HOOKS": ""})
    lines = [line[:300] for line in done.stdout.splitlines() if not line.startswith("    curl")]
    assert done.returncode == 0, "\n".join(lines)[-12000:] + done.stderr[-2000:]
    operations = _operation_count(live_url)
    assert re.search(rf"Tested:\s+{operations}\b", done.stdout) and "Skipped:" not in done.stdout, \
        f"the schema has {operations} operations\n" + done.stdout[-3000:]


def _operation_count(url: str) -> int:
    """How many operations the live schema documents (the count schemathesis must test)."""
    schema = json.loads(urllib.request.urlopen(f"{url}/openapi.json", timeout=30).read())
    methods = {"get", "put", "post", "delete", "patch", "head", "options", "trace"}
    return sum(1 for item in schema["paths"].values() for method in item if method in methods)
