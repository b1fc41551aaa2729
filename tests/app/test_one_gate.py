"""One gate for every door: ``judge run``, ``judge check`` and the Python API give the same
verdict, the same regressed cases and the same exit codes for the same stored runs.

Each drift found between the doors has a test here that failed on the code before it.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_SUITE, judge_env, run_judge

import judge
from judge.app.runs.baselines import check_run
from judge.app.workspace.workspace import Workspace

GOOD = "hosted_vllm/fake-judge+40"
WORSE = "hosted_vllm/fake-judge"
SUITE_ID = "task-evaluation-example"


def _json(proc: Any) -> Any:
    assert proc.stdout.strip(), proc.stderr
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A workspace with a lenient baseline (threshold 0.5) from a good judge, and a stored run
    of a worse judge (its verdicts cached, so ``judge run --offline`` replays it)."""
    from conftest import load_fake_server

    ws = tmp_path_factory.mktemp("gate") / "ws"
    ws.mkdir()
    shutil.copy(EXAMPLE_SUITE, ws / "suite.yaml")
    server = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    try:
        base = ["--api-base", server.base_url + "/v1"]
        first = run_judge(["run", "suite.yaml", "--model", GOOD, *base, "--json"], ws)
        assert first.returncode == 0, first.stderr
        assert _json(first)["baseline"]["baselineRecorded"] is True
        lenient = run_judge(["baseline", "record", SUITE_ID, "--threshold", "0.5", "--json"], ws)
        assert lenient.returncode == 0, lenient.stderr
        worse = run_judge(["run", "suite.yaml", "--model", WORSE, *base, "--json",
                           "--no-check"], ws)
        assert worse.returncode == 0, worse.stderr
        run_id = _json(worse)["run"]["id"]
    finally:
        server.stop()
    return {"ws": ws, "run": run_id}


def _three_doors(ws: Path, run_id: str, env: dict[str, str]) -> list[tuple[int, bool, list[str]]]:
    """(exit code, hasRegression, regressed cases) from `judge check`, `judge run --offline`
    and the Python API, in that order."""
    # The baseline is the good judge's, the run the worse judge's: compared on request only.
    check = run_judge(["check", run_id, "--json", "--across-judges"], ws, env=env)
    replay = run_judge(["run", "suite.yaml", "--model", WORSE, "--offline", "--json",
                        "--across-judges"], ws, env=env)
    out = []
    for proc, pick in ((check, lambda d: d), (replay, lambda d: d["baseline"])):
        body = pick(_json(proc))
        out.append((proc.returncode, body["hasRegression"], sorted(body["regressedCases"])))
    verdict = check_run(Workspace.open(ws, env=env), run_id, across_judges=True)
    assert verdict.model_dump(mode="json")["hasRegression"] == verdict.has_regression
    out.append((1 if verdict.blocked else 0, verdict.has_regression,
                sorted(verdict.comparison.regressed_cases if verdict.comparison else [])))
    return out


@pytest.mark.parametrize(("setting", "env_extra", "expect_regression"), [
    # The baseline file's own threshold (0.5) applies when nothing else sets one.
    (None, {}, False),
    # A config file beats the baseline file.
    ("threshold = 0.05\n", {}, True),
    # The environment beats the config file.
    ("threshold = 0.05\n", {"JUDGE_THRESHOLD": "0.5"}, False),
    # Block-on-regression off: the regression is reported, the exit code is 0.
    ("threshold = 0.05\nblock_on_regression = false\n", {}, True),
])
def test_run_check_and_api_agree(judged: dict[str, Any], setting: str | None,
                                 env_extra: dict[str, str], expect_regression: bool) -> None:
    ws: Path = judged["ws"]
    toml = ws / "judge.toml"
    toml.unlink(missing_ok=True)
    if setting:
        toml.write_text(setting)
    try:
        doors = _three_doors(ws, judged["run"], judge_env(**env_extra))
    finally:
        toml.unlink(missing_ok=True)
    assert len(set(map(repr, doors))) == 1, doors
    code, regression, cases = doors[0]
    assert regression is expect_regression
    blocking = not (setting and "block_on_regression = false" in setting)
    assert code == (1 if regression and blocking else 0)
    # The other judge re-asked every case and neither has a noise model: the suite's mean
    # decides and no case is listed alone (docs/statistics.md).
    assert cases == []


def test_check_never_records_a_baseline_with_missing_cases(workspace: Path) -> None:
    # Drift 2: `judge check` recorded a baseline that contained cache_miss cases.
    shutil.copy(EXAMPLE_SUITE, workspace / "suite.yaml")
    offline = run_judge(["run", "suite.yaml", "--model", WORSE, "--offline", "--json"],
                        workspace)
    assert offline.returncode == 3, offline.stderr
    assert _json(offline)["baseline"]["baselineRecorded"] is False
    check = run_judge(["check", "--json"], workspace)
    assert check.returncode == 0, check.stderr
    body = _json(check)
    assert body["baselineRecorded"] is False and "missing" in body["skipped"]
    assert not (workspace / "baselines").exists()
    record = run_judge(["baseline", "record", SUITE_ID], workspace)
    assert record.returncode == 2 and "missing" in record.stderr


