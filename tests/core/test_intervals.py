"""The interval machinery against scipy: t distribution, t test, bootstrap, BH."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy import stats

from judge.core.stats.intervals import (
    benjamini_hochberg,
    bootstrap,
    mean_test,
    paired_bootstrap,
    per_row,
    t_cdf,
    t_ppf,
    t_sf,
)
from judge.core.stats.seeded import SplitMix64


@pytest.mark.parametrize("df", [1, 2, 3, 5, 9, 24, 59, 199, 1000])
@pytest.mark.parametrize("x", [-6.0, -2.1, -0.3, 0.0, 0.7, 1.96, 3.5, 12.0])
def test_t_matches_scipy(df: int, x: float) -> None:
    assert t_cdf(x, df) == pytest.approx(stats.t.cdf(x, df), abs=1e-10)
    assert t_sf(x, df) == pytest.approx(stats.t.sf(x, df), rel=1e-7, abs=1e-14)


@pytest.mark.parametrize("df", [1, 4, 19, 59, 500])
@pytest.mark.parametrize("q", [0.025, 0.05, 0.5, 0.95, 0.975, 0.999])
def test_t_ppf_matches_scipy(df: int, q: float) -> None:
    assert t_ppf(q, df) == pytest.approx(stats.t.ppf(q, df), abs=1e-8)


def test_mean_test_is_scipys_one_sided_paired_t() -> None:
    rng = random.Random(3)
    before = [rng.randint(30, 90) for _ in range(40)]
    after = [b - rng.randint(-10, 14) for b in before]
    drops = [b - a for b, a in zip(before, after, strict=True)]
    ours = mean_test([float(d) for d in drops])
    assert ours is not None
    theirs = stats.ttest_rel(before, after, alternative="greater")
    assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-8)
    low, high = stats.t.interval(0.95, len(drops) - 1, loc=np.mean(drops),
                                 scale=stats.sem(drops))
    assert (ours.interval.low, ours.interval.high) == (pytest.approx(low), pytest.approx(high))


def test_mean_test_of_an_exact_replay_is_the_point() -> None:
    exact = mean_test([6.0, 6.0, 6.0])
    assert exact is not None
    assert exact.interval.method == "exact" and exact.interval.low == exact.interval.high == 6
    assert exact.p_value == 0.0
    zeros = mean_test([0.0, 0.0])
    assert zeros is not None and zeros.p_value == 1.0
    assert mean_test([]) is None


def test_benjamini_hochberg_matches_scipy() -> None:
    rng = random.Random(11)
    p = {f"c{i}": rng.random() ** 3 for i in range(50)}
    adjusted = stats.false_discovery_control(list(p.values()), method="bh")
    expected = {k for k, a in zip(p, adjusted, strict=True) if a <= 0.05}
    assert benjamini_hochberg(p, 0.05) == expected
    assert expected, "the fixture rejects something"
    assert benjamini_hochberg({}, 0.05) == frozenset()


def test_generator_is_fixed_and_uniform() -> None:
    first = [SplitMix64(7).next64() for _ in range(1)]
    assert first == [SplitMix64(7).next64()]
    rng = SplitMix64(1)
    counts = [0] * 6
    for _ in range(60_000):
        counts[rng.below(6)] += 1
    assert stats.chisquare(counts).pvalue > 0.001


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def test_bootstrap_is_seeded_and_agrees_with_scipy() -> None:
    rng = random.Random(5)
    data = [rng.gauss(50, 12) for _ in range(60)]
    ours = bootstrap(data, _mean, seed=1, resamples=4000)
    again = bootstrap(data, _mean, seed=1, resamples=4000)
    assert ours == again and ours is not None
    res = stats.bootstrap((np.array(data),), np.mean, n_resamples=4000, method="percentile",
                          random_state=np.random.default_rng(0))
    width = res.confidence_interval.high - res.confidence_interval.low
    assert ours.low == pytest.approx(res.confidence_interval.low, abs=0.1 * width)
    assert ours.high == pytest.approx(res.confidence_interval.high, abs=0.1 * width)


def test_bca_agrees_with_scipy_on_a_skewed_statistic() -> None:
    rng = random.Random(9)
    data = [rng.expovariate(0.1) for _ in range(50)]

    def sd(xs: list[float]) -> float | None:
        return float(np.std(xs, ddof=1)) if len(xs) > 1 else None

    ours = bootstrap(data, sd, seed=2, resamples=4000, method="bca")
    assert ours is not None and ours.low is not None and ours.high is not None
    res = stats.bootstrap((np.array(data),), lambda x: np.std(x, ddof=1), n_resamples=4000,
                          method="BCa", random_state=np.random.default_rng(0))
    width = res.confidence_interval.high - res.confidence_interval.low
    assert ours.low == pytest.approx(res.confidence_interval.low, abs=0.12 * width)
    assert ours.high == pytest.approx(res.confidence_interval.high, abs=0.12 * width)


def test_undefined_statistic_is_none_not_nan() -> None:
    assert bootstrap([1.0], lambda xs: None) is None
    constant = bootstrap([3.0] * 10, lambda xs: None if len(set(xs)) < 2 else 1.0)
    assert constant is None


def test_paired_bootstrap_keeps_the_pairing() -> None:
    rng = random.Random(4)
    base = [rng.gauss(0, 10) for _ in range(40)]
    pairs = [(x, x + 2 + rng.gauss(0, 0.5)) for x in base]
    found = paired_bootstrap(len(pairs), per_row(pairs, lambda s: _mean([b for _, b in s])),
                             per_row(pairs, lambda s: _mean([a for a, _ in s])), seed=3,
                             resamples=2000)
    assert found is not None
    interval, p = found
    # Unpaired, the spread of 10 would swamp the 2-point difference; paired it is sharp.
    assert interval.low is not None and interval.high is not None
    assert 1.5 < interval.low < interval.estimate < interval.high < 2.5
    assert p == 0.0
    assert math.isclose(interval.estimate, sum(b - a for a, b in pairs) / 40)
