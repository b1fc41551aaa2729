"""Panels of judges: the exact median/mean per category, scored by the core, as the headline."""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLE_SUITE, run_judge

from judge.core.formats.models import CaseResult, CategoryScore, JudgeMeta
from judge.core.scoring.exact import round_half_up
from judge.core.scoring.panel import case_aggregates, combine, exact_median, headline, stability
from judge.core.scoring.scoring import compute_final_score
from judge.system.resources import load_rubric

BASE = "hosted_vllm/fake-judge"
PLUS = "hosted_vllm/fake-judge+15"
PLUS40 = "hosted_vllm/fake-judge+40"
RUBRIC = load_rubric("task-evaluation")


# -- pure ---------------------------------------------------------------------------------

def test_median_odd_count_is_the_middle_value() -> None:
    assert combine([9, 1, 5], "median") == 5
    assert combine([7], "median") == 7
    assert combine([0, 0, 100], "median") == 0
    assert exact_median([3, 1, 2, 10, 4]) == 3


def test_median_even_count_is_the_exact_mean_of_the_middle_two_rounded_half_up() -> None:
    assert exact_median([10, 13]) == Fraction(23, 2)
    assert combine([10, 13], "median") == 12      # 11.5 -> 12, not banker's 12/11
    assert combine([76, 77], "median") == 77      # 76.5 -> 77 like Math.round
    assert combine([1, 2], "median") == 2         # 1.5 -> 2
    assert combine([2, 3], "median") == 3         # 2.5 -> 3 (round() would give 2)
    assert combine([0, 1, 2, 100], "median") == 2  # middle 1, 2 -> 1.5 -> 2
    assert combine([4, 4, 6, 6], "median") == 5


def test_mean_is_exact_and_rounds_half_up() -> None:
    assert combine([0, 0, 100], "mean") == 33     # 33.33
    assert combine([0, 1], "mean") == 1           # 0.5 -> 1
    assert combine([1, 2, 2], "mean") == 2        # 1.67
    assert combine([10, 11, 11, 11], "mean") == 11  # 10.75
    assert combine([2, 3], "mean") == 3           # 2.5 -> 3


def test_combine_refuses_nothing_and_unknown_methods() -> None:
    with pytest.raises(ValueError):
        combine([], "median")
    with pytest.raises(ValueError, match="unknown"):
        combine([1], "mode")


def test_headline_follows_panel_then_samples_then_first_judge() -> None:
    assert headline(["a", "b"], 1, "median") == ("panel:median", 0)
    assert headline(["a", "b"], 3, "mean") == ("panel:mean", 0)
    assert headline(["a"], 3, "median") == ("a", -1)
    assert headline(["a"], 1, "median") == ("a", 0)


def _meta(model: str, sample: int = 0, *, cached: bool = False, tokens: int = 10) -> JudgeMeta:
    return JudgeMeta(model=model, temperature=0.0, seed=42 + sample, sample=sample,
                     template_id="judge", template_hash="t" * 64, rubric_hash="r" * 64,
                     cache_key=f"{model}-{sample}", cached=cached, prompt_tokens=tokens,
                     completion_tokens=1, cost_usd=None)


def _result(model: str, ai: dict[str, int], sample: int = 0, *, cached: bool = False,
            status: str = "scored") -> CaseResult:
    cats = tuple(CategoryScore(category=c.id, deterministic_score=60, ai_score=ai[c.id],
                               final_score=compute_final_score(60, ai[c.id]), weight=c.weight,
                               evidence=(f"e-{model}",))
                 for c in RUBRIC.categories) if ai else ()
    return CaseResult(id="case-1", status=status,
                      overall_score=60 if status == "scored" else None,
                      category_scores=cats if status == "scored" else (),
                      judge=_meta(model, sample, cached=cached),
                      reason=None if status == "scored" else "judge failed")


SIGNALS = {c.id: 60 for c in RUBRIC.categories}
BASE_META = _meta("")