def test_evaluate_accepts_what_the_cli_accepts(workspace: Path) -> None:
    # Drift 3: judge.evaluate(model="local/...") came back "LLM Provider NOT provided":
    # the Python API now opens judges through the same factory as the CLI.
    opened: list[list[str]] = []

    class Recording:
        def open(self, ws: Workspace, models: Any) -> Any:
            opened.append(list(models))
            raise judge.ConfigError("stop here", fix="-")

    case = {"id": "c1", "input": "x", "output": "y", "judged_by": "llm"}
    with pytest.raises(judge.ConfigError):
        judge.evaluate(case, model="local/smollm2", judges=Recording(), workspace=workspace)
    assert opened == [["local/smollm2"]]


def test_a_baseline_of_another_judge_is_not_compared(judged: dict[str, Any]) -> None:
    """`⚠ regression 58.25 → 47.88` was two judges disagreeing, not a regression;
    and not compared is no pass either (exit 5, the judges named)."""
    ws, run_id = judged["ws"], judged["run"]
    for proc in (run_judge(["check", run_id, "--json"], ws),
                 run_judge(["run", "suite.yaml", "--model", WORSE, "--offline", "--json"], ws)):
        assert proc.returncode == 5, proc.stderr
        body = _json(proc)
        body = body.get("baseline", body)
        assert body["hasRegression"] is False and body["baselineRecorded"] is False
        assert body["outcome"] == "not-compared" and body["notCompared"] == "another-judge"
        assert body["comparedCases"] == 0 and body["against"]["judge"] == [GOOD]
        assert body["skipped"].startswith("not compared: the baseline ")
        assert f"judge {GOOD} → {WORSE}" in body["skipped"]
        assert "pass --across-judges" in body["skipped"]
    verdict = check_run(Workspace.open(ws, env={}), run_id)
    assert verdict.comparison is None and verdict.skipped is not None
    assert verdict.exit_code == 5


