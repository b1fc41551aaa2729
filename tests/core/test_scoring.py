"""The deterministic core: bands, the exact half-up blend and overall, input rules, levels."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from judge.core.formats.models import AdvisoryScore, CategoryScore
from judge.core.formats.rubric import Blend, Rubric, parse_rubric
from judge.core.scoring.scoring import (
    band_for,
    clamp,
    compute_final_score,
    compute_overall_score,
    level_score,
    overall_fraction,
    round_half_up,
    score_case,
    score_category,
)

ROOT = Path(__file__).resolve().parents[2]
TASK_TEXT = (ROOT / "rubrics" / "task-evaluation.yaml").read_text(encoding="utf-8")
RESEARCH_TEXT = (ROOT / "rubrics" / "research-agent.yaml").read_text(encoding="utf-8")
TASK = parse_rubric(TASK_TEXT, "task-evaluation.yaml")
RESEARCH = parse_rubric(RESEARCH_TEXT, "research-agent.yaml")
CATS = ("agentPerformance", "taskOutcomeQuality", "processCompliance")
# The task rubric's weights as exact integers per hundred: 0.30 / 0.45 / 0.25.
TASK_WEIGHTS = (30, 45, 25)
SCORES = st.integers(min_value=0, max_value=100)
PROPS = settings(max_examples=200, deadline=None)


def _variant(text: str, old: str, new: str) -> Rubric:
    assert text.count(old) == 1, old
    return parse_rubric(text.replace(old, new), "variant.yaml")


def _half_up(numerator: int, denominator: int) -> int:
    """Reference rounding in integers only: floor(n/d + 1/2)."""
    return (2 * numerator + denominator) // (2 * denominator)


# --- bands -------------------------------------------------------------------------------

@pytest.mark.parametrize(("score", "band"), [
    (0, "failing"), (39, "failing"),
    (40, "weak"), (59, "weak"),
    (60, "acceptable"), (74, "acceptable"),
    (75, "strong"), (89, "strong"),
    (90, "excellent"), (100, "excellent"),
])
def test_band_edges(score: int, band: str) -> None:
    assert band_for(score) == band
    assert band_for(score, TASK.bands) == band


@pytest.mark.parametrize("bad", [-1, 101, 50.0, "50", True])
def test_band_for_rejects_non_scores(bad: object) -> None:
    with pytest.raises(ValueError):
        band_for(bad)  # type: ignore[arg-type]


def test_every_score_has_exactly_one_band() -> None:
    for score in range(101):
        holders = [b.name for b in TASK.bands if b.min <= score <= b.max]
        assert holders == [band_for(score)]


# --- the blend ---------------------------------------------------------------------------

@pytest.mark.parametrize(("det", "ai", "exact_value", "final"), [
    (75, 80, Fraction(153, 2), 77),   # 76.5
    (85, 90, Fraction(173, 2), 87),   # 86.5
    (1, 0, Fraction(7, 10), 1),       # 0.7
    (0, 5, Fraction(3, 2), 2),        # 1.5
    (5, 0, Fraction(7, 2), 4),        # 3.5
    (0, 15, Fraction(9, 2), 5),       # 4.5
    (95, 100, Fraction(193, 2), 97),  # 96.5
    (100, 95, Fraction(197, 2), 99),  # 98.5
    (65, 70, Fraction(133, 2), 67),   # 66.5
    (80, 70, Fraction(77), 77),
    (90, 60, Fraction(81), 81),
    (100, 100, Fraction(100), 100),
    (0, 0, Fraction(0), 0),
])
def test_blend_half_up(det: int, ai: int, exact_value: Fraction, final: int) -> None:
    assert Fraction(det) * Fraction(7, 10) + Fraction(ai) * Fraction(3, 10) == exact_value
    assert compute_final_score(det, ai) == final
    assert compute_final_score(det, ai, TASK.blend_for("agentPerformance")) == final


def test_blend_exhaustive_against_integer_reference() -> None:
    halves = 0
    for det, ai in itertools.product(range(101), repeat=2):
        num = 7 * det + 3 * ai  # the blend, in tenths
        if num % 10 == 5:
            halves += 1
        assert compute_final_score(det, ai) == _half_up(num, 10), (det, ai)
    assert halves > 500


def test_blend_half_cases_would_drift_with_naive_floats() -> None:
    """The exact rounding matters: float + round() gets some .5 blends wrong."""
    wrong_round = []
    for det, ai in itertools.product(range(101), repeat=2):
        num = 7 * det + 3 * ai
        if num % 10 != 5:
            continue
        naive = det * 0.7 + ai * 0.3
        if round(naive) != _half_up(num, 10):
            wrong_round.append((det, ai))
    assert (75, 80) in wrong_round  # round(76.5) == 76 (banker's), the contract says 77
    assert compute_final_score(75, 80) == 77


@pytest.mark.parametrize("bad", [76.5, 80.0, "80", True, False, None])
def test_compute_final_score_rejects_non_integers(bad: object) -> None:
    with pytest.raises(ValueError):
        compute_final_score(bad, 50)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        compute_final_score(50, bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [-1, 101, 1000, -100])
def test_compute_final_score_rejects_out_of_range(bad: int) -> None:
    with pytest.raises(ValueError):
        compute_final_score(bad, 50)
    with pytest.raises(ValueError):
        compute_final_score(50, bad)


def test_clamp() -> None:
    assert clamp(Fraction(-5)) == 0
    assert clamp(Fraction(201, 2)) == 100
    assert clamp(Fraction(1, 2)) == Fraction(1, 2)
    assert clamp(Fraction(0)) == 0 and clamp(Fraction(100)) == 100
    assert clamp(Fraction(7), 10, 20) == 10


def test_custom_blend_cannot_leave_range() -> None:
    # A Blend built in code skips the rubric's sum check; the clamp still holds the range.
    over = Blend(deterministic=1.0, ai=1.0)
    assert compute_final_score(100, 100, over) == 100
    assert compute_final_score(90, 90, over) == 100
    assert compute_final_score(30, 20, over) == 50
    # And a rubric refuses such a blend outright.
    with pytest.raises(Exception, match="blend"):
        _variant(TASK_TEXT, "blend: {deterministic: 0.7, ai: 0.3}",
                 "blend: {deterministic: 1.0, ai: 1.0}")


def test_custom_rubric_blend_applies() -> None:
    rub = _variant(TASK_TEXT, "blend: {deterministic: 0.7, ai: 0.3}",
                   "blend: {deterministic: 0.5, ai: 0.5}")
    assert compute_final_score(76, 77, rub.blend_for("agentPerformance")) == 77  # 76.5
    cat = score_category(rub, "agentPerformance", 76, AdvisoryScore(score=77))
    assert cat.final_score == 77 and cat.rule == "blend"


def test_round_half_up() -> None:
    assert round_half_up(Fraction(153, 2)) == 77
    assert round_half_up(Fraction(1, 2)) == 1
    assert round_half_up(Fraction(3, 2)) == 2
    assert round_half_up(Fraction(5, 2)) == 3  # round(2.5) would give 2
    assert round_half_up(Fraction(7649, 100)) == 76
    assert round_half_up(Fraction(7651, 100)) == 77


# --- the overall -------------------------------------------------------------------------

def _overall_half_cases() -> list[tuple[int, int, int]]:
    """Every (a, b, c) of finals whose exact weighted sum under 0.30/0.45/0.25 is x.5."""
    w = [Fraction(x, 100) for x in TASK_WEIGHTS]
    found = []
    for a, b, c in itertools.product(range(101), repeat=3):
        # cheap integer pre-filter (hundredths ending in 50), then the exact check
        if (a * 30 + b * 45 + c * 25) % 100 != 50:
            continue
        total = a * w[0] + b * w[1] + c * w[2]
        assert total.denominator == 2
        found.append((a, b, c))
    return found


HALF_CASES = _overall_half_cases()


def test_overall_half_cases_exist_and_round_up() -> None:
    assert len(HALF_CASES) > 1000
    for a, b, c in HALF_CASES[::5]:
        finals = dict(zip(CATS, (a, b, c), strict=True))
        exact_total = overall_fraction(finals, TASK)
        assert exact_total.denominator == 2
        assert compute_overall_score(finals, TASK) == math.floor(exact_total) + 1


@pytest.mark.parametrize(("finals", "expected"), [
    ((77, 77, 81), 78),   # examples/score.json: 23.1 + 34.65 + 20.25 = 78.0
    ((80, 70, 90), 78),   # 24 + 31.5 + 22.5 = 78.0
    ((85, 80, 76), 81),   # 25.5 + 36 + 19 = 80.5
    ((75, 80, 71), 76),   # 22.5 + 36 + 17.75 = 76.25
    ((60, 59, 59), 59),   # 18 + 26.55 + 14.75 = 59.3
])
def test_overall_examples(finals: tuple[int, int, int], expected: int) -> None:
    assert compute_overall_score(dict(zip(CATS, finals, strict=True)), TASK) == expected


def test_overall_half_cases_would_drift_with_naive_floats() -> None:
    float_below_half = []
    banker = []
    for a, b, c in HALF_CASES:
        naive = a * 0.30 + b * 0.45 + c * 0.25
        exact_total = Fraction(a * 30 + b * 45 + c * 25, 100)
        if naive < exact_total:  # e.g. 76.49999999999999
            float_below_half.append((a, b, c))
        if round(naive) != math.floor(exact_total) + 1:
            banker.append((a, b, c))
    # e.g. 31*0.30 + 1*0.45 + 3*0.25 == 10.499999999999998 in floats, exactly 10.5
    assert (31, 1, 3) in float_below_half
    assert 31 * 0.30 + 1 * 0.45 + 3 * 0.25 < 10.5
    assert compute_overall_score(dict(zip(CATS, (31, 1, 3), strict=True)), TASK) == 11
    assert banker, "round() of the float sum disagrees with half-up somewhere"
    for a, b, c in float_below_half[:50] + banker[:50]:
        finals = dict(zip(CATS, (a, b, c), strict=True))
        exact_total = Fraction(a * 30 + b * 45 + c * 25, 100)
        assert compute_overall_score(finals, TASK) == math.floor(exact_total) + 1


def test_overall_exhaustive_sample_against_integer_reference() -> None:
    for a, b, c in itertools.product(range(0, 101, 3), range(0, 101, 7), range(0, 101, 5)):
        finals = dict(zip(CATS, (a, b, c), strict=True))
        expected = _half_up(a * 30 + b * 45 + c * 25, 100)
        assert compute_overall_score(finals, TASK) == expected


@pytest.mark.parametrize("bad", [76.5, "80", True, -1, 101])
def test_overall_rejects_bad_finals(bad: object) -> None:
    finals = {"agentPerformance": 80, "taskOutcomeQuality": bad, "processCompliance": 70}
    with pytest.raises(ValueError):
        compute_overall_score(finals, TASK)  # type: ignore[arg-type]


def test_overall_rejects_unknown_and_missing_categories() -> None:
    with pytest.raises(ValueError, match="unknown category 'bogus'"):
        compute_overall_score({**dict.fromkeys(CATS, 80), "bogus": 80}, TASK)
    with pytest.raises(ValueError, match="processCompliance"):
        compute_overall_score({"agentPerformance": 80, "taskOutcomeQuality": 80}, TASK)


# --- the persisted model ------------------------------------------------------------------

@pytest.mark.parametrize("field", ["deterministicScore", "aiScore", "finalScore"])
@pytest.mark.parametrize("bad", [76.5, 80.0, "80", True, -1, 101])
def test_category_score_model_rejects_bad_scores(field: str, bad: object) -> None:
    with pytest.raises(ValidationError):
        CategoryScore.model_validate({"category": "agentPerformance", "weight": 0.3, field: bad})


def test_category_score_model_rejects_bad_scores_from_json() -> None:
    for raw in ('76.5', '"80"', 'true', '101', '-1'):
        with pytest.raises(ValidationError):
            CategoryScore.model_validate_json(
                f'{{"category": "a", "weight": 0.3, "finalScore": {raw}}}')


def test_category_score_has_seed_fields() -> None:
    cat = score_category(TASK, "taskOutcomeQuality", 75,
                         AdvisoryScore(score=80, rationale="ok", evidence=("commits:abc",)))
    dumped = cat.model_dump(mode="json")
    for key in ("category", "deterministicScore", "aiScore", "finalScore", "weight", "band",
                "rationale", "evidence"):
        assert key in dumped
    assert dumped["finalScore"] == 77
    assert dumped["band"] == "strong"
    assert dumped["weight"] == 0.45
    assert dumped["evidence"] == ["commits:abc"]
    assert dumped["rule"] == "blend"


# --- missing inputs ----------------------------------------------------------------------

def test_missing_deterministic_uses_ai_only() -> None:
    cat = score_category(TASK, "agentPerformance", None, AdvisoryScore(score=71))
    assert (cat.rule, cat.final_score, cat.band) == ("ai_only", 71, "acceptable")
    assert cat.deterministic_score is None and cat.ai_score == 71


def test_missing_ai_uses_deterministic_only() -> None:
    cat = score_category(TASK, "agentPerformance", 64, None)
    assert (cat.rule, cat.final_score, cat.band) == ("deterministic_only", 64, "acceptable")
    assert cat.ai_score is None


def test_missing_both_is_unscored() -> None:
    cat = score_category(TASK, "agentPerformance", None, None)
    assert (cat.rule, cat.final_score, cat.band) == ("unscored", None, None)


def test_missing_policy_unscored() -> None:
    rub = _variant(TASK_TEXT, "  deterministic: ai_only ", "  deterministic: unscored ")
    cat = score_category(rub, "agentPerformance", None, AdvisoryScore(score=71))
    assert (cat.rule, cat.final_score) == ("unscored", None)
    rub = _variant(TASK_TEXT, "  ai: deterministic_only ", "  ai: unscored ")
    cat = score_category(rub, "agentPerformance", 64, None)
    assert (cat.rule, cat.final_score) == ("unscored", None)
    # with both present the blend still applies
    cat = score_category(rub, "agentPerformance", 75, AdvisoryScore(score=80))
    assert (cat.rule, cat.final_score) == ("blend", 77)


def test_case_rules_recorded_per_category() -> None:
    result = score_case(TASK, {"agentPerformance": 80, "taskOutcomeQuality": None,
                               "processCompliance": 90},
                        {"agentPerformance": AdvisoryScore(score=70),
                         "taskOutcomeQuality": AdvisoryScore(score=66)})
    rules = {c.category: (c.rule, c.final_score) for c in result.category_scores}
    assert rules == {"agentPerformance": ("blend", 77), "taskOutcomeQuality": ("ai_only", 66),
                     "processCompliance": ("deterministic_only", 90)}
    # 77*0.30 + 66*0.45 + 90*0.25 = 23.1 + 29.7 + 22.5 = 75.3
    assert result.status == "scored" and result.overall_score == 75 and result.band == "strong"
    assert result.passed is True


def test_partial_unscored_makes_case_unscored() -> None:
    result = score_case(TASK, {"agentPerformance": 80, "taskOutcomeQuality": 70},
                        {"agentPerformance": AdvisoryScore(score=70)}, reason="judge failed")
    assert result.status == "unscored"
    assert result.overall_score is None and result.band is None and result.passed is None
    assert result.reason is not None
    assert "processCompliance" in result.reason and "judge failed" in result.reason
    by = {c.category: c.rule for c in result.category_scores}
    assert by["processCompliance"] == "unscored"


def test_partial_renormalize_uses_present_weights() -> None:
    rub = _variant(TASK_TEXT, "partial: unscored ", "partial: renormalize ")
    result = score_case(rub, {"agentPerformance": 80, "taskOutcomeQuality": 90}, None)
    # (80*0.30 + 90*0.45) / 0.75 = 64.5 / 0.75 = 86
    assert result.status == "scored" and result.overall_score == 86
    assert [c.rule for c in result.category_scores] == [
        "deterministic_only", "deterministic_only", "unscored"]
    finals = {"agentPerformance": 85, "processCompliance": 90}
    # (25.5 + 22.5) / 0.55 = 87.27 -> 87
    assert compute_overall_score(finals, rub) == 87
    assert overall_fraction(finals, rub) == Fraction(48 * 100, 55)


def test_nothing_scored_is_unscored_even_when_renormalizing() -> None:
    rub = _variant(TASK_TEXT, "partial: unscored ", "partial: renormalize ")
    result = score_case(rub, {}, None)
    assert result.status == "unscored" and result.overall_score is None


def test_score_case_rejects_unknown_categories() -> None:
    with pytest.raises(ValueError, match="bogus"):
        score_case(TASK, {"bogus": 50}, None)
    with pytest.raises(ValueError, match="bogus"):
        score_case(TASK, {}, {"bogus": AdvisoryScore(score=50)})


# --- the levels rubric -------------------------------------------------------------------

LEVEL_VALUES = {"excellent": 100, "good": 80, "acceptable": 60, "poor": 30, "failed": 0}
RESEARCH_WEIGHTS = {"factual_accuracy": 30, "completeness": 25, "citation_accuracy": 15,
                    "source_quality": 10, "tool_efficiency": 20}


def _levels_case(levels: dict[str, str]) -> tuple[int | None, bool | None, str]:
    advisory = {k: AdvisoryScore(score=level_score(RESEARCH, v), level=v)
                for k, v in levels.items()}
    result = score_case(RESEARCH, {}, advisory)
    return result.overall_score, result.passed, result.status


@pytest.mark.parametrize(("level", "value"), sorted(LEVEL_VALUES.items()))
def test_level_maps_to_value_times_100(level: str, value: int) -> None:
    assert level_score(RESEARCH, level) == value


def test_unknown_level_is_an_error() -> None:
    with pytest.raises(KeyError):
        level_score(RESEARCH, "superb")


def test_levels_weighted_average() -> None:
    levels = {"factual_accuracy": "good", "completeness": "acceptable",
              "citation_accuracy": "excellent", "source_quality": "poor",
              "tool_efficiency": "good"}
    # 80*.30 + 60*.25 + 100*.15 + 30*.10 + 80*.20 = 24 + 15 + 15 + 3 + 16 = 73
    assert _levels_case(levels) == (73, True, "scored")
    advisory = {k: AdvisoryScore(score=level_score(RESEARCH, v), level=v)
                for k, v in levels.items()}
    cats = score_case(RESEARCH, {}, advisory).category_scores
    assert all(c.rule == "ai_only" for c in cats)
    assert [c.level for c in cats] == list(levels.values())


def test_levels_normalised_by_weights_present() -> None:
    overall, passed, status = _levels_case({"factual_accuracy": "excellent",
                                            "completeness": "failed"})
    # (100*0.30 + 0*0.25) / 0.55 = 54.54... -> 55
    assert (overall, passed, status) == (55, False, "scored")
    assert _levels_case({"source_quality": "good"}) == (80, True, "scored")


def test_levels_pass_mark_is_70() -> None:
    exactly_70 = exactly_69 = None
    names = list(LEVEL_VALUES)
    for combo in itertools.product(names, repeat=len(RESEARCH_WEIGHTS)):
        num = sum(LEVEL_VALUES[lv] * w for lv, w in zip(combo, RESEARCH_WEIGHTS.values(),
                                                         strict=True))
        total = _half_up(num, 100)
        if total == 70 and exactly_70 is None:
            exactly_70 = dict(zip(RESEARCH_WEIGHTS, combo, strict=True))
        if total == 69 and exactly_69 is None:
            exactly_69 = dict(zip(RESEARCH_WEIGHTS, combo, strict=True))
    assert exactly_70 is not None and exactly_69 is not None
    assert _levels_case(exactly_70) == (70, True, "scored")
    assert _levels_case(exactly_69) == (69, False, "scored")
    assert RESEARCH.pass_score == 70


# --- properties --------------------------------------------------------------------------

BLEND_SHARES = st.integers(min_value=0, max_value=100).map(
    lambda k: Blend(deterministic=k / 100, ai=(100 - k) / 100))


@PROPS
@given(det=SCORES, ai=SCORES, bump=st.integers(0, 100), blend=BLEND_SHARES)
def test_final_is_int_in_range_and_monotone(det: int, ai: int, bump: int, blend: Blend) -> None:
    final = compute_final_score(det, ai, blend)
    assert type(final) is int and 0 <= final <= 100
    assert compute_final_score(min(100, det + bump), ai, blend) >= final
    assert compute_final_score(det, min(100, ai + bump), blend) >= final
    assert compute_final_score(max(0, det - bump), ai, blend) <= final
    lo, hi = sorted((det, ai))
    assert lo <= final <= hi  # a blend of two scores lies between them


@PROPS
@given(finals=st.tuples(SCORES, SCORES, SCORES), which=st.integers(0, 2),
       bump=st.integers(0, 100))
def test_overall_is_int_in_range_and_monotone(finals: tuple[int, int, int], which: int,
                                              bump: int) -> None:
    base = dict(zip(CATS, finals, strict=True))
    overall = compute_overall_score(base, TASK)
    assert type(overall) is int and 0 <= overall <= 100
    assert min(finals) <= overall <= max(finals)
    raised = dict(base)
    raised[CATS[which]] = min(100, finals[which] + bump)
    assert compute_overall_score(raised, TASK) >= overall
    a, b, c = finals
    assert overall == _half_up(a * 30 + b * 45 + c * 25, 100)


@PROPS
@given(det=st.one_of(st.none(), SCORES), ai=st.one_of(st.none(), SCORES))
def test_category_final_is_int_or_none(det: int | None, ai: int | None) -> None:
    cat = score_category(TASK, "processCompliance", det,
                         AdvisoryScore(score=ai) if ai is not None else None)
    if det is None and ai is None:
        assert cat.final_score is None and cat.rule == "unscored"
    else:
        assert type(cat.final_score) is int and 0 <= cat.final_score <= 100
        assert cat.band == band_for(cat.final_score)


@PROPS
@given(det=st.dictionaries(st.sampled_from(CATS), SCORES),
       ai=st.dictionaries(st.sampled_from(CATS), SCORES))
def test_case_overall_matches_category_finals(det: dict[str, int], ai: dict[str, int]) -> None:
    result = score_case(TASK, det, {k: AdvisoryScore(score=v) for k, v in ai.items()})
    finals = {c.category: c.final_score for c in result.category_scores}
    if all(v is not None for v in finals.values()):
        assert result.status == "scored"
        assert result.overall_score == compute_overall_score(
            {k: v for k, v in finals.items() if v is not None}, TASK)
        assert result.passed == (result.overall_score is not None
                                 and result.overall_score >= TASK.pass_score)
    else:
        assert result.status == "unscored" and result.overall_score is None


DECIMALS = st.integers(min_value=0, max_value=1000).map(lambda n: n / 1000)


@PROPS
@given(det=SCORES, ai=SCORES, d=DECIMALS, a=DECIMALS)
def test_integer_blend_equals_the_fraction_formula(det: int, ai: int, d: float, a: float) -> None:
    # compute_final_score works in integers for speed; it must equal the exact Fraction value.
    expected = math.floor(clamp(det * Fraction(repr(d)) + ai * Fraction(repr(a))) + Fraction(1, 2))
    assert compute_final_score(det, ai, Blend.model_construct(deterministic=d, ai=a)) == expected


@PROPS
@given(finals=st.tuples(SCORES, SCORES, SCORES), drop=st.integers(min_value=0, max_value=3))
def test_integer_overall_equals_the_fraction_value(finals: tuple[int, int, int],
                                                   drop: int) -> None:
    rub = _variant(TASK_TEXT, "partial: unscored", "partial: renormalize") \
        if "partial: unscored" in TASK_TEXT else TASK
    present = {c: s for i, (c, s) in enumerate(zip(CATS, finals, strict=True)) if i != drop}
    if rub.partial != "renormalize" and len(present) < len(CATS):
        return
    assert compute_overall_score(present, rub) == round_half_up(overall_fraction(present, rub))
