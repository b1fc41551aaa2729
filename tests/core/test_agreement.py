"""Agreement statistics against synthetic judges of known behaviour.

Sixty cases carry human labels spread over 0..100. Judge A says exactly what the humans said,
judge B adds 15 (clamped to 100), judge C answers at random (seeded). The statistics must
come out as those behaviours imply, within the tolerances stated below.
"""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction
from typing import Any

import pytest

from judge.core.formats.models import CaseResult, CategoryScore, JudgeMeta
from judge.core.formats.rubric import DEFAULT_BANDS, Band
from judge.core.formats.suite import HumanLabel
from judge.core.scoring.exact import round_half_up
from judge.core.scoring.scoring import band_for
from judge.core.stats.agreement import (
    Comparison,
    PairStats,
    band_index,
    compare_runs,
    krippendorff_alpha,
    pairwise_agreement,
)

N_CASES = 60
WEIGHTS = {"quality": Fraction(3, 5), "process": Fraction(2, 5)}
BIAS = 15

# Tolerances. A judge that copies the humans agrees perfectly: no tolerance at all.
PERFECT = 1.0
# +15 keeps the order of every case, but clamping at 100 ties the top ones: ρ stays near 1.
MIN_RHO_BIASED = 0.95
# A clamped +15 shifts the mean by less than 15, never by less than 12 on this spread.
BIAS_RANGE = (12.0, 15.0)
# A random judge on 60 cases: |ρ| and κ of chance are about 1/sqrt(59) ≈ 0.13 (one standard
# error); 0.35 is well outside chance for a real agreement and well inside for noise.
MAX_CHANCE_AGREEMENT = 0.35
# Three judges of which two are identical and one is biased still agree well on α ...
MIN_ALPHA_AGREEING = 0.80
# ... and replacing the copy with a random judge costs at least this much α.
MIN_ALPHA_DROP = 0.20


def _human_scores() -> list[dict[str, int]]:
    """Per case, the human's category scores: spread evenly over 0..100, not in lock-step."""
    rows = []
    for i in range(N_CASES):
        quality = round_half_up(Fraction(100 * i, N_CASES - 1))
        process = (quality * 7 + 13) % 101
        rows.append({"quality": quality, "process": process})
    return rows


def _overall(scores: dict[str, int]) -> int:
    return round_half_up(sum((WEIGHTS[c] * s for c, s in scores.items()), Fraction(0)))


def _result(case_id: str, scores: dict[str, int], model: str, *,
            status: str = "scored") -> CaseResult:
    """A judged case whose finals are the AI scores (an ai-only rubric)."""
    if status != "scored":
        return CaseResult(id=case_id, status=status, reason="test",
                          judge=_meta(model))
    overall = _overall(scores)
    cats = tuple(CategoryScore(category=c, ai_score=s, final_score=s, weight=float(WEIGHTS[c]),
                               band=band_for(s), rule="ai_only") for c, s in scores.items())
    return CaseResult(id=case_id, status="scored", overall_score=overall,
                      band=band_for(overall), passed=overall >= 60, category_scores=cats,
                      judge=_meta(model))


def _meta(model: str) -> JudgeMeta:
    return JudgeMeta(model=model, temperature=0, seed=42, template_id="judge",
                     template_hash="t", rubric_hash="r", cache_key="k", cached=False)


HUMAN = _human_scores()
IDS = [f"case-{i:02d}" for i in range(N_CASES)]
A = HUMAN
B = [{c: min(100, s + BIAS) for c, s in row.items()} for row in HUMAN]
_rng = random.Random(1)
C = [{c: _rng.randint(0, 100) for c in row} for row in HUMAN]


def _results(rows: list[dict[str, int]], model: str, start: int = 0) -> list[CaseResult]:
    ids = IDS[start:start + len(rows)]
    return [_result(i, row, model) for i, row in zip(ids, rows, strict=True)]


