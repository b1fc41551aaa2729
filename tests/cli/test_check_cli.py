"""``judge baseline``, ``judge check`` and ``judge judges monitor`` against a real SQLite store."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from conftest import run_judge

from judge.core.formats.models import CaseResult, JudgeMeta, RunInfo
from judge.core.outcomes.baseline import baseline_text, parse_baseline
from judge.store.runs import RunStore

MODEL = "openai/gpt-4o-mini"
OTHER = "anthropic/claude-3-5-haiku"
RUBRIC_HASH = "5f" * 32
SCORES = {"case-01": 91, "case-02": 78, "case-03": 64, "case-04": 55, "case-05": 82,
          "case-06": 70, "case-07": 82, "case-08": 47, "case-09": 64, "case-10": 88}


def _meta(model: str, case_id: str, sample: int = 0) -> JudgeMeta:
    # Each case's judgment replayed from the cache on both sides: the gate's exact rule
    # decides, so these tests pin the door (the statistics have tests of their own).
    return JudgeMeta(model=model, temperature=0.0, seed=42, sample=sample, template_id="judge",
                     template_hash="a3" * 32, rubric_hash=RUBRIC_HASH,
                     cache_key=f"{case_id}.{model}.{sample}", cached=True)


def _result(case_id: str, score: int | None, model: str = MODEL, sample: int = 0) -> CaseResult:
    if score is None:
        return CaseResult(id=case_id, status="unscored", judge=_meta(model, case_id, sample),
                          reason="provider error: 503 Service Unavailable")
    return CaseResult(id=case_id, status="scored", overall_score=score, passed=score >= 60,
                      band="strong" if score >= 75 else "acceptable" if score >= 60 else "weak",
                      judge=_meta(model, case_id, sample))


class Workspace:
    """A temporary workspace with a SQLite store and a ``judge`` to run in it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.url = f"sqlite:///{root / 'runs.db'}"
        self.created = 0

    def add_run(self, run_id: str, scores: dict[str, int | None], *, suite: str = "task-eval",
                status: str = "complete", panel: bool = False) -> str:
        self.created += 1
        run = RunInfo(id=run_id, suite=suite, rubric="task-evaluation", rubric_hash=RUBRIC_HASH,
                      models=(MODEL, OTHER) if panel else (MODEL,), seed=42, temperature=0.0,
                      template_id="judge", template_hash="a3" * 32, status=status,
                      created_at=f"2025-03-01T10:{self.created:02d}:00Z")
        results: list[CaseResult] = [_result(k, v) for k, v in scores.items()]
        if panel:  # a second judge and a second sample that must not reach the baseline
            results += [_result(k, 0, OTHER) for k in scores]
            results += [_result(k, 1, MODEL, sample=1) for k in scores]
        with RunStore(self.url, workspace=self.root) as store:
            store.create_run(run)
            store.add_results(run_id, results)
        return run_id

    def judge(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
        env["JUDGE_STORE_URL"] = self.url
        env["COLUMNS"] = "200"
        return run_judge(list(args), self.root, env=env)

    def baseline(self, suite: str = "task-eval") -> Path:
        return self.root / "baselines" / f"{suite}.json"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


def dropped(**changes: int | None) -> dict[str, int | None]:
    scores: dict[str, int | None] = dict(SCORES)
    scores.update({k.replace("_", "-"): v for k, v in changes.items()})
    return scores


def _json(proc: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(proc.stdout)


def _no_temp_files(folder: Path) -> Iterable[Path]:
    return [p for p in folder.iterdir() if p.name.startswith(".")]


# -- baseline record | show | list ---------------------------------------------------------

def test_record_takes_primary_judge_and_is_stable(ws: Workspace) -> None:
    ws.add_run("r-0001-aaaa", dict(SCORES), panel=True)
    proc = ws.judge("baseline", "record", "task-eval", "--json")
    assert proc.returncode == 0, proc.stderr
    out = _json(proc)
    assert out["changed"] is True and Path(out["path"]) == ws.baseline()
    text = ws.baseline().read_text(encoding="utf-8")
    b = parse_baseline(text, "b.json")
    assert baseline_text(b) == text
    assert b.recorded_from == "r-0001-aaaa" and b.models == (MODEL, OTHER)
    assert {k: c.overall_score for k, c in b.cases.items()} == SCORES  # not OTHER's zeros
    assert b.score == 72.1 and b.threshold == 0.05
    assert out["baseline"] == json.loads(text)
    assert not list(_no_temp_files(ws.baseline().parent))
    # the same run again: byte-identical file, reported unchanged
    again = ws.judge("baseline", "record", "task-eval", "--from", "r-0001")
    assert again.returncode == 0, again.stderr
    assert "(unchanged)" in again.stdout and b.baseline_id in again.stdout
    assert ws.baseline().read_text(encoding="utf-8") == text


def test_record_keeps_threshold_unless_given(ws: Workspace) -> None:
    ws.add_run("r1", dict(SCORES))
    assert ws.judge("baseline", "record", "task-eval", "--threshold", "0.1").returncode == 0
    assert parse_baseline(ws.baseline().read_text(), "b").threshold == 0.1
    ws.add_run("r2", dropped(case_01=90))
    proc = ws.judge("baseline", "record", "task-eval")
    assert proc.returncode == 0, proc.stderr
    b = parse_baseline(ws.baseline().read_text(), "b")
    assert b.threshold == 0.1 and b.recorded_from == "r2" and b.cases["case-01"].overall_score == 90


def test_record_from_suite_file_and_other_dir(ws: Workspace) -> None:
    (ws.root / "suites").mkdir()
    suite_file = ws.root / "suites" / "task-eval.yaml"
    suite_file.write_text("id: task-eval\ncases:\n  - id: case-01\n    output: x\n"
                          "    judged_by: deterministic\n    deterministic: {a: 1}\n")
    ws.add_run("r1", dict(SCORES))
    proc = ws.judge("baseline", "record", "suites/task-eval.yaml", "--dir", "gates")
    if proc.returncode == 2 and "suite" in proc.stderr.lower():
        pytest.skip(f"suite file shape changed: {proc.stderr}")
    assert proc.returncode == 0, proc.stderr
    assert (ws.root / "gates" / "task-eval.json").is_file()


@pytest.mark.parametrize(("setup", "args", "message"), [
    ({}, ("--from", "nope"), "no run 'nope'"),
    ({}, (), "no complete run of suite 'task-eval'"),
    ({"other": True}, ("--from", "r-other"), "judged suite 'other'"),
    ({"interrupted": True}, ("--from", "r-int"), "is interrupted"),
    ({"unscored": True}, ("--from", "r-none"), "no case of suite 'task-eval' is scored"),
])
def test_record_refuses_bad_runs(ws: Workspace, setup: dict[str, bool], args: tuple[str, ...],
                                 message: str) -> None:
    RunStore(ws.url, workspace=ws.root).close()  # a store, with or without the runs asked for
    if setup.get("other"):
        ws.add_run("r-other", dict(SCORES), suite="other")
    if setup.get("interrupted"):
        ws.add_run("r-int", dict(SCORES), status="interrupted")
    if setup.get("unscored"):
        ws.add_run("r-none", dict.fromkeys(SCORES))
    proc = ws.judge("baseline", "record", "task-eval", *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr
    assert not ws.baseline().exists()


def test_show_and_list(ws: Workspace) -> None:
    ws.add_run("r1", dict(SCORES))
    ws.add_run("r2", {"a": 70, "b": 50}, suite="other")
    assert ws.judge("baseline", "record", "task-eval").returncode == 0
    assert ws.judge("baseline", "record", "other").returncode == 0
    shown = ws.judge("baseline", "show", "task-eval", "--json")
    assert shown.returncode == 0, shown.stderr
    assert _json(shown) == json.loads(ws.baseline().read_text())
    human = ws.judge("baseline", "show", "task-eval")
    assert "case-07" in human.stdout and "72.10" in human.stdout
    listed = ws.judge("baseline", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = _json(listed)
    assert [(r["suite"], r["cases"], r["score"]) for r in rows] == [
        ("other", 2, 60.0), ("task-eval", 10, 72.1)]
    missing = ws.judge("baseline", "show", "nothing")
    assert missing.returncode == 2 and "judge baseline record nothing" in missing.stderr
    ws.baseline("broken").write_text("{", encoding="utf-8")
    listed = ws.judge("baseline", "list")
    assert listed.returncode == 2 and "broken.json" in listed.stderr
    assert "task-eval" in listed.stdout


# -- check ---------------------------------------------------------------------------------

def test_check_without_baseline_records_one(ws: Workspace) -> None:
    ws.add_run("r1", dict(SCORES))
    proc = ws.judge("check")
    assert proc.returncode == 0, proc.stderr
    assert "first baseline recorded, nothing compared" in proc.stdout
    assert "baselines/task-eval.json from run r1" in proc.stdout
    assert "no regression" not in proc.stdout
    assert parse_baseline(ws.baseline().read_text(), "b").recorded_from == "r1"
    again = ws.judge("check", "--json")
    out = _json(again)
    assert again.returncode == 0 and out["baselineRecorded"] is False
    assert out["hasRegression"] is False and out["scoreDelta"] == 0.0


def test_check_json_when_recording(ws: Workspace) -> None:
    ws.add_run("r1", dict(SCORES))
    proc = ws.judge("check", "r1", "--json")
    assert proc.returncode == 0, proc.stderr
    out = _json(proc)
    assert out["baselineRecorded"] is True and out["hasRegression"] is False
    assert "recorded" in proc.stderr  # the notice stays out of the JSON


def test_check_blocks_a_seeded_regression(ws: Workspace) -> None:
    ws.add_run("r1", dict(SCORES))
    assert ws.judge("baseline", "record", "task-eval").returncode == 0
    ws.add_run("r2", dropped(case_07=71, case_09=None, case_08=60))
    proc = ws.judge("check")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "⚠ regression" in proc.stdout
    assert "case-07: 82 → 71 (-11 points, threshold 5)" in proc.stdout
    assert "case-09: scored 64 → unscored (provider error: 503 Service Unavailable)" \
        in proc.stdout
    assert "improved: case-08" not in proc.stdout and "--detail" in proc.stdout.splitlines()[-1]
    assert len(proc.stdout.splitlines()) <= 8, proc.stdout
    assert proc.stdout.splitlines()[0].startswith("⚠ regression")
    detail = ws.judge("check", "--detail")
    assert detail.returncode == 1 and "improved: case-08" in detail.stdout
    out = _json(ws.judge("check", "r2", "--json"))
    assert out["hasRegression"] is True and out["blocked"] is True
    assert out["regressedCases"] == ["case-07"] and out["newlyUnscored"] == ["case-09"]
    assert out["run"] == "r2" and out["baselineRecorded"] is False
    assert {"hasRegression", "scoreDelta", "previousScore", "currentScore", "baselineId",
            "blockedReasons", "threshold", "regressedCases", "newlyUnscored", "improvedCases",
            "missingCases", "newCases", "noise"} <= set(out)
    relaxed = ws.judge("check", "--no-block")
    assert relaxed.returncode == 0 and "⚠ regression" in relaxed.stdout
    assert ws.judge("check", "--threshold", "0.2").returncode == 1  # case-09 still blocks
    # the gate compares the older run too, named by prefix
    assert ws.judge("check", "r1").returncode == 0


def test_check_threshold_flag_and_setting(ws: Workspace) -> None:
    ws.add_run("r1", dict(SCORES))
    assert ws.judge("baseline", "record", "task-eval").returncode == 0
    ws.add_run("r2", dropped(case_07=75))  # -7 points
    assert ws.judge("check").returncode == 1
    assert ws.judge("check", "--threshold", "0.07").returncode == 0
    (ws.root / "judge.toml").write_text("threshold = 0.07\n", encoding="utf-8")
    assert ws.judge("check").returncode == 0
    (ws.root / "judge.toml").write_text("block_on_regression = false\n", encoding="utf-8")
    assert ws.judge("check").returncode == 0
    assert ws.judge("check", "--block").returncode == 1


def test_check_picks_the_suite(ws: Workspace) -> None:
    ws.add_run("r1", dict(SCORES))
    ws.add_run("r2", {"a": 10}, suite="other")  # newest overall
    out = _json(ws.judge("check", "--suite", "task-eval", "--json"))
    assert out["run"] == "r1" and out["suite"] == "task-eval"
    mismatch = ws.judge("check", "r2", "--suite", "task-eval")
    assert mismatch.returncode == 2 and "judged suite 'other'" in mismatch.stderr


@pytest.mark.parametrize(("args", "message"), [
    (("nope",), "no run 'nope'"),
    (("--baseline", "missing.json"), "missing.json: no such baseline file"),
    (("r-int",), "is interrupted"),
])
def test_check_bad_input_exits_2(ws: Workspace, args: tuple[str, ...], message: str) -> None:
    ws.add_run("r1", dict(SCORES))
    ws.add_run("r-int", dict(SCORES), status="interrupted")
    proc = ws.judge("check", *args)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr


def test_check_malformed_baseline_exits_2(ws: Workspace) -> None:
    ws.add_run("r1", dict(SCORES))
    ws.baseline().parent.mkdir()
    ws.baseline().write_text('{"suite": "task-eval", "cases": {}}', encoding="utf-8")
    proc = ws.judge("check")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "baselines/task-eval.json" in proc.stderr and "fix:" in proc.stderr


def test_check_with_an_explicit_baseline_file(ws: Workspace) -> None:
    ws.add_run("r1", dict(SCORES))
    assert ws.judge("baseline", "record", "task-eval", "--dir", "elsewhere").returncode == 0
    ws.add_run("r2", dropped(case_07=60))
    proc = ws.judge("check", "--baseline", "elsewhere/task-eval.json")
    assert proc.returncode == 1 and "case-07: 82 → 60" in proc.stdout
    assert not ws.baseline().exists()


def test_empty_store_exits_2(ws: Workspace) -> None:
    RunStore(ws.url, workspace=ws.root).close()
    proc = ws.judge("check")
    assert proc.returncode == 2 and "no complete run" in proc.stderr


def test_no_store_exits_2_and_makes_none(ws: Workspace) -> None:
    proc = ws.judge("check")
    assert proc.returncode == 2 and f"no run store at {ws.root / 'runs.db'}" in proc.stderr
    assert not any(ws.root.iterdir())


# -- monitor -------------------------------------------------------------------------------

def _jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.mark.parametrize(("failing", "status", "code"), [
    (10, "healthy", 0), (20, "warning", 0), (40, "critical", 1)])
def test_monitor_status_and_exit(ws: Workspace, failing: int, status: str, code: int) -> None:
    data = [{"id": f"q{i}", "overallScore": 40 if i < failing else 80} for i in range(100)]
    path = _jsonl(ws.root / "live.jsonl", data)
    proc = ws.judge("judges", "monitor", str(path), "--rate", "1", "--json")
    assert proc.returncode == code, proc.stderr
    out = _json(proc)
    assert out["status"] == status and out["seen"] == out["sampled"] == 100
    human = ws.judge("judges", "monitor", str(path), "--rate", "1")
    assert human.returncode == code and human.stdout.startswith(status)


def test_monitor_samples_reproducibly(ws: Workspace) -> None:
    data = [{"id": f"q{i}", "passed": i % 10 != 0} for i in range(1000)]
    path = _jsonl(ws.root / "live.jsonl", data)
    first = _json(ws.judge("judges", "monitor", str(path), "--seed", "3", "--json"))
    _jsonl(path, list(reversed(data)))
    second = _json(ws.judge("judges", "monitor", str(path), "--seed", "3", "--json"))
    assert first == second and 60 < first["sampled"] < 140


def test_monitor_insufficient_is_exit_0(ws: Workspace) -> None:
    path = _jsonl(ws.root / "live.jsonl", [{"id": "a", "passed": False}])
    proc = ws.judge("judges", "monitor", str(path), "--rate", "1")
    assert proc.returncode == 0 and "insufficient" in proc.stdout


@pytest.mark.parametrize(("line", "message"), [
    ("{not json", "line 3: invalid JSON"),
    ("[1, 2]", "line 3: a record is a JSON object"),
    ('{"passed": "yes"}', "line 3: 'passed' must be true"),
    ('{"overallScore": NaN}', "line 3: invalid JSON: NaN"),
])
def test_monitor_malformed_line_exits_2(ws: Workspace, line: str, message: str) -> None:
    path = ws.root / "live.jsonl"
    path.write_text('{"id": 1, "passed": true}\n\n' + line + "\n", encoding="utf-8")
    proc = ws.judge("judges", "monitor", str(path))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr and "live.jsonl" in proc.stderr


def test_monitor_bad_thresholds_exit_2(ws: Workspace) -> None:
    path = _jsonl(ws.root / "live.jsonl", [{"id": "a", "passed": True}])
    proc = ws.judge("judges", "monitor", str(path), "--warning", "0.5", "--critical", "0.7")
    assert proc.returncode == 2 and "critical_below" in proc.stderr
