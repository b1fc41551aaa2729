"""The statistical gate end to end with a loopback judge of known noise.

A baseline from one seed, a probe that measures the judge's noise, a run under another seed:
`judge check`, `judge run --offline` (a replay of that run), the Python API and the HTTP API
give the same verdict, interval and listed cases; `judge diff` marks the movements.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest
from conftest import EXAMPLE_SUITE, judge_env, load_fake_server, run_judge
from fastapi.testclient import TestClient

from judge.app.runs.baselines import check_run
from judge.app.workspace.workspace import Workspace
from judge.server.app import create_app

NOISY = "hosted_vllm/fake-judge~8"


def _json(proc: Any) -> Any:
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def noisy(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    ws = tmp_path_factory.mktemp("noise") / "ws"
    (ws / "suites").mkdir(parents=True)
    shutil.copy(EXAMPLE_SUITE, ws / "suites" / "suite.yaml")
    server = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    try:
        base = ["--model", NOISY, "--api-base", server.base_url + "/v1"]
        first = run_judge(["run", "suites/suite.yaml", *base, "--seed", "1", "--json"], ws)
        assert first.returncode == 0, first.stderr
        assert _json(first)["baseline"]["baselineRecorded"] is True
        probe = run_judge(["judges", "noise", "--probe", "suites/suite.yaml", *base, "--seed", "1",
                           "--json"], ws)
        assert probe.returncode == 0, probe.stderr
        model = _json(probe)
        second = run_judge(["run", "suites/suite.yaml", *base, "--seed", "2", "--json",
                            "--no-check"], ws)
        assert second.returncode == 0, second.stderr
        other = run_judge(["run", "suites/suite.yaml", *base, "--seed", "3", "--json",
                           "--no-check"], ws)
        assert other.returncode == 0, other.stderr
    finally:
        server.stop()
    return {"ws": ws, "run": _json(second)["run"]["id"], "other": _json(other)["run"]["id"],
            "first": _json(first)["run"]["id"], "model": model}


def _decided(body: dict[str, Any]) -> tuple[Any, ...]:
    test = body["test"]
    return (body["hasRegression"], sorted(body["regressedCases"]), test["rule"],
            round(test["meanDrop"], 9), json.dumps(test["interval"], sort_keys=True),
            test["noiseBefore"]["source"] if test["noiseBefore"] else None)


def _plugin_gate(ws: Path, env: dict[str, str], pytester: pytest.Pytester,
                 monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The pytest plugin's gate item, replaying the seed-2 run offline (its junit properties).

    An inner pytest session in this process (``pytester``, as the plugin's own tests run it),
    in the workspace and with exactly ``env`` (pytest-asyncio's loop scope set, as this
    project's own settings do, so it warns of none).
    """
    (ws / "test_suite.py").write_text('from judge.pytest_plugin import judge_suite\n\n'
                                      'test_task = judge_suite("suites/suite.yaml")\n')
    (ws / "judge.toml").write_text(f'model = ["{NOISY}"]\nseed = 2\n')
    monkeypatch.chdir(ws)
    for name in set(os.environ) - set(env):
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    try:
        run = pytester.runpytest_inprocess(
            "-p", "judge.pytest_plugin", "--judge-mode", "offline", "-q", "-p",
            "no:cacheprovider", "-o", "asyncio_default_fixture_loop_scope=function",
            "--junitxml", "gate.xml", "test_suite.py", "-k", "baseline")
    finally:
        (ws / "judge.toml").unlink()
        (ws / "test_suite.py").unlink()
    output = "\n".join(run.outlines + run.errlines)
    assert (ws / "gate.xml").is_file(), output
    tree = ElementTree.parse(ws / "gate.xml")
    props = {p.get("name"): p.get("value") for p in tree.iter("property")}
    assert "judge.gate.test" in props, output
    return {"hasRegression": props["judge.gate.hasRegression"] == "true",
            "regressedCases": [c for c in (props["judge.gate.regressedCases"] or "").split(",")
                               if c],
            "test": json.loads(props["judge.gate.test"] or "null")}


def test_probe_stores_a_noise_model_with_its_uncertainty(noisy: dict[str, Any]) -> None:
    model = noisy["model"]
    assert model["cases"] == 10 and model["asks"] == 30 and model["overall"]["df"] == 20
    overall = model["overall"]
    assert 0 < overall["low"] < overall["sd"] < overall["high"]
    assert Path(model["path"]).is_file()
    # Each AI score's spread is the server's 8 points (less where a score clamps at a
    # bound), within the probe's uncertainty.
    spreads = model["ai"].values()
    assert spreads and all(a["low"] < 8 * 1.15 and a["high"] > 8 * 0.6 for a in spreads)


