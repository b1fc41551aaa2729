"""`judge rescore`: a stored run under another rubric's weights, bands or blend, no model call.

One run of the example suite through the loopback fake judge, then re-scored several ways;
every re-scored number is checked against the core's own functions.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import EXAMPLE_SUITE, ROOT, load_fake_server, run_judge

from judge.app.runs.diffing import diff_runs
from judge.app.runs.rescoring import rescore_run
from judge.app.runs.stored import show_run
from judge.app.workspace.workspace import Workspace
from judge.core.formats.models import AdvisoryScore, CaseResult, JudgeMeta
from judge.core.formats.rubric import Blend, Rubric, parse_rubric
from judge.core.scoring.rescore import RescoreError, rescore_result
from judge.core.scoring.scoring import (
    band_for,
    compute_final_score,
    compute_overall_score,
    score_case,
)
from judge.system.resources import load_rubric

MODEL = "hosted_vllm/fake-judge"
BASE = yaml.safe_load((ROOT / "rubrics" / "task-evaluation.yaml").read_text())


def _variant(rubric_id: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(BASE))
    data["id"] = rubric_id
    data.update(changes)
    return data


def _weights(data: dict[str, Any], weights: dict[str, float]) -> dict[str, Any]:
    for cat in data["categories"]:
        cat["weight"] = weights[cat["id"]]
    return data


VARIANTS: dict[str, dict[str, Any]] = {
    "task-weights": _weights(_variant("task-weights"), {
        "agentPerformance": 0.5, "taskOutcomeQuality": 0.3, "processCompliance": 0.2}),
    "task-bands": _variant("task-bands", pass_score=65, bands=[
        {"name": "failing", "min": 0, "max": 49}, {"name": "weak", "min": 50, "max": 64},
        {"name": "acceptable", "min": 65, "max": 79}, {"name": "strong", "min": 80, "max": 91},
        {"name": "excellent", "min": 92, "max": 100}]),
    "task-blend": _variant("task-blend", blend={"deterministic": 0.5, "ai": 0.5}),
}


class Ws:
    """The shared workspace: one judged run, the fake server that judged it."""

    def __init__(self, path: Path, server: Any, run: dict[str, Any]) -> None:
        self.path, self.server, self.run = path, server, run
        self.run_id: str = run["run"]["id"]
        self.cases: dict[str, Any] = {c["id"]: c for c in run["cases"]}


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ws]:
    path = tmp_path_factory.mktemp("rescore")
    shutil.copy(EXAMPLE_SUITE, path / "suite.yaml")
    (path / "rubrics").mkdir()
    for rid, data in VARIANTS.items():
        (path / "rubrics" / f"{rid}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    server = load_fake_server().start_in_thread(latency_ms=0, seed=7)
    try:
        proc = run_judge(["run", "suite.yaml", "--model", MODEL, "--api-base",
                          f"{server.base_url}/v1", "--json"], path)
        assert proc.returncode == 0, proc.stderr
        run = json.loads(proc.stdout)
        assert all(c["status"] == "scored" for c in run["cases"])
        yield Ws(path, server, run)
    finally:
        server.stop()


def _rescore(ws: Ws, rubric: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Re-score the shared run; returns the ``--json`` payload and the new run's cases."""
    before = ws.server.stats()["requests"]
    workspace = Workspace.open(ws.path, env={})
    report = rescore_run(workspace, ws.run_id, rubric)
    payload = report.public()
    assert payload["modelCalls"] == 0 and payload["rescoredFrom"] == ws.run_id
    assert ws.server.stats()["requests"] == before  # no request reached the judge
    view = show_run(workspace, report.run.id)
    cases = {c.id: c.model_dump(mode="json") for c in view.cases}
    assert set(cases) == set(ws.cases)
    # Moved = changed by the rule `judge diff` counts by, between the same two runs.
    diff = diff_runs(workspace, ws.run_id, report.run.id)
    assert payload["casesMoved"] == diff.changed
    # What moved is listed, not only counted: the cases `judge diff` lists.
    assert [m["id"] for m in payload["moved"]] == [c.id for c in diff.cases]
    for move in payload["moved"]:
        assert move["overall"] == [ws.cases[move["id"]]["overallScore"],
                                   cases[move["id"]]["overallScore"]]
    return payload, cases


def _finals(case: dict[str, Any]) -> dict[str, int]:
    return {c["category"]: c["finalScore"] for c in case["categoryScores"]}


