"""`judge judges calibrate` and `judge rescore` with a calibration, against a loopback judge with a
known monotone bias: ``fake-judge~40-70`` answers ``fake-judge``'s scores squeezed into
40..70, and the people's labels are ``fake-judge``'s scores (0..100) with a little noise.

The fit is measured by k-fold cross-validation (every case predicted by a map fitted without
it) and must bring held-out MAD down; re-scoring the stored run with the calibration makes
no model call and its finals are the core's blend of the calibrated AI score.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import ROOT, load_fake_server, run_judge

from judge.app.judges.calibrating import calibrate
from judge.app.runs.rescoring import rescore_run
from judge.app.workspace.workspace import Workspace
from judge.core.formats.labels import Label, dump_labels
from judge.core.scoring.calibration import CalibrationError, calibration_text, parse_calibration
from judge.core.scoring.scoring import compute_final_score
from judge.core.text.errors import RubricError, UsageError
from judge.core.text.seals import NO_SECRET, Sealer
from judge.system.resources import load_rubric

PEOPLE = "hosted_vllm/fake-judge"
JUDGE = "hosted_vllm/fake-judge~40-70"
CATEGORIES = ("agentPerformance", "taskOutcomeQuality", "processCompliance")
CASES = 40


def _suite() -> dict[str, Any]:
    cases = []
    for i in range(CASES):
        cases.append({"id": f"case-{i:02d}", "input": f"task {i}: make the build green",
                      "output": f"report {i}: done, {i % 7} tests added",
                      "deterministic": {c: (i * 37 + k * 11) % 101
                                        for k, c in enumerate(CATEGORIES)}})
    return {"id": "calib", "rubric": "task-evaluation", "cases": cases}


def _noise(case: str, cat: str) -> int:
    return hashlib.sha256(f"{case}/{cat}".encode()).digest()[0] % 7 - 3  # -3..3


class Ws:
    def __init__(self, path: Path, server: Any, runs: dict[str, dict[str, Any]]) -> None:
        self.path, self.server, self.runs = path, server, runs

    def ai(self, model: str) -> dict[tuple[str, str], int]:
        return {(c["id"], s["category"]): s["aiScore"]
                for c in self.runs[model]["cases"] for s in c["categoryScores"]}


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ws]:
    path = tmp_path_factory.mktemp("calibrate")
    (path / "calib.yaml").write_text(yaml.safe_dump(_suite(), sort_keys=False))
    server = load_fake_server().start_in_thread(latency_ms=0, seed=3)
    try:
        runs = {}
        for model in (PEOPLE, JUDGE):
            proc = run_judge(["run", "calib.yaml", "--no-check", "--model", model, "--api-base",
                              f"{server.base_url}/v1", "--json"], path)
            assert proc.returncode == 0, proc.stderr
            runs[model] = json.loads(proc.stdout)
        w = Ws(path, server, runs)
        people = w.ai(PEOPLE)
        labels = [Label(suite="calib", case=case, category=cat, reviewer="ana",
                        at="2026-12-02T06:00:00Z",
                        score=min(100, max(0, score + _noise(case, cat))))
                  for (case, cat), score in people.items()]
        (path / "calib.labels.jsonl").write_text(dump_labels(labels))
        yield w
    finally:
        server.stop()


def test_the_judge_is_squeezed_into_40_70(ws: Ws) -> None:
    judged = ws.ai(JUDGE)
    people = ws.ai(PEOPLE)
    assert min(judged.values()) >= 40 and max(judged.values()) <= 70
    assert max(people.values()) - min(people.values()) > 80
    # monotone: the squeeze keeps the order of fake-judge's scores
    for key, value in judged.items():
        assert value == 40 + (2 * people[key] * 30 + 100) // 200


def test_calibration_lowers_held_out_mad_and_rescore_makes_no_call(ws: Ws) -> None:
    workspace = Workspace.open(ws.path, env={})
    run_id = ws.runs[JUDGE]["run"]["id"]
    report = calibrate(workspace, [run_id], ws.path / "calib.labels.jsonl", folds=5, seed=1)
    cal = report.calibration
    assert cal.judge == JUDGE and cal.rubric == "task-evaluation"
    assert set(cal.categories) == set(CATEGORIES) and report.skipped == {}
    for cat, fold in cal.cross_validation.items():
        assert fold.cases == CASES  # every labelled case held out once
        before, after = fold.before.mean_abs_diff, fold.after.mean_abs_diff
        assert before is not None and after is not None
        assert before > 15 and after < before / 2, (cat, before, after)
    # the written file is the calibration, readable and versioned
    assert parse_calibration(report.path.read_text()) == cal

    rubric_file = ws.path / "rubrics" / "task-evaluation.yaml"
    rubric_file.parent.mkdir(exist_ok=True)
    data = yaml.safe_load((ROOT / "rubrics" / "task-evaluation.yaml").read_text())
    data["calibration"] = os.path.relpath(report.path, rubric_file.parent)
    rubric_file.write_text(yaml.safe_dump(data, sort_keys=False))
    rubric = load_rubric(str(rubric_file))
    assert rubric.calibrated is not None

    calls = ws.server.stats()["requests"]
    rescored = rescore_run(workspace, run_id, str(rubric_file))
    assert ws.server.stats()["requests"] == calls  # zero model calls
    assert rescored.run.settings.calibration is not None
    assert rescored.run.settings.calibration.sha256 == rubric.calibrated[1]
    with workspace.open_store() as store:
        results = list(store.iter_results(rescored.run.id))
    people = ws.ai(PEOPLE)
    raw_err = mapped_err = 0
    for r in results:
        for c in r.category_scores:
            assert c.ai_score is not None and c.deterministic_score is not None
            mapped = cal.categories[c.category].table[c.ai_score]
            assert c.final_score == compute_final_score(c.deterministic_score, mapped)
            raw_err += abs(c.ai_score - people[(r.id, c.category)])
            mapped_err += abs(mapped - people[(r.id, c.category)])
    assert mapped_err < raw_err / 2


def test_without_a_labels_file_the_suites_labels_are_read_as_agreement_reads_them(
        ws: Ws, tmp_path: Path) -> None:
    """calib.labels.jsonl sits beside calib.yaml: the suite's labels, as `judges agreement`."""
    workspace = Workspace.open(ws.path, env={})
    run_id = ws.runs[JUDGE]["run"]["id"]
    given = calibrate(workspace, [run_id], ws.path / "calib.labels.jsonl",
                      out=tmp_path / "given.json")
    own = calibrate(workspace, [run_id], out=tmp_path / "own.json")
    assert own.calibration.categories == given.calibration.categories
    assert own.calibration.cross_validation == given.calibration.cross_validation
    proc = run_judge(["judges", "calibrate", run_id, "--out", str(tmp_path / "cli.json"), "--json"],
                     ws.path)
    assert proc.returncode == 0, proc.stderr
    empty = tmp_path / "bare"
    empty.mkdir()
    (empty / "calib.yaml").write_text((ws.path / "calib.yaml").read_text())
    with pytest.raises(UsageError, match="no people's labels"):
        calibrate(workspace, [run_id], suite_file=empty / "calib.yaml")