def test_panel_aggregate_scores_the_combined_ai_with_the_core() -> None:
    a = _result("a", {"agentPerformance": 40, "taskOutcomeQuality": 71, "processCompliance": 0},
                cached=True)
    b = _result("b", {"agentPerformance": 55, "taskOutcomeQuality": 80, "processCompliance": 1},
                cached=False)
    (panel,) = case_aggregates({("a", 0): a, ("b", 0): b}, RUBRIC, SIGNALS, BASE_META,
                               models=["a", "b"], samples=1, panel="median",
                               sample_method="mean")
    assert panel.judge is not None
    assert (panel.judge.model, panel.judge.sample, panel.judge.aggregate) == \
        ("panel:median", 0, "median")
    assert panel.judge.members == ("a#0", "b#0")
    assert panel.judge.cached is False            # one member paid
    assert panel.judge.prompt_tokens == 20         # summed
    assert panel.judge.cache_key == ""
    by = {c.category: c for c in panel.category_scores}
    assert by["agentPerformance"].ai_score == 48   # 47.5 -> 48
    assert by["taskOutcomeQuality"].ai_score == 76  # 75.5 -> 76
    assert by["processCompliance"].ai_score == 1   # 0.5 -> 1
    for c in panel.category_scores:
        assert c.final_score == compute_final_score(60, c.ai_score or 0)
        assert c.rationale.startswith("panel median of 2 judges: a ")
        assert set(c.evidence) == {"e-a", "e-b"}
    assert panel.spread is None                   # no samples: no measured noise


def test_aggregate_of_a_failed_member_is_unscored_and_of_a_miss_is_a_miss() -> None:
    ok = _result("a", {c.id: 50 for c in RUBRIC.categories})
    bad = _result("b", {}, status="unscored")
    (panel,) = case_aggregates({("a", 0): ok, ("b", 0): bad}, RUBRIC, SIGNALS, BASE_META,
                               models=["a", "b"], samples=1, panel="median",
                               sample_method="mean")
    assert panel.status == "unscored" and panel.overall_score is None
    assert "b#0 is unscored" in (panel.reason or "")
    miss = CaseResult(id="case-1", status="cache_miss", reason="not in the cache")
    (panel,) = case_aggregates({("a", 0): ok, ("b", 0): miss}, RUBRIC, SIGNALS, BASE_META,
                               models=["a", "b"], samples=1, panel="mean",
                               sample_method="mean")
    assert panel.status == "cache_miss"
    assert panel.judge is not None and panel.judge.model == "panel:mean"


def test_sample_aggregate_keeps_the_spread_and_the_panel_takes_the_largest() -> None:
    judged = {}
    for s, (x, y) in enumerate([(10, 90), (30, 50), (20, 70)]):
        judged[("a", s)] = _result("a", {"agentPerformance": x, "taskOutcomeQuality": y,
                                          "processCompliance": 50}, s)
        judged[("b", s)] = _result("b", {"agentPerformance": x + 2, "taskOutcomeQuality": y,
                                          "processCompliance": 50}, s)
    agg_a, agg_b, panel = case_aggregates(judged, RUBRIC, SIGNALS, BASE_META,
                                          models=["a", "b"], samples=3, panel="median",
                                          sample_method="median")
    assert agg_a.judge is not None and (agg_a.judge.model, agg_a.judge.sample) == ("a", -1)
    cats = {c.category: c for c in agg_a.category_scores}
    assert cats["agentPerformance"].ai_score == 20 and cats["agentPerformance"].spread == 20
    assert cats["taskOutcomeQuality"].ai_score == 70 and cats["taskOutcomeQuality"].spread == 40
    assert cats["processCompliance"].spread == 0
    assert cats["agentPerformance"].rationale == "median of 3 samples: 10, 30, 20"
    assert agg_a.spread == 0  # _result gives every sample overall 60
    assert panel.judge is not None and panel.judge.members == ("a#-1", "b#-1")
    pcats = {c.category: c for c in panel.category_scores}
    assert pcats["agentPerformance"].ai_score == 21   # median of 20 and 22
    assert pcats["taskOutcomeQuality"].spread == 40  # largest member spread
    report = stability([*judged.values(), agg_a, agg_b, panel])
    assert report.cases == 1 and report.stable == 1 and report.median_spread == 0.0


# -- end to end ---------------------------------------------------------------------------

