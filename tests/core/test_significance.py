"""The statistical gate, the noise model and the diff's noise marks."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from fake_server import noisy_integer
from scipy import stats

from judge.core.formats.models import CaseResult, CategoryScore, JudgeMeta
from judge.core.outcomes.baseline import baseline_text, build_baseline, compare, parse_baseline
from judge.core.stats.noise import SideNoise, _chi2_ppf, measure_noise, noise_key
from judge.core.stats.significance import classify_movements, statistical_compare

NOISE = SideNoise(sd=8.0, df=20, source="test: sd 8")


def _result(cid: str, score: int, key: str, *, cached: bool = False, sample: int = 0,
            ai: int | None = None) -> CaseResult:
    meta = JudgeMeta(model="m", temperature=0.0, seed=sample, sample=sample, template_id="t",
                     template_hash="th", rubric_hash="rh", cache_key=key, cached=cached)
    cats = () if ai is None else (CategoryScore(category="q", ai_score=ai, final_score=score,
                                                weight=1.0),)
    return CaseResult(id=cid, status="scored", overall_score=score, band="b", passed=True,
                      judge=meta, category_scores=cats)


def _noisy_pair(n: int, trial: int, shift: int = 0) -> tuple[list[CaseResult], list[CaseResult]]:
    rng = random.Random(f"latent:{trial}")
    latent = [rng.randint(20, 95) for _ in range(n)]

    def ask(i: int, seed: int, s: int = 0) -> int:
        return noisy_integer(latent[i] - s, 0, 100, random.Random(f"{trial}:{i}:{seed}"), 8)

    before = [_result(f"c{i:02d}", ask(i, 1), f"b{i}") for i in range(n)]
    after = [_result(f"c{i:02d}", ask(i, 2, shift), f"a{i}") for i in range(n)]
    return before, after


def _baseline(results: list[CaseResult]):  # type: ignore[no-untyped-def]
    return build_baseline("s", "r", "rh", ("m",), results, run_id="base")


def test_same_judge_other_seed_is_not_a_regression_but_the_exact_rule_says_it_is() -> None:
    before, after = _noisy_pair(60, trial=1)
    baseline = _baseline(before)
    exact = compare(baseline, after)
    assert exact.has_regression and len(exact.regressed_cases) > 5
    verdict = statistical_compare(baseline, after, before=NOISE, after=NOISE)
    assert not verdict.has_regression and verdict.regressed_cases == ()
    test = verdict.test
    assert test is not None and test.rule == "statistical" and test.interval is not None
    assert test.interval.low < test.mean_drop < test.interval.high
    assert "t test" in test.test and "sd 8" in test.test
    assert set(verdict.noise) >= set(exact.regressed_cases)


def test_a_real_drop_of_ten_is_caught_with_its_interval() -> None:
    before, after = _noisy_pair(60, trial=2, shift=10)
    verdict = statistical_compare(_baseline(before), after, before=NOISE, after=NOISE)
    assert verdict.has_regression
    assert verdict.blocked_reasons[0].startswith("mean score fell by")
    assert verdict.test is not None and verdict.test.lower_bound is not None
    assert 5 < verdict.test.mean_drop and verdict.test.lower_bound > 0


def test_gate_mean_test_is_scipys_paired_t() -> None:
    before, after = _noisy_pair(40, trial=3, shift=4)
    verdict = statistical_compare(_baseline(before), after, before=NOISE, after=NOISE)
    b = [r.overall_score for r in before]
    a = [r.overall_score for r in after]
    assert verdict.test is not None
    assert verdict.test.p_value == pytest.approx(
        stats.ttest_rel(b, a, alternative="greater").pvalue, rel=1e-8)


def test_pure_replay_is_the_exact_rule_unchanged() -> None:
    before, _ = _noisy_pair(30, trial=4)
    baseline = _baseline(before)
    replay = [_result(r.id, max((r.overall_score or 0) - 7, 0), f"b{i}", cached=True)
              for i, r in enumerate(before)]
    verdict = statistical_compare(baseline, replay, before=NOISE, after=NOISE)
    assert verdict.test is not None and verdict.test.rule == "exact-replay"
    assert verdict.model_copy(update={"test": None}) == compare(baseline, replay)
    assert verdict.has_regression  # a real, exact 7-point drop of every case


def test_no_noise_model_decides_on_the_suites_mean_and_lists_no_case_alone() -> None:
    before, after = _noisy_pair(30, trial=5)
    baseline = _baseline(before)
    exact = compare(baseline, after)
    assert exact.has_regression and exact.regressed_cases  # the old fallback blocked
    verdict = statistical_compare(baseline, after)
    test = verdict.test
    assert test is not None and test.rule == "paired" and test.noise_before is None
    assert not verdict.has_regression and verdict.regressed_cases == ()
    assert set(test.within_noise) == set(exact.regressed_cases)
    assert set(verdict.noise) >= set(exact.regressed_cases)
    assert all("not judged alone" in s for s in verdict.noise_reasons)
    b = [r.overall_score for r in before]
    a = [r.overall_score for r in after]
    assert test.p_value == pytest.approx(
        stats.ttest_rel(b, a, alternative="greater").pvalue, rel=1e-8)


def test_no_noise_model_still_catches_a_real_drop_and_an_unscored_case() -> None:
    before, after = _noisy_pair(60, trial=6, shift=10)
    verdict = statistical_compare(_baseline(before), after)
    assert verdict.test is not None and verdict.test.rule == "paired"
    assert verdict.has_regression and verdict.regressed_cases == ()
    assert verdict.blocked_reasons[0].startswith("mean score fell by")
    before, after = _noisy_pair(30, trial=7)
    after[3] = CaseResult(id=after[3].id, status="unscored", judge=after[3].judge,
                          reason="provider error")
    verdict = statistical_compare(_baseline(before), after)
    assert verdict.has_regression and verdict.newly_unscored == (after[3].id,)
    assert verdict.blocked_reasons == (f"{after[3].id}: scored {before[3].overall_score} → "
                                       f"unscored (provider error)",)


def test_no_noise_model_false_alarms_stay_within_the_rate() -> None:
    # The default path (no noise model): 200 no-change trials blocked in at most 5 %.
    blocked = sum(statistical_compare(_baseline(b), a).has_regression
                  for b, a in (_noisy_pair(30, trial=400 + t) for t in range(200)))
    assert blocked <= 16, blocked


def test_false_alarms_and_listings_stay_within_the_rates() -> None:
    # 200 independent no-change trials: blocked in at most 5 % (binomial slack: 8 %).
    blocked = 0
    for trial in range(200):
        before, after = _noisy_pair(30, trial=100 + trial)
        blocked += statistical_compare(_baseline(before), after, before=NOISE,
                                       after=NOISE).has_regression
    assert blocked <= 16, blocked


def test_old_baseline_files_read_and_write_back_byte_for_byte() -> None:
    old = {"baselineId": "", "cases": {"a": {"band": "good", "overallScore": 80,
                                             "passed": True, "spread": None,
                                             "status": "scored"}},
           "models": ["m"], "passRate": 1.0, "recordedFrom": "r1", "rubric": "default",
           "rubricHash": "h", "score": 80.0, "suite": "s", "threshold": 0.05, "version": 1}
    from judge.core.outcomes.baseline import BaselineCase, baseline_id
    old["baselineId"] = baseline_id("s", {"a": BaselineCase.model_validate(old["cases"]["a"])})
    text = json.dumps(old, sort_keys=True, indent=2) + "\n"
    parsed = parse_baseline(text, "old.json")
    assert parsed.judgments is None and parsed.noise is None
    # Written back, it is the same file plus its seal (the digest of its content): no
    # "judgments" or "noise" key appears.
    written = json.loads(baseline_text(parsed))
    assert written.pop("digest").startswith("sha256:")
    assert json.dumps(written, sort_keys=True, indent=2) + "\n" == text


def test_noise_model_is_the_pooled_sd_with_a_chi_square_interval() -> None:
    rng = random.Random(8)
    results, groups = [], []
    for i in range(12):
        values = [rng.randint(40, 60) for _ in range(3)]
        groups.append(values)
        results += [_result(f"c{i}", v, f"k{i}.{k}", sample=k, ai=v) for k, v in
                    enumerate(values)]
    model = measure_noise(results, model="m", rubric_hash="rh", template_id="t",
                          template_hash="th", suite="s", source="probe", runs=("r",))
    assert model is not None
    pooled = np.sqrt(np.mean([np.var(g, ddof=1) for g in groups]))
    assert model.overall.sd == pytest.approx(pooled)
    assert model.overall.df == 24 and model.cases == 12 and model.asks == 36
    assert model.ai["q"].sd == pytest.approx(pooled)
    ss = pooled**2 * 24
    assert model.overall.low == pytest.approx(np.sqrt(ss / stats.chi2.ppf(0.975, 24)), rel=0.01)
    assert model.overall.high == pytest.approx(np.sqrt(ss / stats.chi2.ppf(0.025, 24)), rel=0.01)
    assert noise_key("m", "rh", "th") == model.key
    assert len({noise_key("m", "rh", "th"), noise_key("m2", "rh", "th"),
                noise_key("m", "rh2", "th"), noise_key("m", "rh", "th2")}) == 4


@pytest.mark.parametrize("df", [10, 20, 60, 400])
def test_wilson_hilferty_is_within_one_percent(df: int) -> None:
    for q in (0.025, 0.975):
        assert _chi2_ppf(q, df) == pytest.approx(stats.chi2.ppf(q, df), rel=0.01)


def test_diff_of_one_noisy_judge_under_two_seeds_lists_within_the_fdr() -> None:
    # A fixed noisy fake judge (the fake server's noisy_integer), fixed seeds: 200 diffs of
    # two runs of the same judge. Every case is a null, so any case beyond noise is false;
    # BH at 5 % keeps the share of diffs with any such case at or under 5 % (slack: 8 %).
    with_any = moved = 0
    for trial in range(200):
        before, after = _noisy_pair(40, trial=1000 + trial)
        marks = classify_movements({r.id: (r, a) for r, a in zip(before, after, strict=True)},
                                   NOISE, NOISE)
        beyond = [m for m in marks.values() if m.noise == "beyond"]
        with_any += bool(beyond)
        moved += sum(m.delta != 0 for m in marks.values())
    assert moved > 5000
    assert with_any <= 16, with_any


def test_diff_marks_the_same_judgment_exact_and_a_big_move_beyond() -> None:
    a = _result("x", 80, "k1")
    same = _result("x", 70, "k1", cached=True)
    far = _result("x", 20, "k2")
    assert classify_movements({"x": (a, same)}, NOISE, NOISE)["x"].noise == "exact"
    moved = classify_movements({"x": (a, far)}, NOISE, NOISE)["x"]
    assert moved.noise == "beyond" and moved.explained is not None
    assert moved.explained == pytest.approx(stats.t.ppf(0.975, 20) * np.sqrt(128))
    assert classify_movements({"x": (a, far)}, None, None)["x"].noise == "unknown"