def test_a_calibration_of_another_judge_rubric_or_scale_is_refused(ws: Ws,
                                                                    tmp_path: Path) -> None:
    workspace = Workspace.open(ws.path, env={})
    run_id = ws.runs[JUDGE]["run"]["id"]
    out = tmp_path / "cal.json"
    calibrate(workspace, [run_id], ws.path / "calib.labels.jsonl", out=out)
    data = yaml.safe_load((ROOT / "rubrics" / "task-evaluation.yaml").read_text())
    data["calibration"] = "cal.json"
    rubric_file = tmp_path / "task-evaluation.yaml"
    rubric_file.write_text(yaml.safe_dump(data, sort_keys=False))
    # another judge: the people's run was judged by fake-judge, not the squeezed one
    with pytest.raises(CalibrationError, match=r"maps judge .*fake-judge~40-70"):
        rescore_run(workspace, ws.runs[PEOPLE]["run"]["id"], str(rubric_file))
    calls = ws.server.stats()["requests"]
    run = run_judge(["run", "calib.yaml", "--model", PEOPLE, "--rubric", str(rubric_file),
                     "--api-base", f"{ws.server.base_url}/v1"], ws.path)
    assert run.returncode == 2 and "maps judge" in run.stderr
    assert ws.server.stats()["requests"] == calls
    # another rubric
    other = dict(data, id="task-other")
    (tmp_path / "task-other.yaml").write_text(yaml.safe_dump(other, sort_keys=False))
    with pytest.raises(CalibrationError, match="fitted on rubric 'task-evaluation'"):
        load_rubric(str(tmp_path / "task-other.yaml"))
    # another scale (bands moved)
    moved = json.loads(json.dumps(data))
    moved["bands"] = [{"name": "failing", "min": 0, "max": 49},
                      {"name": "weak", "min": 50, "max": 59},
                      {"name": "acceptable", "min": 60, "max": 74},
                      {"name": "strong", "min": 75, "max": 89},
                      {"name": "excellent", "min": 90, "max": 100}]
    rubric_file.write_text(yaml.safe_dump(moved, sort_keys=False))
    with pytest.raises(CalibrationError, match="another scale"):
        load_rubric(str(rubric_file))
    # a missing file names the rubric and the key
    data["calibration"] = "absent.json"
    rubric_file.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(RubricError) as err:
        load_rubric(str(rubric_file))
    assert err.value.where == "calibration"


