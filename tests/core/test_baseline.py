"""Baselines and the regression gate, on plain values: no disk, no store."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judge.core.formats.models import CaseResult, JudgeMeta
from judge.core.outcomes.baseline import (
    Baseline,
    baseline_text,
    build_baseline,
    check,
    compare,
    parse_baseline,
    pick_primary,
)
from judge.core.text.errors import ConfigError, RegressionBlocked

MODEL = "openai/gpt-4o-mini"
RUBRIC_HASH = "ab" * 32


def band(score: int) -> str:
    for low, name in ((90, "excellent"), (75, "strong"), (60, "acceptable"), (40, "weak")):
        if score >= low:
            return name
    return "failing"


def scored(case_id: str, score: int, *, model: str = MODEL, sample: int = 0) -> CaseResult:
    return CaseResult(id=case_id, status="scored", overall_score=score, band=band(score),
                      passed=score >= 60, judge=_meta(model, sample))


def unscored(case_id: str, reason: str = "provider error: 503 Service Unavailable", *,
             status: str = "unscored") -> CaseResult:
    return CaseResult.model_validate({"id": case_id, "status": status, "reason": reason,
                                      "judge": _meta(MODEL, 0).model_dump()})


def _meta(model: str, sample: int) -> JudgeMeta:
    return JudgeMeta(model=model, temperature=0.0, seed=42, sample=sample, template_id="judge",
                     template_hash="cd" * 32, rubric_hash=RUBRIC_HASH, cache_key="ef" * 32,
                     cached=False)


SCORES = {"case-01": 91, "case-02": 78, "case-03": 64, "case-04": 55, "case-05": 82,
          "case-06": 70, "case-07": 82, "case-08": 47, "case-09": 64, "case-10": 88}


def results(overrides: dict[str, CaseResult | int] | None = None) -> list[CaseResult]:
    out = []
    for case_id, score in SCORES.items():
        value = (overrides or {}).get(case_id, score)
        out.append(value if isinstance(value, CaseResult) else scored(case_id, value))
    return out


def make(run_id: str | None = "r1", *, threshold: float = 0.05,
         spreads: dict[str, int] | None = None,
         items: list[CaseResult] | None = None) -> Baseline:
    return build_baseline("task-eval", "task-evaluation", RUBRIC_HASH, (MODEL,),
                          results() if items is None else items, run_id=run_id,
                          threshold=threshold, spreads=spreads)


# -- building and the file format ----------------------------------------------------------

def test_build_summarises_exactly() -> None:
    b = make()
    assert b.suite == "task-eval" and b.version == 1 and b.recorded_from == "r1"
    assert b.score == 72.1  # 721 / 10
    assert b.pass_rate == 0.8  # 55 and 47 fail
    assert list(b.cases) == sorted(SCORES)
    assert b.cases["case-07"].overall_score == 82 and b.cases["case-07"].spread is None
    assert b.baseline_id.startswith("task-eval@") and len(b.baseline_id) == len("task-eval@") + 12


def test_mean_rounds_half_up_exactly() -> None:
    # (70 + 71 + 71 + 71 + 71 + 71 + 71 + 71) / 8 = 70.875 -> 70.88 (half up, not to even)
    items = [scored("a", 70)] + [scored(f"b{i}", 71) for i in range(7)]
    assert make(items=items).score == 70.88
    # 2 of 3 passed: 0.66666... -> 0.6667
    assert make(items=[scored("a", 70), scored("b", 65), scored("c", 20)]).pass_rate == 0.6667


def test_text_roundtrip_is_byte_identical() -> None:
    b = make(spreads={"case-03": 4})
    text = baseline_text(b)
    again = parse_baseline(text, "baselines/task-eval.json")
    assert again == b
    assert baseline_text(again) == text
    data = json.loads(text)
    assert list(data) == sorted(data)  # sorted keys: diffs read well
    assert text.endswith("\n") and "\n  " in text


def test_baseline_id_ignores_the_run_and_order() -> None:
    a = make("run-aaa")
    b = build_baseline("task-eval", "task-evaluation", RUBRIC_HASH, (MODEL,),
                       list(reversed(results())), run_id="run-bbb")
    assert a.baseline_id == b.baseline_id
    assert baseline_text(a) != baseline_text(b)  # recordedFrom differs
    changed = make(items=results({"case-02": 79}))
    assert changed.baseline_id != a.baseline_id


def test_build_refuses_duplicates_and_nothing_scored() -> None:
    with pytest.raises(ValueError, match="case-01"):
        make(items=[*results(), scored("case-01", 50)])
    with pytest.raises(ValueError, match="no case"):
        make(items=[unscored("a"), unscored("b")])
    with pytest.raises(ValueError, match="no case results"):
        make(items=[])
    with pytest.raises(ValueError, match="threshold"):
        make(threshold=1.5)


@pytest.mark.parametrize(("mutate", "where"), [
    (lambda d: d.update(threshold=2), "threshold"),
    (lambda d: d.update(colour="red"), "colour"),
    (lambda d: d["cases"]["case-01"].update(overallScore=101), "cases.case-01.overallScore"),
    (lambda d: d["cases"]["case-01"].update(overallScore=91.0), "cases.case-01.overallScore"),
    (lambda d: d["cases"]["case-01"].update(status="great"), "cases.case-01.status"),
    (lambda d: d.pop("suite"), "suite"),
])
def test_parse_names_file_field_and_fix(mutate: object, where: str) -> None:
    data = json.loads(baseline_text(make()))
    mutate(data)  # type: ignore[operator]
    with pytest.raises(ConfigError) as info:
        parse_baseline(json.dumps(data), "baselines/task-eval.json")
    err = info.value
    assert err.file == "baselines/task-eval.json"
    assert err.where == where
    assert err.fix and "judge baseline record" in err.fix


def test_parse_rejects_a_hand_edited_score_and_bad_json() -> None:
    data = json.loads(baseline_text(make()))
    data["cases"]["case-07"]["overallScore"] = 95
    with pytest.raises(ConfigError, match="does not match the cases"):
        parse_baseline(json.dumps(data), "b.json")
    with pytest.raises(ConfigError) as info:
        parse_baseline('{"suite": "x",', "b.json")
    assert info.value.where == "line 1, column 15" and "invalid JSON" in info.value.message
    with pytest.raises(ConfigError, match="a baseline is a JSON object"):
        parse_baseline("[]", "b.json")
    data = json.loads(baseline_text(make()))
    data["version"] = 2
    with pytest.raises(ConfigError, match="newer"):
        parse_baseline(json.dumps(data), "b.json")


# -- comparing -----------------------------------------------------------------------------

def test_same_results_no_regression() -> None:
    c = compare(make(), results())
    assert not c.has_regression and c.blocked_reasons == ()
    assert c.previous_score == c.current_score == 72.1 and c.score_delta == 0.0
    assert c.compared_cases == 10 and c.threshold == 0.05
    assert c.baseline_id == make().baseline_id


def test_seeded_regression_names_the_case() -> None:
    c = compare(make(), results({"case-07": 71}))
    assert c.has_regression
    assert c.regressed_cases == ("case-07",)
    assert c.blocked_reasons == ("case-07: 82 → 71 (-11 points, threshold 5)",)
    assert c.previous_score == 72.1 and c.current_score == 71.0 and c.score_delta == -1.1


@pytest.mark.parametrize(("after", "regressed"), [(77, False), (76, True), (82, False)])
def test_threshold_boundary(after: int, regressed: bool) -> None:
    # case-07 was 82: a drop of exactly 5 points is allowed, 6 is not.
    c = compare(make(), results({"case-07": after}))
    assert c.has_regression is regressed
    assert (c.regressed_cases == ("case-07",)) is regressed


def test_threshold_override_and_exact_decimal() -> None:
    # 0.07 is 7 points exactly (binary 0.07 * 100 is 7.000000000000001)
    assert not compare(make(), results({"case-07": 75}), threshold=0.07).has_regression
    assert compare(make(), results({"case-07": 74}), threshold=0.07).has_regression
    # the baseline's own threshold applies when none is given
    loose = make(threshold=0.2)
    assert not compare(loose, results({"case-07": 62})).has_regression
    assert compare(loose, results({"case-07": 61})).has_regression
    c = compare(make(), results({"case-07": 79}), threshold=0.025)
    assert c.blocked_reasons == ("case-07: 82 → 79 (-3 points, threshold 2.5)",)


def test_newly_unscored_blocks_with_reason() -> None:
    c = compare(make(), results({"case-09": unscored("case-09"),
                                 "case-03": unscored("case-03", "not in cache",
                                                     status="cache_miss")}))
    assert c.has_regression
    assert c.newly_unscored == ("case-03", "case-09")
    assert c.blocked_reasons == (
        "case-03: scored 64 → cache_miss (not in cache)",
        "case-09: scored 64 → unscored (provider error: 503 Service Unavailable)",
    )
    assert c.compared_cases == 8 and c.regressed_cases == ()


def test_improvements_and_noise_are_reported_not_blocked() -> None:
    b = make(spreads={"case-05": 4})
    # case-05 drops 9: more than 5, within 5 + 4 -> noise; case-08 rises 10 -> improved
    c = compare(b, results({"case-05": 73, "case-08": 57, "case-01": 94}))
    assert not c.has_regression
    assert c.noise == ("case-05",)
    assert c.improved_cases == ("case-08",)  # +3 on case-01 is within the threshold
    # beyond threshold + spread it is a regression again
    c = compare(b, results({"case-05": 72}))
    assert c.regressed_cases == ("case-05",) and c.noise == ()


def test_unscored_in_baseline_now_scored_is_improved() -> None:
    b = make(items=results({"case-04": unscored("case-04")}))
    c = compare(b, results())
    assert c.improved_cases == ("case-04",) and not c.has_regression
    assert c.compared_cases == 9


def test_missing_and_new_cases_do_not_move_the_mean() -> None:
    current = [r for r in results() if r.id != "case-08"] + [scored("case-11", 5)]
    c = compare(make(), current)
    assert c.missing_cases == ("case-08",) and c.new_cases == ("case-11",)
    assert not c.has_regression
    assert c.previous_score == c.current_score == round((721 - 47) / 9, 2)


def test_mean_drop_is_a_regression_first_in_reasons() -> None:
    # every case drops 5 (allowed one by one) plus case-01 drops 7: mean falls 5.2 > 5
    items = {k: v - 5 for k, v in SCORES.items()}
    items["case-01"] = SCORES["case-01"] - 7
    c = compare(make(), results(dict(items)))
    assert c.has_regression
    assert c.blocked_reasons[0] == "mean score fell by 5.2 points (72.1 → 66.9, threshold 5)"
    assert c.blocked_reasons[1].startswith("case-01: 91 → 84")
    assert c.score_delta == -5.2
    # exactly 5 points on the mean is allowed
    c = compare(make(), results({k: v - 5 for k, v in SCORES.items()}))
    assert not c.has_regression and c.score_delta == -5.0


def test_reasons_sorted_by_case_id() -> None:
    c = compare(make(), results({"case-10": 60, "case-02": unscored("case-02"), "case-06": 50}))
    ids = [r.split(":")[0] for r in c.blocked_reasons if not r.startswith("mean")]
    assert ids == sorted(ids) == ["case-02", "case-06", "case-10"]


def test_compare_refuses_duplicates() -> None:
    with pytest.raises(ValueError, match="pick_primary"):
        compare(make(), [*results(), scored("case-01", 90, sample=1)])


def test_check_blocks_only_when_asked() -> None:
    bad = results({"case-07": 71})
    with pytest.raises(RegressionBlocked) as info:
        check(make(), bad)
    assert "case-07: 82 → 71" in str(info.value)
    assert info.value.comparison.regressed_cases == ("case-07",)
    c = check(make(), bad, block=False)
    assert c.has_regression
    assert not check(make(), results()).has_regression


def test_pick_primary_takes_first_judge_first_sample() -> None:
    other = "anthropic/claude-3-5-haiku"
    mixed = [
        scored("b", 50, model=other), scored("b", 60, sample=1), scored("b", 70),
        scored("a", 40, model=other),
        scored("c", 30, sample=2), scored("c", 35, sample=1),
        CaseResult(id="d", status="scored", overall_score=99, judged_by="deterministic"),
    ]
    picked = pick_primary(mixed, MODEL)
    assert [(r.id, r.overall_score) for r in picked] == [("b", 70), ("c", 35), ("d", 99)]
    anyone = pick_primary(mixed, None)
    assert [(r.id, r.overall_score) for r in anyone] == [("a", 40), ("b", 50), ("c", 35),
                                                       ("d", 99)]


# -- property: a baseline never regresses against its own results -------------------------

case_result = st.one_of(
    st.integers(0, 100).map(lambda s: ("scored", s)),
    st.sampled_from([("unscored", None), ("cache_miss", None)]),
)


@given(cases=st.dictionaries(st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True),
                             case_result, min_size=1, max_size=30),
       threshold=st.sampled_from([0.0, 0.01, 0.05, 0.1, 1.0]),
       spread=st.none() | st.integers(0, 10))
def test_own_results_never_regress(cases: dict[str, tuple[str, int | None]], threshold: float,
                                   spread: int | None) -> None:
    items = [scored(k, v) if v is not None else unscored(k, status=status)
             for k, (status, v) in cases.items()]
    if not any(status == "scored" for status, _ in cases.values()):
        with pytest.raises(ValueError):
            make(items=items, threshold=threshold)
        return
    spreads = {} if spread is None else {k: spread for k in cases}
    b = make(items=items, threshold=threshold, spreads=spreads)
    c = compare(b, reversed(items))
    assert not c.has_regression
    assert c.score_delta == 0.0 and c.previous_score == c.current_score == b.score
    assert c.regressed_cases == c.newly_unscored == c.noise == c.improved_cases == ()
    assert c.missing_cases == c.new_cases == ()
    assert parse_baseline(baseline_text(b), "x.json") == b
