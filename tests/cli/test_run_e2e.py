"""The main job end to end: `judge run` on the example suite through LiteLLM against a
loopback OpenAI-compatible server, then offline replay with the server gone."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE_SUITE, judge_env, load_fake_server, run_judge
from forked import spawn_judge

MODEL = "hosted_vllm/fake-judge"


def _suite(workspace: Path) -> Path:
    target = workspace / "suite.yaml"
    shutil.copy(EXAMPLE_SUITE, target)
    return target


def _run(workspace: Path, base_url: str | None, *extra: str) -> tuple[int, dict[str, Any], str]:
    args = ["run", "suite.yaml", "--model", MODEL, "--json", *extra]
    if base_url:
        args += ["--api-base", f"{base_url}/v1"]
    proc = run_judge(args, workspace)
    payload = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, payload, proc.stderr


def _scores(payload: dict[str, Any], *, drop: tuple[str, ...] = ("cached",)) -> list[Any]:
    """Everything about the cases except whether this run paid for the call (and ``drop``)."""
    out = []
    for case in payload["cases"]:
        case = json.loads(json.dumps(case))
        for name in drop if case.get("judge") else ():
            case["judge"].pop(name)
        out.append(case)
    return out


def test_run_then_offline_replay_is_identical(fake_server: Any, workspace: Path) -> None:
    _suite(workspace)
    code, cold, err = _run(workspace, fake_server.base_url)
    assert code == 0, err
    cases = cold["cases"]
    assert len(cases) == cold["summary"]["cases"] >= 12
    llm = [c for c in cases if c["judgedBy"] == "llm"]
    assert llm and all(c["status"] == "scored" for c in cases), [c["reason"] for c in cases]
    assert all(c["judge"]["cached"] is False for c in llm)
    assert all(c["judge"]["temperature"] == 0 and c["judge"]["seed"] == 42 for c in llm)
    assert all(c["judge"]["outputMode"] == "json_object" for c in llm)
    assert cold["run"]["totals"]["calls"] == len(llm)
    requests_cold = fake_server.stats()["requests"]
    assert requests_cold == len(llm)
    for case in llm:
        for cat in case["categoryScores"]:
            assert set(cat) >= {"category", "deterministicScore", "aiScore", "finalScore",
                                "weight", "band", "rationale", "evidence"}
    assert cold["baseline"]["baselineRecorded"] is True
    assert (workspace / "baselines" / f"{cold['run']['suite']}.json").is_file()

    code, warm, err = _run(workspace, fake_server.base_url)
    assert code == 0, err
    assert fake_server.stats()["requests"] == requests_cold  # all from the cache
    assert warm["run"]["totals"]["cacheHits"] == len(llm)
    assert warm["baseline"]["hasRegression"] is False

    fake_server.stop()
    code, offline, err = _run(workspace, None, "--offline")
    assert code == 0, err
    # A warm run and an offline replay print byte-identical cases and summary.
    assert json.dumps(offline["cases"], sort_keys=True) == json.dumps(warm["cases"], sort_keys=True)
    assert offline["summary"] == warm["summary"]
    # And the cold run differs only in who paid for the call.
    assert _scores(offline) == _scores(cold)


def test_offline_with_empty_cache_lists_every_miss(workspace: Path) -> None:
    _suite(workspace)
    code, payload, err = _run(workspace, None, "--offline")
    assert code == 3, err
    misses = [c["id"] for c in payload["cases"] if c["status"] == "cache_miss"]
    llm_ids = [c["id"] for c in payload["cases"] if c["judgedBy"] == "llm"]
    assert misses == llm_ids and misses
    for case_id in misses:
        assert case_id in err
    assert "litellm" not in err.lower()


def test_offline_never_imports_litellm_or_opens_sockets(workspace: Path) -> None:
    _suite(workspace)
    probe = (
        "import socket, sys\n"
        "def deny(*a, **k):\n"
        "    raise AssertionError('socket opened')\n"
        "socket.socket.connect = deny\n"
        "socket.create_connection = deny\n"
        "from judge.cli import main\n"
        "try:\n"
        "    main(['run', 'suite.yaml', '--model', 'hosted_vllm/x', '--offline', '--json'])\n"
        "except SystemExit as exc:\n"
        "    assert 'litellm' not in sys.modules, 'litellm imported'\n"
        "    print('EXIT', exc.code, file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], cwd=workspace, text=True,
                          capture_output=True, env=judge_env(), timeout=120, check=False)
    assert "EXIT 3" in proc.stderr, proc.stderr


def test_check_exits_1_on_seeded_regression(fake_server: Any, workspace: Path) -> None:
    suite_file = _suite(workspace)
    code, _first, err = _run(workspace, fake_server.base_url)
    assert code == 0, err
    proc = run_judge(["check", "--json"], workspace)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["hasRegression"] is False

    data = yaml.safe_load(suite_file.read_text())
    victim = next(c for c in data["cases"] if c.get("judged_by", "llm") == "llm"
                  and min(c["deterministic"].values()) >= 40)
    victim["deterministic"] = {k: v - 40 for k, v in victim["deterministic"].items()}
    suite_file.write_text(yaml.safe_dump(data, sort_keys=False))
    code, _second, err = _run(workspace, fake_server.base_url, "--no-check")
    assert code == 0, err
    proc = run_judge(["check", "--json"], workspace)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["hasRegression"] is True
    assert any(victim["id"] in reason for reason in verdict["blockedReasons"])
    human = run_judge(["check"], workspace)
    assert human.returncode == 1 and victim["id"] in human.stdout and "regression" in human.stdout


def test_bad_suite_fails_before_any_call_and_writes_nothing(fake_server: Any,
                                                            workspace: Path) -> None:
    suite_file = _suite(workspace)
    data = yaml.safe_load(suite_file.read_text())
    data["cases"][3]["deterministic"]["agentPerformance"] = 101
    suite_file.write_text(yaml.safe_dump(data, sort_keys=False))
    code, payload, err = _run(workspace, fake_server.base_url)
    assert code == 2
    assert payload == {}
    assert "suite.yaml" in err and data["cases"][3]["id"] in err and "agentPerformance" in err
    assert fake_server.stats()["requests"] == 0
    assert not (workspace / ".judge").exists()
    assert not (workspace / "baselines").exists()


@pytest.fixture(scope="module")
def straight_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The example suite judged once, uninterrupted, in a clean workspace (read-only)."""
    clean = tmp_path_factory.mktemp("clean")
    _suite(clean)
    with_server = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    try:
        code, straight, err = _run(clean, with_server.base_url)
    finally:
        with_server.stop()
    assert code == 0, err
    return straight


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_interrupted_run_resumes_from_cache(workspace: Path, sig: signal.Signals,
                                            straight_run: dict[str, Any]) -> None:
    _suite(workspace)
    server = load_fake_server().start_in_thread(latency_ms=300, seed=7)
    try:
        args = ["run", "suite.yaml", "--model", MODEL, "--api-base", f"{server.base_url}/v1",
                "--concurrency", "2", "--json"]
        proc = spawn_judge(args, workspace, judge_env())
        deadline = time.monotonic() + 60
        while server.stats()["requests"] < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        seen = server.stats()["requests"]
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=60)
        assert proc.returncode != 0, f"{seen} requests when signalled; stderr: {err[-2000:]}"
        if sig != signal.SIGKILL:
            assert proc.returncode == (130 if sig == signal.SIGINT else 143), err
            assert "interrupted" in err
        first = server.stats()["requests"]
        assert 4 <= first < 14
        server.set_options(latency_ms=0)  # the slow judge was for catching it mid-run
        # The next command that opens the store: no run is left "running"; a killed one is
        # abandoned, a signalled one interrupted, and what it judged is stored either way.
        history = json.loads(run_judge(["runs", "list", "--json"], workspace).stdout)
        assert [r["status"] for r in history] == \
            ["abandoned" if sig == signal.SIGKILL else "interrupted"]
        if sig != signal.SIGKILL:
            assert history[0]["totals"]["cases"] >= 1

        code, resumed, err = _run(workspace, server.base_url)
        assert code == 0, err
        llm = [c for c in resumed["cases"] if c["judgedBy"] == "llm"]
        fresh = [c for c in llm if not c["judge"]["cached"]]
        # Only what was missing is judged again; what the killed run finished is a hit.
        assert server.stats()["requests"] - first == len(fresh)
        assert len(fresh) < len(llm)
    finally:
        server.stop()

    # The same results as an uninterrupted run in a clean workspace.
    # Latency is measured per call, so two cold runs differ there and only there.
    drop = ("cached", "latencyMs")
    assert _scores(resumed, drop=drop) == _scores(straight_run, drop=drop)


def test_unreachable_judge_exits_4_and_records_no_baseline(workspace: Path) -> None:
    _suite(workspace)
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = run_judge(["run", "suite.yaml", "--model", MODEL, "--api-base",
                      f"http://127.0.0.1:{port}/v1", "--json"], workspace,
                     env=judge_env(JUDGE_MAX_ATTEMPTS="1"))
    assert proc.returncode == 4, proc.stderr
    payload = json.loads(proc.stdout)
    llm = [c for c in payload["cases"] if c["judgedBy"] == "llm"]
    assert llm and all(c["status"] == "unscored" and "provider error" in c["reason"]
                       for c in llm)
    assert payload["baseline"]["baselineRecorded"] is False
    assert not (workspace / "baselines").exists()
    assert "no judgment succeeded" in proc.stderr
    # One clear line and its fix, not LiteLLM's raw chain.
    assert f"cannot reach the judge's server at 127.0.0.1:{port}" in proc.stderr
    assert "\n  fix: start the server, or check --api-base" in proc.stderr
    assert "SSLContext" not in proc.stderr and "litellm." not in proc.stderr
