"""``judge diff RUN_A RUN_B``: what moved, case by case, and what differs between the runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from conftest import EXAMPLE_SUITE, judge_env, run_judge

from judge.app.runs.diffing import build_diff, diff_runs
from judge.app.workspace.workspace import Workspace
from judge.core.formats.models import CaseResult, CategoryScore, RunInfo
from judge.core.scoring.result_changes import case_change, case_changed
from judge.system.resources import shipped_dir

MODEL = "hosted_vllm/fake-judge"


def _run(workspace: Path, url: str, model: str = MODEL) -> dict[str, Any]:
    proc = run_judge(["run", "suite.yaml", "--model", model, "--api-base", f"{url}/v1",
                      "--no-check", "--json"], workspace)
    assert proc.returncode == 0, proc.stderr
    payload: dict[str, Any] = json.loads(proc.stdout)
    return payload


def _diff(workspace: Path, a: str, b: str, *, everything: bool = False) -> dict[str, Any]:
    ws = Workspace.open(workspace, env={})
    report: dict[str, Any] = diff_runs(ws, a, b, everything=everything).model_dump(mode="json")
    return report


def _ai(payload: dict[str, Any]) -> dict[str, dict[str, int]]:
    return {c["id"]: {s["category"]: s["aiScore"] for s in c["categoryScores"]}
            for c in payload["cases"] if c["judgedBy"] == "llm"}


def test_diff_after_a_template_edit_lists_what_moved(fake_server: Any, workspace: Path) -> None:
    shutil.copy(EXAMPLE_SUITE, workspace / "suite.yaml")
    before = _run(workspace, fake_server.base_url)
    prompts = workspace / "prompts"
    prompts.mkdir()
    for name in ("judge.md.j2", "evidence.md.j2"):
        shutil.copy(shipped_dir("prompts") / name, prompts / name)
    template = prompts / "judge.md.j2"
    template.write_text(template.read_text().replace("evaluation pipeline",
                                                     "evaluation workflow"))
    after = _run(workspace, fake_server.base_url)
    a_id, b_id = before["run"]["id"], after["run"]["id"]

    report = _diff(workspace, a_id, b_id)
    assert report["a"]["id"] == a_id and report["b"]["id"] == b_id
    assert set(report["differs"]) == {"templateHash"}
    assert report["differs"]["templateHash"] == [before["run"]["templateHash"],
                                                 after["run"]["templateHash"]]
    ai_a, ai_b = _ai(before), _ai(after)
    moved = {case_id for case_id in ai_a if ai_a[case_id] != ai_b[case_id]}
    assert moved  # the fake judge answers differently to a different prompt
    listed = {c["id"] for c in report["cases"]}
    by_a = {c["id"]: c for c in before["cases"]}
    by_b = {c["id"]: c for c in after["cases"]}

    def outcome(case: dict[str, Any]) -> tuple[Any, ...]:
        return case["status"], case["overallScore"], case["band"], case["passed"]

    # Changed: the outcome moved (as `judge rescore` counts); an AI move alone is detail.
    assert listed == {i for i in by_a if outcome(by_a[i]) != outcome(by_b[i])}
    assert report["categoryOnly"] == len(moved - listed)
    # What rationaleChanged counts is listed, case by case.
    assert len(report["rationaleCases"]) == report["rationaleChanged"]
    for case in report["cases"]:
        assert case["changed"] is True
        assert case["overall"] == [by_a[case["id"]]["overallScore"],
                                   by_b[case["id"]]["overallScore"]]
        assert case["band"] == [by_a[case["id"]]["band"], by_b[case["id"]]["band"]]
        assert case["passed"] == [by_a[case["id"]]["passed"], by_b[case["id"]]["passed"]]
        for cat in case["categories"]:
            name = cat["category"]
            assert cat["ai"] == [ai_a.get(case["id"], {}).get(name),
                                 ai_b.get(case["id"], {}).get(name)]
    # Deterministic cases never reach the judge, so they cannot move.
    assert not listed & {c["id"] for c in before["cases"] if c["judgedBy"] == "deterministic"}
    assert report["compared"] == len(before["cases"])
    assert report["changed"] == len(report["cases"])

    everything = _diff(workspace, a_id, b_id, everything=True)
    assert len(everything["cases"]) == report["compared"]
    assert {c["id"] for c in everything["cases"] if c["changed"]} == listed

    # The door prints the operation's JSON, and its table has a pass column.
    shown = run_judge(["diff", a_id, b_id, "--json"], workspace)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == report
    human = run_judge(["diff", a_id, b_id], workspace, env=judge_env(COLUMNS="200"))
    assert human.returncode == 0, human.stderr
    text = " ".join(human.stdout.split())
    assert "templateHash" in text
    # Piped: plain lines, the header's first cells as the table's.
    header = next(line for line in human.stdout.splitlines() if line.startswith("case"))
    assert header.split()[:4] == ["case", "overall", "band", "pass"]
    # The counts first; a line per changed case; each category's scores: --detail.
    lines = human.stdout.splitlines()
    assert lines[0].startswith(f"{report['changed']} of {report['compared']} cases changed")
    assert lines[1].startswith("overall scores: ")
    assert header.split() == ["case", "overall", "band", "pass"] and "--detail" in lines[-1]
    assert len(lines) <= 6 + report["changed"]
    detail = run_judge(["diff", a_id, b_id, "--detail"], workspace)
    assert detail.stdout.splitlines()[0] == lines[0]
    assert any(line.split()[:5] == ["case", "overall", "band", "pass", "category"]
               for line in detail.stdout.splitlines())


def test_identical_runs_have_no_changed_cases(fake_server: Any, workspace: Path) -> None:
    shutil.copy(EXAMPLE_SUITE, workspace / "suite.yaml")
    first = _run(workspace, fake_server.base_url)
    second = _run(workspace, fake_server.base_url)
    report = _diff(workspace, first["run"]["id"], second["run"]["id"])
    assert report["differs"] == {}
    assert report["changed"] == 0 and report["cases"] == []
    assert report["compared"] == len(first["cases"])
    human = run_judge(["diff", first["run"]["id"], second["run"]["id"]], workspace)
    assert human.returncode == 0
    assert "same suite, rubric, template, judges and seed" in human.stdout


def test_diff_of_different_judges_names_the_models(fake_server: Any, workspace: Path) -> None:
    shutil.copy(EXAMPLE_SUITE, workspace / "suite.yaml")
    first = _run(workspace, fake_server.base_url)
    second = _run(workspace, fake_server.base_url, "hosted_vllm/fake-judge+15")
    report = _diff(workspace, first["run"]["id"], second["run"]["id"])
    assert report["differs"]["models"] == [[MODEL], ["hosted_vllm/fake-judge+15"]]
    assert report["changed"] > 0


def test_unknown_run_exits_2(workspace: Path) -> None:
    done = run_judge(["diff", "nope", "nada", "--json"], workspace)  # no store here at all
    assert done.returncode == 2 and done.stdout == "" and "no run store at" in done.stderr
    assert not any(workspace.iterdir())


# -- one notion of "changed", on handcrafted results ---------------------------------------

RUN = RunInfo(id="r1", suite="s", rubric="r", rubric_hash="h", models=("m",), seed=42,
              temperature=0, template_id="t", template_hash="th", created_at="2026-01-01T00:00:00Z")


def _result(overall: int | None, band: str | None, passed: bool | None, ai: int | None = 70,
            status: str = "scored", rationale: str = "fine") -> CaseResult:
    cat = CategoryScore(category="c", ai_score=ai, final_score=overall, weight=1.0,
                        rationale=rationale)
    return CaseResult.model_validate({"id": "x", "status": status, "overallScore": overall,
                                      "band": band, "passed": passed,
                                      "categoryScores": [cat.model_dump()]})


def test_a_case_changed_when_its_score_band_or_pass_differs() -> None:
    base = _result(70, "acceptable", True)
    assert not case_changed(base, base)
    for other in (_result(71, "acceptable", True), _result(70, "strong", True),
                  _result(70, "acceptable", False),
                  _result(None, None, None, ai=None, status="unscored")):
        assert case_changed(base, other) and case_change(base, other).changed
    # Only the pass/fail flipped (another pass mark): changed for rescore and diff alike.
    flipped = build_diff(RUN, [base], RUN, [_result(70, "acceptable", False)])
    assert flipped.changed == 1 and flipped.cases[0].passed == (True, False)
    # A category's AI score moved but the outcome did not: detail, not a change.
    detail = _result(70, "acceptable", True, ai=75)
    assert not case_changed(base, detail) and case_change(base, detail).detail_only
    quiet = build_diff(RUN, [base], RUN, [detail])
    assert (quiet.changed, quiet.category_only, quiet.cases) == (0, 1, ())
    (row,) = build_diff(RUN, [base], RUN, [detail], everything=True).cases
    assert row.categories[0].changed and not row.changed
    # A rationale alone never changes anything.
    worded = build_diff(RUN, [base], RUN, [_result(70, "acceptable", True, rationale="good")])
    assert (worded.changed, worded.category_only, worded.rationale_changed) == (0, 0, 1)