def _run(workspace: Path, url: str, *models: str, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    shutil.copy(EXAMPLE_SUITE, workspace / "suite.yaml")
    args = ["run", "suite.yaml", "--api-base", f"{url}/v1", "--json", *extra]
    for m in models:
        args += ["--model", m]
    proc = run_judge(args, workspace)
    assert proc.returncode == 0, proc.stderr
    payload: dict[str, Any] = json.loads(proc.stdout)
    return payload


def _by_case(payload: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for case in payload["cases"]:
        model = case["judge"]["model"] if case["judge"] else ""
        out[case["id"]][model] = case
    return out


def _ai(case: dict[str, Any]) -> dict[str, int]:
    return {c["category"]: c["aiScore"] for c in case["categoryScores"]}


def _headline_summary(results: list[dict[str, Any]]) -> tuple[int, Fraction]:
    scored = [r for r in results if r["status"] == "scored"]
    return len(scored), Fraction(sum(r["overallScore"] for r in scored), len(scored))


def test_panel_median_of_two_judges_heads_the_run(fake_server: Any, workspace: Path) -> None:
    payload = _run(workspace, fake_server.base_url, BASE, PLUS)
    assert payload["run"]["panel"] == "median"
    by_case = _by_case(payload)
    heads = []
    judged = 0
    for case_id, results in by_case.items():
        if "" in results:                          # a deterministic case: no judge, no panel
            assert set(results) == {""}
            heads.append(results[""])
            continue
        judged += 1
        assert set(results) == {BASE, PLUS, "panel:median"}, case_id
        a, b, panel = _ai(results[BASE]), _ai(results[PLUS]), _ai(results["panel:median"])
        assert a != b                              # the +15 judge really differs
        for cat, value in panel.items():
            assert value == round_half_up(Fraction(a[cat] + b[cat], 2)), (case_id, cat)
        p = results["panel:median"]
        assert p["judge"]["aggregate"] == "median" and p["judge"]["sample"] == 0
        assert p["judge"]["members"] == [f"{BASE}#0", f"{PLUS}#0"]
        for c in p["categoryScores"]:
            assert c["finalScore"] == compute_final_score(c["deterministicScore"], c["aiScore"])
        heads.append(p)
    assert judged >= 10
    assert fake_server.stats()["requests"] == 2 * judged
    summary = payload["summary"]
    assert summary["cases"] == len(by_case)
    count, mean = _headline_summary(heads)
    assert summary["scored"] == count
    assert summary["meanOverall"] == float(Fraction(round_half_up(mean * 100), 100))
    # Per-judge summaries are still given, and differ from the panel's.
    assert set(payload["summaries"]) == {BASE, PLUS}
    # The baseline recorded from this run holds the panel's scores.
    baseline = json.loads((workspace / "baselines" /
                           f"{payload['run']['suite']}.json").read_text())
    for case_id, case in baseline["cases"].items():
        expected = by_case[case_id].get("panel:median") or by_case[case_id][""]
        assert case["overallScore"] == expected["overallScore"], case_id
    # The human summary prints each judge and says where the scores come from.
    proc = run_judge(["run", "suite.yaml", "--api-base", f"{fake_server.base_url}/v1",
                      "--model", BASE, "--model", PLUS], workspace)
    assert proc.returncode == 0, proc.stderr
    assert "scores from panel:median" in proc.stdout
    assert f"judge {BASE}:" in proc.stdout and f"judge {PLUS}:" in proc.stdout
    n = 2 * judged
    assert f"cache: {n} of {n} judgments reused (saved {n} calls), 0 judged anew" in proc.stdout


def test_panel_mean_of_three_judges(fake_server: Any, workspace: Path) -> None:
    payload = _run(workspace, fake_server.base_url, BASE, PLUS, PLUS40,
                   extra=("--panel", "mean", "--no-check"))
    assert payload["run"]["panel"] == "mean"
    for case_id, results in _by_case(payload).items():
        if "" in results:
            continue
        members = [_ai(results[m]) for m in (BASE, PLUS, PLUS40)]
        panel = _ai(results["panel:mean"])
        for cat, value in panel.items():
            total = sum(m[cat] for m in members)
            assert value == round_half_up(Fraction(total, 3)), (case_id, cat)


def test_panel_median_of_three_is_the_middle_judge(fake_server: Any, workspace: Path) -> None:
    payload = _run(workspace, fake_server.base_url, BASE, PLUS, PLUS40, extra=("--no-check",))
    for results in _by_case(payload).values():
        if "" in results:
            continue
        members = [_ai(results[m]) for m in (BASE, PLUS, PLUS40)]
        for cat, value in _ai(results["panel:median"]).items():
            assert value == sorted(m[cat] for m in members)[1]
