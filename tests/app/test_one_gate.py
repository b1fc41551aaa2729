"""One gate for every door: ``judge run``, ``judge check`` and the Python API give the same
verdict, the same regressed cases and the same exit codes for the same stored runs.

Each drift found in issue 11 has a test here that failed on the code before it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_SUITE, judge_env, run_judge

import judge
from judge.app.baselines import check_run
from judge.app.workspace import Workspace

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
    """Issue 33: `⚠ regression 58.25 → 47.88` was two judges disagreeing, not a regression;
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