def test_weight_change_recomputes_overall_without_a_call(ws: Ws) -> None:
    rubric = load_rubric("task-weights", ws.path)
    payload, cases = _rescore(ws, "task-weights")
    assert payload["casesMoved"] > 0
    assert payload["run"]["totals"]["calls"] == 0
    moved = 0
    for cid, new in cases.items():
        old = ws.cases[cid]
        assert new["status"] == "scored"
        assert _finals(new) == _finals(old)  # weights do not touch the finals
        expected = compute_overall_score(_finals(old), rubric)
        assert new["overallScore"] == expected, cid
        assert new["band"] == band_for(expected, rubric.bands)
        assert new["passed"] == (expected >= rubric.pass_score)
        assert [c["weight"] for c in new["categoryScores"]] == [0.5, 0.3, 0.2]
        # The judge's inputs and its metadata are kept as they were.
        for a, b in zip(old["categoryScores"], new["categoryScores"], strict=True):
            assert (a["aiScore"], a["deterministicScore"], a["rationale"], a["evidence"]) == \
                (b["aiScore"], b["deterministicScore"], b["rationale"], b["evidence"])
        assert new["judge"] == old["judge"]
        moved += (new["overallScore"], new["band"], new["passed"]) != \
            (old["overallScore"], old["band"], old["passed"])
    assert payload["casesMoved"] == moved

    history = run_judge(["runs", "list", "--json"], ws.path)
    assert history.returncode == 0, history.stderr
    entry = next(r for r in json.loads(history.stdout) if r["id"] == payload["run"]["id"])
    assert entry["rubric"] == "task-weights"
    assert entry["settings"]["rescoredFrom"] == ws.run_id
    assert entry["status"] == "complete"


def test_band_shift_rebands_and_repasses(ws: Ws) -> None:
    rubric = load_rubric("task-bands", ws.path)
    payload, cases = _rescore(ws, "task-bands")
    for cid, new in cases.items():
        old = ws.cases[cid]
        assert new["overallScore"] == old["overallScore"] == \
            compute_overall_score(_finals(old), rubric)
        assert new["band"] == band_for(new["overallScore"], rubric.bands)
        assert new["passed"] == (new["overallScore"] >= 65)
        for cat in new["categoryScores"]:
            assert cat["band"] == band_for(cat["finalScore"], rubric.bands)
    # Changed: band or pass/fail (the overall stays), one rule for rescore and diff.
    assert payload["casesMoved"] == sum(
        (cases[c]["band"], cases[c]["passed"]) != (ws.cases[c]["band"], ws.cases[c]["passed"])
        for c in cases)


def test_blend_change_recomputes_finals(ws: Ws) -> None:
    rubric = load_rubric("task-blend", ws.path)
    _payload, cases = _rescore(ws, "task-blend")
    blend = Blend(deterministic=0.5, ai=0.5)
    blended = 0
    for cid, new in cases.items():
        for cat in new["categoryScores"]:
            det, ai = cat["deterministicScore"], cat["aiScore"]
            if det is not None and ai is not None:
                assert cat["rule"] == "blend"
                assert cat["finalScore"] == compute_final_score(det, ai, blend), (cid, cat)
                blended += 1
            else:  # the deterministic fixtures: no AI score, the signal stands alone
                assert ws.cases[cid]["judgedBy"] == "deterministic"
                assert cat["finalScore"] == det and cat["rule"] == "deterministic_only"
        assert new["overallScore"] == compute_overall_score(_finals(new), rubric)
    assert blended > 0


def test_different_categories_exit_2_naming_them(ws: Ws) -> None:
    data = _variant("task-renamed")
    data["categories"][2]["id"] = "process"
    data.get("signals", {}).pop("processCompliance", None)  # collect's rules name categories
    (ws.path / "rubrics" / "task-renamed.yaml").write_text(yaml.safe_dump(data))
    runs_before = len(json.loads(run_judge(["runs", "list", "--json"], ws.path).stdout))
    proc = run_judge(["rescore", ws.run_id, "--rubric", "task-renamed", "--json"], ws.path)
    assert proc.returncode == 2
    assert proc.stdout == ""
    for name in ("processCompliance", "'process'", "task-renamed"):
        assert name in proc.stderr, proc.stderr
    assert "same categories" in proc.stderr
    assert len(json.loads(run_judge(["runs", "list", "--json"], ws.path).stdout)) == runs_before


def test_rescore_door_prints_the_report(ws: Ws) -> None:
    proc = run_judge(["rescore", ws.run_id, "--rubric", "task-weights", "--json"], ws.path)
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["rescoredFrom"] == ws.run_id and payload["run"]["rubric"] == "task-weights"
    human = run_judge(["rescore", ws.run_id, "--rubric", "task-weights"], ws.path)
    assert human.returncode == 0, human.stderr
    moved = payload["casesMoved"]
    assert (f"0 model calls, {moved} case{'' if moved == 1 else 's'} changed score, band or "
            "pass" in " ".join(human.stdout.split()))


# ── rescore_result on handcrafted results ───────────────────────────────────────────────

META = JudgeMeta(model="m", temperature=0, seed=42, template_id="judge", template_hash="t",
                 rubric_hash="r", cache_key="k", cached=False)


def _result(rubric: Rubric, det: Mapping[str, int | None], adv: dict[str, AdvisoryScore],
            **extra: Any) -> CaseResult:
    score = score_case(rubric, det, adv)
    return CaseResult(id="c1", status=score.status, overall_score=score.overall_score,
                      band=score.band, passed=score.passed, category_scores=score.category_scores,
                      reason=score.reason, judge=META, **extra)