def _labels() -> dict[str, HumanLabel]:
    return {i: HumanLabel(overall=_overall(row), band=band_for(_overall(row)),
                          categories=row) for i, row in zip(IDS, HUMAN, strict=True)}


def _pooled(rows: list[dict[str, int]]) -> list[int]:
    return [row[c] for row in rows for c in WEIGHTS]


def _no_nan(model: Any) -> None:
    text = model.model_dump_json()
    assert "NaN" not in text and "Infinity" not in text

    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in JSON")

    json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def abc() -> Comparison:
    return compare_runs({"A": _results(A, "a"), "B": _results(B, "b"), "C": _results(C, "c")},
                        human=_labels())


def _pair(comparison: Comparison, a: str, b: str) -> Any:
    return next(p for p in comparison.pairs if (p.judge_a, p.judge_b) == (a, b))


def test_band_index_is_ordinal() -> None:
    assert [band_index(b.name) for b in DEFAULT_BANDS] == [0, 1, 2, 3, 4]
    shuffled = tuple(reversed(DEFAULT_BANDS))
    assert band_index("failing", shuffled) == 0 and band_index("excellent", shuffled) == 4
    with pytest.raises(ValueError, match="not on the scale"):
        band_index("superb")


def test_judge_that_copies_humans_agrees_perfectly(abc: Comparison) -> None:
    human_a = next(h for h in abc.human if h.judge == "A")
    assert human_a.labelled == N_CASES
    for stats in (human_a.overall, human_a.ai_all,
                  *(c.ai for c in human_a.categories), *(c.final for c in human_a.categories)):
        assert stats.n == (N_CASES * len(WEIGHTS) if stats is human_a.ai_all else N_CASES)
        assert stats.weighted_kappa == PERFECT
        assert stats.spearman_rho == pytest.approx(PERFECT)
        assert stats.kendall_tau == pytest.approx(PERFECT)
        assert stats.mean_abs_diff == 0 and stats.mean_diff == 0
        assert stats.exact_band_agreement == 1
    assert "agree closely" in human_a.verdict


def test_plus_15_judge_shows_a_clamped_bias_and_the_same_ranking(abc: Comparison) -> None:
    pair = _pair(abc, "A", "B")
    assert pair.aligned == N_CASES and pair.skipped == {"missing": 0, "cache_miss": 0,
                                                         "unscored": 0}
    a, b = _pooled(A), _pooled(B)
    expected = Fraction(sum(y - x for x, y in zip(a, b, strict=True)), len(a))
    assert BIAS_RANGE[0] <= expected < BIAS_RANGE[1]  # clamping at 100 takes some away
    assert pair.ai_all.mean_diff == pytest.approx(float(expected), abs=1e-12)
    assert pair.ai_all.mean_abs_diff == pytest.approx(float(expected), abs=1e-12)
    assert pair.ai_all.spearman_rho is not None and pair.ai_all.spearman_rho >= MIN_RHO_BIASED
    for cat in pair.categories:
        col_a = [row[cat.category] for row in A]
        col_b = [row[cat.category] for row in B]
        mean = Fraction(sum(y - x for x, y in zip(col_a, col_b, strict=True)), N_CASES)
        assert cat.ai.mean_diff == pytest.approx(float(mean), abs=1e-12)
        assert BIAS_RANGE[0] <= cat.ai.mean_diff <= BIAS_RANGE[1]
        assert cat.ai.spearman_rho is not None and cat.ai.spearman_rho >= MIN_RHO_BIASED
    assert "points higher" in pair.verdict and "B scores" in pair.verdict
    # B against the humans is A's bias again, since A is the humans.
    human_b = next(h for h in abc.human if h.judge == "B")
    assert human_b.ai_all.mean_diff == pytest.approx(float(expected), abs=1e-12)