def test_every_door_gives_the_same_statistical_verdict(
        noisy: dict[str, Any], pytester: pytest.Pytester,
        monkeypatch: pytest.MonkeyPatch) -> None:
    ws, run_id = noisy["ws"], noisy["run"]
    env = judge_env()
    check = run_judge(["check", run_id, "--json"], ws, env=env)
    replay = run_judge(["run", "suites/suite.yaml", "--model", NOISY, "--seed", "2",
                        "--offline", "--json"], ws, env=env)
    api = check_run(Workspace.open(ws, env=env), run_id)
    with TestClient(create_app(Workspace.open(ws, env=env)), base_url="http://127.0.0.1") as client:
        answer = client.post("/api/suites/task-evaluation-example/eval/harness?wait=true",
                             json={"models": [NOISY], "seed": 2, "cacheMode": "offline"})
        assert answer.status_code == 200, answer.text
        http = answer.json()["regression"]
    doors = [_decided(_json(check)), _decided(_json(replay)["baseline"]),
             _decided(api.model_dump(mode="json")), _decided(http),
             _decided(_plugin_gate(ws, env, pytester, monkeypatch))]
    assert len(set(map(repr, doors))) == 1, doors
    body = _json(check)
    assert body["test"]["rule"] == "statistical"
    assert "t test" in body["test"]["test"]
    assert check.returncode == (1 if body["hasRegression"] else 0)


def test_the_same_judge_under_another_seed_is_not_a_regression(noisy: dict[str, Any]) -> None:
    for run_id in (noisy["run"], noisy["other"]):
        body = _json(run_judge(["check", run_id, "--json"], noisy["ws"]))
        assert body["hasRegression"] is False, body["blockedReasons"]
        assert body["regressedCases"] == []


def test_pure_replay_is_exact(noisy: dict[str, Any]) -> None:
    replay = run_judge(["run", "suites/suite.yaml", "--model", NOISY, "--seed", "1",
                        "--offline", "--json"], noisy["ws"])
    body = _json(replay)["baseline"]
    assert body["test"]["rule"] == "exact-replay" and body["hasRegression"] is False


def test_diff_marks_movements_and_counts_them(noisy: dict[str, Any]) -> None:
    proc = run_judge(["diff", noisy["first"], noisy["run"], "--json"], noisy["ws"])
    body = _json(proc)
    moved = [c for c in body["cases"] if c["movement"] and c["movement"]["delta"]]
    assert moved, "the other seed moves some scores"
    assert body["beyondNoise"] + body["withinNoise"] == len(
        [c for c in body["cases"] if c["movement"] and c["movement"]["delta"]]) or \
        body["beyondNoise"] + body["withinNoise"] >= len(moved)
    assert body["beyondNoise"] == 0, [c["id"] for c in moved
                                      if c["movement"]["noise"] == "beyond"]
    assert all(c["movement"]["explained"] > 0 for c in moved)
    text = run_judge(["diff", noisy["first"], noisy["run"]], noisy["ws"])
    assert "within it" in text.stdout and "beyond the judge's noise" in text.stdout


def test_a_baseline_without_noise_data_compares_as_before_with_a_notice(
        noisy: dict[str, Any]) -> None:
    ws = noisy["ws"]
    path = ws / "baselines" / "task-evaluation-example.json"
    data = json.loads(path.read_text())
    saved = path.read_text()
    try:
        data.pop("judgments", None)
        data.pop("noise", None)
        data.pop("digest", None)  # a file from before judgments, noise and seals
        path.write_text(json.dumps(data))
        body = _json(run_judge(["check", noisy["run"], "--json"], ws))
        assert any("records no judgments" in n for n in body["notices"])
        assert body["test"] is None
    finally:
        path.write_text(saved)


def test_report_states_the_test_and_marks_within_noise(noisy: dict[str, Any]) -> None:
    ws = noisy["ws"]
    proc = run_judge(["report", noisy["run"], "--baseline", "-o", "r.html"], ws)
    assert proc.returncode == 0, proc.stderr
    page = (ws / "r.html").read_text(encoding="utf-8")
    assert "paired one-sided t test" in page and "95 % interval" in page
    assert "within noise" in page and "probe run" in page


def test_rescore_says_it_is_exact(noisy: dict[str, Any]) -> None:
    ws = noisy["ws"]
    proc = run_judge(["rescore", noisy["first"], "--rubric", "task-evaluation", "--json"], ws)
    assert proc.returncode == 0, proc.stderr
    body = _json(proc)
    assert body["exact"] is True and body["modelCalls"] == 0 and "no judge noise" in body["noise"]
    diff = _json(run_judge(["diff", noisy["first"], body["run"]["id"], "--json"], ws))
    assert diff["beyondNoise"] == diff["withinNoise"] == diff["unknownNoise"] == 0