def _rubric_from(base: str, **changes: Any) -> Rubric:
    data = yaml.safe_load((ROOT / "rubrics" / f"{base}.yaml").read_text())
    data.update(changes)
    return parse_rubric(yaml.safe_dump(data), f"<{base} variant>")


def test_rescore_result_scores_rubric() -> None:
    old = load_rubric("task-evaluation")
    det = {"agentPerformance": 90, "taskOutcomeQuality": 40, "processCompliance": 71}
    adv = {"agentPerformance": AdvisoryScore(score=80, rationale="a", evidence=("x:1",)),
           "taskOutcomeQuality": AdvisoryScore(score=35),
           "processCompliance": AdvisoryScore(score=60)}
    stored = _result(old, det, adv, tags=("t",), complexity="simple")
    new_rubric = _rubric_from("task-evaluation", blend={"deterministic": 0.5, "ai": 0.5},
                              pass_score=70)
    new = rescore_result(stored, new_rubric)
    blend = Blend(deterministic=0.5, ai=0.5)
    finals = {c: compute_final_score(det[c], adv[c].score, blend) for c in det}
    assert {c.category: c.final_score for c in new.category_scores} == finals
    assert new.overall_score == compute_overall_score(finals, new_rubric)
    assert new.passed == (new.overall_score >= 70)
    assert new.category_scores[0].rationale == "a" and new.category_scores[0].evidence == ("x:1",)
    assert (new.id, new.judge, new.tags, new.complexity) == ("c1", META, ("t",), "simple")
    # Under its own rubric a result is a fixed point.
    assert rescore_result(stored, old) == stored


def test_rescore_result_levels_remapped() -> None:
    old = load_rubric("research-agent")
    levels = {"factual_accuracy": "good", "completeness": "excellent",
              "citation_accuracy": "acceptable", "source_quality": "poor",
              "tool_efficiency": "good"}
    adv = {c: AdvisoryScore(score=round(float(old.level_value(lv)) * 100), level=lv)
           for c, lv in levels.items()}
    stored = _result(old, dict.fromkeys(levels), adv)
    assert stored.status == "scored"
    new_levels = [{"name": "excellent", "value": 0.95}, {"name": "good", "value": 0.7},
                  {"name": "acceptable", "value": 0.5}, {"name": "poor", "value": 0.25},
                  {"name": "failed", "value": 0.0}]
    new_rubric = _rubric_from("research-agent", levels=new_levels)
    new = rescore_result(stored, new_rubric)
    value = {"excellent": 95, "good": 70, "acceptable": 50, "poor": 25}
    expected_ai = {c: value[lv] for c, lv in levels.items()}
    assert {c.category: c.ai_score for c in new.category_scores} == expected_ai
    assert {c.category: c.final_score for c in new.category_scores} == expected_ai
    assert {c.category: c.level for c in new.category_scores} == levels
    assert new.overall_score == compute_overall_score(expected_ai, new_rubric)
    assert new.overall_score != stored.overall_score
    assert new.passed == (new.overall_score >= 70)

    # A level the new rubric does not know cannot be mapped.
    renamed = [dict(lv, name="fine") if lv["name"] == "good" else lv for lv in new_levels]
    cats = yaml.safe_load((ROOT / "rubrics" / "research-agent.yaml").read_text())["categories"]
    for cat in cats:
        cat["anchors"] = {("fine" if k == "good" else k): v for k, v in cat["anchors"].items()}
    with pytest.raises(RescoreError, match="'good'"):
        rescore_result(stored, _rubric_from("research-agent", levels=renamed, categories=cats))


def test_rescore_result_different_categories() -> None:
    old = load_rubric("task-evaluation")
    det = {"agentPerformance": 90, "taskOutcomeQuality": 40, "processCompliance": 71}
    stored = _result(old, det, {c: AdvisoryScore(score=50) for c in det})
    with pytest.raises(RescoreError) as info:
        rescore_result(stored, load_rubric("research-agent"))
    assert "processCompliance" in str(info.value) and "factual_accuracy" in str(info.value)


def test_rescore_result_leaves_unjudged_results_alone() -> None:
    old = load_rubric("task-evaluation")
    new_rubric = _rubric_from("task-evaluation", blend={"deterministic": 0.5, "ai": 0.5})
    cats = tuple(
        c.model_copy(update={"ai_score": None, "final_score": None, "band": None,
                             "rule": "unscored"})
        for c in _result(old, {"agentPerformance": 90, "taskOutcomeQuality": 40,
                               "processCompliance": 71},
                         {}).category_scores)
    miss = CaseResult(id="m", status="cache_miss", reason="not in the cache")
    # The judge answered but never validly (meta kept), and the judge never answered at all
    # (a provider error on the first call leaves no meta): both stay unscored.
    invalid = CaseResult(id="u1", status="unscored", category_scores=cats, judge=META,
                         reason="invalid verdict after 1 repair turn(s): x")
    provider = CaseResult(id="u2", status="unscored", category_scores=cats, judge=None,
                          reason="provider error: boom")
    for result in (miss, invalid, provider):
        assert rescore_result(result, new_rubric) is result