def test_band_flips_of_plus_15_are_listed_exactly(abc: Comparison) -> None:
    pair = _pair(abc, "A", "B")
    expected = []
    for case_id, ra, rb in zip(IDS, A, B, strict=True):
        oa, ob = _overall(ra), _overall(rb)
        if band_for(oa) != band_for(ob):
            expected.append((case_id, band_for(oa), band_for(ob), oa, ob))
    got = [(f.case_id, f.band_a, f.band_b, f.overall_a, f.overall_b) for f in pair.band_flips]
    assert got == expected and len(expected) > 10


def test_random_judge_does_not_agree(abc: Comparison) -> None:
    pair = _pair(abc, "A", "C")
    for stats in (pair.ai_all, *(c.ai for c in pair.categories)):
        assert stats.spearman_rho is not None and abs(stats.spearman_rho) <= MAX_CHANCE_AGREEMENT
        assert stats.weighted_kappa is not None and stats.weighted_kappa <= MAX_CHANCE_AGREEMENT
    assert "disagree" in pair.verdict


def test_krippendorff_alpha_separates_agreeing_from_random_panels(abc: Comparison) -> None:
    agreeing = compare_runs({"A": _results(A, "a"), "A2": _results(A, "a2"),
                             "B": _results(B, "b")})
    assert agreeing.alpha is not None and abc.alpha is not None
    assert agreeing.alpha.ai_all is not None and abc.alpha.ai_all is not None
    assert agreeing.alpha.ai_all >= MIN_ALPHA_AGREEING
    assert abc.alpha.ai_all <= agreeing.alpha.ai_all - MIN_ALPHA_DROP
    for cat, values in agreeing.alpha.categories.items():
        assert values["ai"] is not None and values["ai"] >= MIN_ALPHA_AGREEING, cat
    # Three identical judges: perfect; interval and ordinal both.
    rows = [_pooled(A), _pooled(A), _pooled(A)]
    assert krippendorff_alpha(rows) == pytest.approx(1.0)
    assert krippendorff_alpha(rows, level="ordinal") == pytest.approx(1.0)
    # A pair of judges gives no α in a comparison (it needs three).
    assert compare_runs({"A": _results(A, "a"), "B": _results(B, "b")}).alpha is None


def test_alpha_allows_missing_and_refuses_the_undefined() -> None:
    assert krippendorff_alpha([[10, 20, None, 40], [10, 20, 30, 40], [None, 20, 30, 40]]) \
        == pytest.approx(1.0)
    assert krippendorff_alpha([[50, 50], [50, 50], [50, 50]]) is None  # no variation
    assert krippendorff_alpha([[1, None], [None, 2], [None, None]]) is None  # nothing paired
    assert krippendorff_alpha([[1, 2, 3]]) is None  # one judge


@pytest.mark.parametrize(("a", "b", "none", "note"), [
    ([], [], {"weightedKappa", "pearsonR", "spearmanRho", "kendallTau", "meanAbsDiff",
              "meanDiff", "exactBandAgreement"}, "no case"),
    ([50], [70], {"weightedKappa", "pearsonR", "spearmanRho", "kendallTau"}, "at least 2"),
    ([50, 50, 50], [40, 60, 80], {"pearsonR", "spearmanRho", "kendallTau"}, "constant"),
    ([80, 81, 85], [76, 88, 79], {"weightedKappa"}, "κ is undefined"),
])
def test_degenerate_inputs_give_none_and_a_note(a: list[int], b: list[int], none: set[str],
                                                note: str) -> None:
    stats = pairwise_agreement(a, b)
    dumped = stats.model_dump()
    unset = {k for k, v in dumped.items() if v is None and k not in ("intervals", "levels")}
    assert unset == none
    assert any(note in n for n in stats.notes), stats.notes
    _no_nan(stats)