def test_a_calibration_is_sealed_and_an_edit_or_a_missing_seal_is_refused(
        ws: Ws, tmp_path: Path) -> None:
    """A calibration moves every final score: sealed like a baseline."""
    report = calibrate(Workspace.open(ws.path, env={}), [ws.runs[JUDGE]["run"]["id"]],
                       ws.path / "calib.labels.jsonl", out=tmp_path / "cal.json")
    data = yaml.safe_load((ROOT / "rubrics" / "task-evaluation.yaml").read_text())
    rubric_file = tmp_path / "task-evaluation.yaml"
    rubric_file.write_text(yaml.safe_dump({**data, "calibration": "cal.json"}))
    team, plain = Sealer("s3cr3t-team-key"), report.path.read_text()
    assert set(json.loads(plain)) >= {"digest"} and "seal" not in json.loads(plain)
    assert load_rubric(str(rubric_file)).calibrated is not None
    with pytest.raises(CalibrationError, match="carries no seal"):  # fitted without it
        load_rubric(str(rubric_file), sealer=team)
    report.path.write_text(calibration_text(report.calibration, team))
    for reader in (team, NO_SECRET):  # the seal under the secret, the digest without it
        assert load_rubric(str(rubric_file), sealer=reader).calibrated is not None
    cat = next(iter(report.calibration.categories))
    for text, readers in ((plain, (NO_SECRET,)), (report.path.read_text(), (team, NO_SECRET))):
        edited = json.loads(text)
        edited["categories"][cat]["labels"] += 1  # still a valid map: only the seals tell
        report.path.write_text(json.dumps(edited))
        for reader in readers:
            with pytest.raises(CalibrationError, match="edited by hand") as err:
                load_rubric(str(rubric_file), sealer=reader)
            assert err.value.file == str(report.path) and "judge judges calibrate" in (err.value.fix
                                                                                 or "")


def test_cli_calibrate_prints_held_out_agreement(ws: Ws, tmp_path: Path) -> None:
    run_id = ws.runs[JUDGE]["run"]["id"]
    proc = run_judge(["judges", "calibrate", run_id, "--labels", "calib.labels.jsonl", "--out",
                      str(tmp_path / "c.json"), "--json"], ws.path)
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["judge"] == JUDGE
    for fold in payload["crossValidation"].values():
        assert fold["after"]["meanAbsDiff"] < fold["before"]["meanAbsDiff"]
    bad = run_judge(["judges", "calibrate", run_id, "--labels", "missing.jsonl"], ws.path)
    assert bad.returncode == 2 and "missing.jsonl" in bad.stderr


def test_compare_reads_the_labels_file_beside_the_suite(ws: Ws) -> None:
    runs = [ws.runs[m]["run"]["id"] for m in (PEOPLE, JUDGE)]
    proc = run_judge(["compare", *runs, "--json"], ws.path)
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["humanLabelled"] == CASES
    by = {h["judge"]: h for h in payload["human"]}
    assert len(by) == 2
    mads = sorted(h["aiAll"]["meanAbsDiff"] for h in by.values())
    assert mads[0] < 3 < 15 < mads[1]  # the people's own judge is close, the squeezed far


def test_review_next_export_and_import_from_the_cli(ws: Ws, tmp_path: Path) -> None:
    run_id = ws.runs[JUDGE]["run"]["id"]
    assert run_judge(["review", run_id, "--import", "calib.labels.jsonl"],
                     ws.path).returncode == 0
    again = run_judge(["review", run_id, "--import", "calib.labels.jsonl"], ws.path)
    assert again.returncode == 0 and "0 labels changed" in again.stdout
    out = tmp_path / "out.jsonl"
    assert run_judge(["review", run_id, "--export", "--out", str(out)],
                     ws.path).returncode == 0
    assert out.read_text() == (ws.path / "calib.labels.jsonl").read_text()
    # every case is labelled now: nothing to propose
    nxt = run_judge(["review", run_id, "--next", "5", "--json"], ws.path)
    assert nxt.returncode == 0 and json.loads(nxt.stdout) == []
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"suite": "calib", "case": "case-00", "category": "nope", "reviewer": '
                   '"x", "at": "t", "score": 5}\n')
    refused = run_judge(["review", run_id, "--import", str(bad)], ws.path)
    assert refused.returncode == 2 and "nope" in refused.stderr