def test_an_offline_replay_never_writes_a_baseline(judged: dict[str, Any],
                                                   tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(judged["ws"], ws)
    shutil.rmtree(ws / "baselines")
    replay = run_judge(["run", "suite.yaml", "--model", WORSE, "--offline", "--json"], ws)
    assert replay.returncode == 0, replay.stderr
    body = _json(replay)["baseline"]
    assert body["baselineRecorded"] is False and "no baseline at" in body["skipped"]
    assert not (ws / "baselines").exists()


# -- not compared: every path, every door ---------------------------------------------------

DOORS_SUITE = "suites/suite.yaml"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace whose first run (judge WORSE, live on loopback) recorded the baseline and
    filled the cache: every door below replays it offline."""
    from conftest import load_fake_server

    ws = tmp_path_factory.mktemp("doors") / "ws"
    (ws / "suites").mkdir(parents=True)
    shutil.copy(EXAMPLE_SUITE, ws / DOORS_SUITE)
    server = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    try:
        (ws / "judge.toml").write_text(f'model = "{WORSE}"\napi_base = "{server.base_url}/v1"\n')
        first = run_judge(["run", DOORS_SUITE, "--json"], ws)
    finally:
        server.stop()
    assert first.returncode == 0, first.stderr
    assert _json(first)["baseline"]["outcome"] == "baseline-recorded"
    return ws


def _rewrite_baseline(ws: Path, **update: Any) -> None:
    from judge.core.outcomes.baseline import baseline_id
    from judge.core.text.seals import NO_SECRET
    from judge.system.baseline_files import load_baseline, save_baseline

    path = ws / "baselines" / f"{SUITE_ID}.json"
    baseline = load_baseline(path, sealer=NO_SECRET)
    if "cases" in update:  # a baseline of other cases: its id follows them
        update["baseline_id"] = baseline_id(baseline.suite, update["cases"])
    save_baseline(path, baseline.model_copy(update=update), sealer=NO_SECRET)


def _mutate(ws: Path, path: str) -> dict[str, str]:
    """Make ``ws`` a workspace where ``path`` is why the run is not compared; its env."""
    if path == "another-judge":
        _rewrite_baseline(ws, models=(GOOD,))
    elif path == "another-rubric":
        _rewrite_baseline(ws, rubric_hash="0" * 64)
    elif path == "another-template":
        _rewrite_baseline(ws, template_hash="0" * 64)
    elif path == "nothing-in-common":
        from judge.core.text.seals import NO_SECRET
        from judge.system.baseline_files import load_baseline

        cases = load_baseline(ws / "baselines" / f"{SUITE_ID}.json", sealer=NO_SECRET).cases
        _rewrite_baseline(ws, cases={f"old-{k}": v for k, v in cases.items()})
    elif path == "cache-misses":
        shutil.rmtree(ws / "cache")
    elif path == "no-baseline":
        shutil.rmtree(ws / "baselines")
        return judge_env(CI="true")
    return judge_env()


def _http_door(ws: Path, env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    from fastapi.testclient import TestClient

    from judge.server.app import create_app

    with TestClient(create_app(Workspace.open(ws, env=env)),
                    base_url="http://127.0.0.1") as client:
        answer = client.post(f"/api/suites/{SUITE_ID}/eval/harness?wait=true",
                             json={"cacheMode": "offline"})
    assert answer.status_code == 200, answer.text
    view = answer.json()
    return view["exitCode"], view["regression"]


def _plugin_door(ws: Path, env: dict[str, str], pytester: pytest.Pytester,
                 monkeypatch: pytest.MonkeyPatch) -> dict[str, str | None]:
    """The pytest plugin's gate item, offline (an inner session in this process)."""
    from xml.etree import ElementTree

    (ws / "test_suite.py").write_text('from judge.pytest_plugin import judge_suite\n\n'
                                      f'test_task = judge_suite("{DOORS_SUITE}")\n')
    monkeypatch.chdir(ws)
    for name in set(os.environ) - set(env):
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    pytester.runpytest_inprocess("-p", "judge.pytest_plugin", "--judge-mode", "offline", "-q",
                                 "-p", "no:cacheprovider", "-o",
                                 "asyncio_default_fixture_loop_scope=function",
                                 "--junitxml", "gate.xml", "test_suite.py", "-k", "baseline")
    case = ElementTree.parse(ws / "gate.xml").find(".//testcase")
    assert case is not None
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    failure = case.find("failure")
    return {"outcome": props.get("judge.gate.outcome"),
            "notCompared": props.get("judge.gate.notCompared"),
            "failure": None if failure is None else failure.get("message")}


@pytest.mark.parametrize(("path", "run_exit"), [
    ("another-judge", 5), ("another-rubric", 5), ("another-template", 5),
    ("nothing-in-common", 5), ("cache-misses", 3), ("no-baseline", 5)])
def test_not_compared_is_its_own_outcome_at_every_door(
        recorded: Path, tmp_path: Path, path: str, run_exit: int,
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(recorded, ws)
    env = _mutate(ws, path)
    # The CLI: judge run (an offline replay) and judge check of that run.
    replay = run_judge(["run", DOORS_SUITE, "--offline", "--json"], ws, env=env)
    assert replay.returncode == run_exit, replay.stdout[-2000:] + replay.stderr
    body = _json(replay)["baseline"]
    assert (body["outcome"], body["notCompared"]) == ("not-compared", path)
    assert body["hasRegression"] is False and body["comparedCases"] == 0
    assert body["skipped"].startswith("not compared: ")
    run_id = _json(replay)["run"]["id"]
    check = run_judge(["check", run_id, "--json"], ws, env=env)
    assert check.returncode == 5, check.stdout + check.stderr
    assert _json(check)["notCompared"] == path
    # The Python API.
    verdict = check_run(Workspace.open(ws, env=env), run_id)
    assert (verdict.outcome, verdict.not_compared, verdict.exit_code) == (
        "not-compared", path, 5)
    assert (verdict.against is None) == (path == "no-baseline")
    # The HTTP harness: hasRegression kept, what was (not) compared added.
    code, regression = _http_door(ws, env)
    assert code == run_exit
    assert (regression["hasRegression"], regression["outcome"], regression["notCompared"]) == (
        False, "not-compared", path)
    # The pytest plugin: the gate item fails, never a pass.
    plugin = _plugin_door(ws, env, pytester, monkeypatch)
    assert (plugin["outcome"], plugin["notCompared"]) == ("not-compared", path)
    assert plugin["failure"] is not None


def test_a_first_run_outside_ci_records_and_says_nothing_was_compared(
        recorded: Path, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(recorded, ws)
    shutil.rmtree(ws / "baselines")
    required = run_judge(["check", "--require-baseline", "--json"], ws)  # as CI would
    assert required.returncode == 5 and _json(required)["notCompared"] == "no-baseline"
    assert not (ws / "baselines").exists()
    proc = run_judge(["check"], ws)  # the stored first run: recorded, exit 0
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "first baseline recorded, nothing compared" in proc.stdout
    assert "no regression" not in proc.stdout
    required = run_judge(["check", "--require-baseline", "--json"], tmp_path / "ws")
    assert required.returncode == 0  # it exists now: compared
    assert _json(required)["outcome"] == "compared"


def test_a_judge_change_is_compared_when_asked_and_says_so(recorded: Path,
                                                          tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(recorded, ws)
    _mutate(ws, "another-judge")
    proc = run_judge(["run", DOORS_SUITE, "--offline", "--json", "--across-judges"], ws)
    assert proc.returncode == 0, proc.stderr
    body = _json(proc)["baseline"]
    assert body["outcome"] == "compared" and body["acrossJudges"] is True
    assert body["comparedCases"] == 16 and body["against"]["judge"] == [GOOD]
    assert any(n.startswith("compared across judges, as asked") for n in body["notices"])