def test_pairwise_takes_stored_bands_and_two_scales() -> None:
    coarse = (Band(name="low", min=0, max=49), Band(name="high", min=50, max=100))
    stats = pairwise_agreement([10, 60, 90], [20, 70, 40], ["low", "high", "high"],
                               ["low", "high", "low"], rubric_bands=coarse)
    assert stats.exact_band_agreement == pytest.approx(2 / 3)
    # Side b on its own (default) scale: band indices are compared, not names.
    mixed = pairwise_agreement([10, 60], [20, 95], rubric_bands=coarse,
                               rubric_bands_b=DEFAULT_BANDS)
    assert mixed.exact_band_agreement == 0.5  # failing=0 matches low=0; excellent=4 ≠ high=1
    with pytest.raises(ValueError, match="unaligned"):
        pairwise_agreement([1, 2], [1])


def test_compare_runs_skips_and_counts_what_cannot_be_compared() -> None:
    a = _results(A[:5], "a")
    b = _results(B[:5], "b")
    b[1] = _result(IDS[1], B[1], "b", status="unscored")
    b[2] = _result(IDS[2], B[2], "b", status="cache_miss")
    del b[4]
    deterministic = CaseResult(id="det-1", status="scored", overall_score=70, band="acceptable",
                               judged_by="deterministic")
    resample = _result(IDS[0], C[0], "a").model_copy(
        update={"judge": _meta("a").model_copy(update={"sample": 1})})
    comparison = compare_runs({"A": [*a, deterministic, resample], "B": b})
    pair = comparison.pairs[0]
    assert pair.aligned == 2
    assert pair.skipped == {"missing": 1, "cache_miss": 1, "unscored": 1}
    counts = {j.name: j for j in comparison.judges}
    assert counts["A"].deterministic == 1 and counts["A"].cases == 5
    assert (counts["B"].scored, counts["B"].unscored, counts["B"].cache_miss) == (2, 1, 1)
    _no_nan(comparison)


def test_nothing_in_common_is_said_not_crashed() -> None:
    comparison = compare_runs({"A": _results(A[:2], "a"), "B": _results(B[2:4], "b", start=2),
                               "C": [_result("x", {"quality": 50, "process": 50}, "c")]})
    assert all(p.aligned == 0 and p.overall.n == 0 for p in comparison.pairs)
    assert all(p.verdict.startswith("no case scored by both") for p in comparison.pairs)
    assert comparison.alpha is not None and comparison.alpha.ai_all is None
    assert comparison.alpha.notes
    _no_nan(comparison)
    one = compare_runs({"A": _results(A, "a")})
    assert one.pairs == () and one.notes


def test_whole_comparison_is_camel_case_json_without_nan(abc: Comparison) -> None:
    _no_nan(abc)
    data = json.loads(abc.model_dump_json())
    assert {"judges", "pairs", "alpha", "human", "humanLabelled", "notes"} <= set(data)
    assert {"judgeA", "judgeB", "aiAll", "bandFlips", "categories", "overall"} <= set(
        data["pairs"][0])
    wire = {f.alias or n for n, f in PairStats.model_fields.items()}
    assert wire == {"n", "weightedKappa", "pearsonR", "spearmanRho", "kendallTau", "meanAbsDiff",
                    "meanDiff", "exactBandAgreement", "notes", "intervals", "levels"}
    assert not any(isinstance(v, float) and math.isnan(v)
                   for v in data["pairs"][0]["overall"].values())


def test_overall_only_labels_give_an_overall_headline() -> None:
    """Labels of the overall score only made the headline "no case scored by
    both" above a table with n = 6; the headline is then the overall scores'."""
    labels = {i: HumanLabel(overall=_overall(row), band=band_for(_overall(row)))
              for i, row in zip(IDS[:6], HUMAN, strict=False)}
    got = compare_runs({"A": _results(A, "a")}, human=labels)
    (human_a,) = got.human
    assert human_a.ai_all.n == 0 and human_a.overall.n == 6
    assert not human_a.verdict.startswith("no case scored by both")
    assert "overall scores vs human labels" in human_a.verdict
    assert "agree closely" in human_a.verdict  # A copies the humans
