"""Agreement with intervals and with people, against
sklearn, scipy, krippendorff and Krippendorff's published worked example."""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.metrics import cohen_kappa_score
from sklearn.metrics import confusion_matrix as sk_confusion

from judge.core.formats.models import CaseResult, CategoryScore, JudgeMeta
from judge.core.formats.rubric import DEFAULT_BANDS
from judge.core.formats.suite import HumanLabel
from judge.core.scoring.scoring import band_for
from judge.core.stats.agreement import (
    compare_runs,
    confusion_matrix,
    krippendorff_alpha,
    pairwise_agreement,
)
from judge.core.stats.correlation import (
    kappa_rows,
    kendall_rows,
    kendall_tau_b,
    quadratic_kappa,
    spearman_rho,
    spearman_rows,
)
from judge.core.stats.intervals import AGREEMENT_RESAMPLES, DEFAULT_SEED
from judge.core.stats.seeded import SplitMix64
from judge.core.text.frozen import wire_value

N = None
KRIPPENDORFF_2011 = [  # "Computing Krippendorff's Alpha-Reliability" (2011), 4 observers
    [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
]


def test_krippendorffs_published_example() -> None:
    # The paper's values: nominal 0.743, ordinal 0.815, interval 0.849.
    assert krippendorff_alpha(KRIPPENDORFF_2011, "nominal") == pytest.approx(0.743, abs=5e-4)
    assert krippendorff_alpha(KRIPPENDORFF_2011, "ordinal") == pytest.approx(0.815, abs=5e-4)
    assert krippendorff_alpha(KRIPPENDORFF_2011, "interval") == pytest.approx(0.849, abs=5e-4)


@pytest.mark.parametrize("seed", range(6))
def test_kernels_match_sklearn_and_scipy(seed: int) -> None:
    rng = random.Random(seed)
    a = [rng.randint(0, 20) * 5 for _ in range(45)]
    b = [min(100, max(0, x + rng.randint(-25, 25))) for x in a]
    ia = [rng.randint(0, 4) for _ in range(45)]
    ib = [min(4, max(0, x + rng.randint(-1, 1))) for x in ia]
    assert quadratic_kappa(ia, ib, 5) == pytest.approx(
        cohen_kappa_score(ia, ib, labels=list(range(5)), weights="quadratic"))
    assert spearman_rho(a, b) == pytest.approx(stats.spearmanr(a, b).statistic)
    assert kendall_tau_b(a, b) == pytest.approx(stats.kendalltau(a, b).statistic)


def _pairwise_tau_b(a: list[int], b: list[int]) -> float | None:
    """The definition, pair by pair: the reference the O(n log n) kernel must equal exactly."""
    n = len(a)
    score = ties_a = ties_b = 0
    for i in range(n):
        for j in range(i + 1, n):
            da = (a[i] > a[j]) - (a[i] < a[j])
            db = (b[i] > b[j]) - (b[i] < b[j])
            score += da * db
            ties_a += da == 0
            ties_b += db == 0
    pairs = n * (n - 1) // 2
    denominator = (pairs - ties_a) * (pairs - ties_b)
    return None if denominator <= 0 else score / math.sqrt(denominator)


def test_fast_kernels_equal_the_definitions_bit_for_bit() -> None:
    """Sizes 0-60, 2-101 distinct values (heavy ties): the same float, not an approximation."""
    rng = random.Random(11)
    for _ in range(400):
        n, k = rng.randint(0, 60), rng.choice([2, 3, 5, 101])
        a = [rng.randrange(k) for _ in range(n)]
        b = [rng.randrange(k) for _ in range(n)]
        assert kendall_tau_b(a, b) == _pairwise_tau_b(a, b)
        if n >= 2 and len(set(a)) > 1 and len(set(b)) > 1:
            assert kendall_tau_b(a, b) == pytest.approx(stats.kendalltau(a, b).statistic)
        count = min(k, 5)
        ia, ib = [x % count for x in a], [x % count for x in b]
        if n and len(set(ia) | set(ib)) > 1:
            assert quadratic_kappa(ia, ib, count) == pytest.approx(cohen_kappa_score(
                ia, ib, labels=list(range(count)), weights="quadratic"))


def test_confusion_matrix_is_sklearns() -> None:
    rng = random.Random(3)
    names = [b.name for b in sorted(DEFAULT_BANDS, key=lambda b: b.min)]
    human = [rng.choice(names) for _ in range(50)]
    judge = [rng.choice(names) for _ in range(50)]
    ours = confusion_matrix(human, judge, DEFAULT_BANDS)
    assert ours.labels == tuple(names)
    assert [list(r) for r in ours.counts] == sk_confusion(human, judge, labels=names).tolist()


def test_pair_intervals_are_seeded_and_hold_the_estimate() -> None:
    rng = random.Random(1)
    a = [rng.randint(0, 100) for _ in range(40)]
    b = [min(100, max(0, x + rng.randint(-20, 20))) for x in a]
    first = pairwise_agreement(a, b, intervals=True)
    assert first == pairwise_agreement(a, b, intervals=True)
    ci = first.intervals
    assert ci is not None
    for name in ("weightedKappa", "spearmanRho", "kendallTau", "meanAbsDiff",
                 "exactBandAgreement"):
        interval = wire_value(ci, name)
        point = wire_value(first, name)
        assert interval is not None and interval.low is not None and interval.high is not None
        assert interval.estimate == pytest.approx(point)
        assert interval.low <= point <= interval.high
    # On 40 cases a κ is not known to ±0.01: the interval has width.
    assert ci.weighted_kappa is not None and ci.weighted_kappa.high - ci.weighted_kappa.low > 0.05


def _meta(model: str) -> JudgeMeta:
    return JudgeMeta(model=model, temperature=0, seed=1, template_id="t", template_hash="th",
                     rubric_hash="rh", cache_key=f"{model}-k", cached=False)


def _result(cid: str, score: int, model: str) -> CaseResult:
    cats = (CategoryScore(category="quality", ai_score=score, final_score=score, weight=1.0,
                          band=band_for(score), rule="ai_only"),)
    return CaseResult(id=cid, status="scored", overall_score=score, band=band_for(score),
                      passed=score >= 60, category_scores=cats, judge=_meta(model))


def test_agreement_with_people_has_intervals_confusion_and_a_paired_verdict() -> None:
    rng = random.Random(7)
    people = {f"c{i:02d}": rng.randint(0, 100) for i in range(40)}
    close = {cid: min(100, max(0, s + rng.randint(-4, 4))) for cid, s in people.items()}
    random_judge = {cid: rng.randint(0, 100) for cid in people}
    labels = {cid: HumanLabel(overall=s, categories={"quality": s}) for cid, s in people.items()}
    named = {"close": [_result(c, s, "close") for c, s in close.items()],
             "random": [_result(c, s, "random") for c, s in random_judge.items()]}
    comparison = compare_runs(named, human=labels, intervals=True)
    by = {h.judge: h for h in comparison.human}
    close_h = by["close"]
    assert close_h.confusion is not None
    ids = sorted(people)
    expected = sk_confusion([band_for(people[i]) for i in ids], [band_for(close[i]) for i in ids],
                            labels=list(close_h.confusion.labels)).tolist()
    assert [list(r) for r in close_h.confusion.counts] == expected
    assert "quality" in close_h.category_confusion
    cat = close_h.categories[0].ai
    assert cat.intervals is not None and cat.intervals.weighted_kappa is not None
    assert cat.weighted_kappa == pytest.approx(cohen_kappa_score(
        [band_for(people[i]) for i in ids], [band_for(close[i]) for i in ids],
        labels=list(close_h.confusion.labels), weights="quadratic"))
    sizes = [d.size for d in by["random"].disagreements]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > 30
    (pair,) = comparison.human_pairs
    assert pair.mad_difference is not None and pair.mad_difference.high is not None
    assert pair.mad_difference.high < 0 and "close is closer" in pair.verdict
    assert pair.share_a_farther == 0.0
    body = json.loads(json.dumps(comparison.model_dump(mode="json")))
    assert body["human"][0]["categories"][0]["ai"]["intervals"]["weightedKappa"]["low"] < \
        body["human"][0]["categories"][0]["ai"]["weightedKappa"]


def test_overall_scope_gives_the_same_overall_intervals_and_no_others() -> None:
    rng = random.Random(11)
    people = {f"c{i:02d}": rng.randint(0, 100) for i in range(30)}
    labels = {cid: HumanLabel(overall=s, categories={"quality": s}) for cid, s in people.items()}
    named = {m: [_result(c, min(100, max(0, s + rng.randint(-15, 15))), m)
                 for c, s in people.items()] for m in ("a", "b")}
    full = compare_runs(named, human=labels, intervals=True)
    scoped = compare_runs(named, human=labels, intervals="overall")
    for whole, only in zip(full.human, scoped.human, strict=True):
        assert whole.overall.intervals is not None
        assert only.overall == whole.overall  # the same intervals, bit for bit
        assert only.ai_all.intervals is None and whole.ai_all.intervals is not None
        assert all(c.ai.intervals is None and c.final.intervals is None
                   for c in only.categories)
        assert only.ai_all == whole.ai_all.model_copy(update={"intervals": None})
    assert full.human_pairs and not scoped.human_pairs
    assert scoped.pairs[0].overall == full.pairs[0].overall
    assert scoped.pairs[0].ai_all.intervals is None


def test_panel_alpha_interval() -> None:
    rng = random.Random(2)
    base = [rng.randint(0, 100) for _ in range(30)]
    named = {m: [_result(f"c{i}", min(100, max(0, s + rng.randint(-5, 5))), m)
                 for i, s in enumerate(base)] for m in ("a", "b", "c")}
    alpha = compare_runs(named, intervals=True).alpha
    assert alpha is not None and alpha.overall is not None
    interval = alpha.overall_interval
    assert interval is not None and interval.low is not None and interval.high is not None
    assert interval.low <= alpha.overall <= interval.high < 1.0


def test_the_paired_verdict_names_no_winner_from_one_case() -> None:
    from judge.core.stats.agreement import human_pair_comparison
    labels = {"c1": HumanLabel(overall=80), "c2": HumanLabel(overall=20),
              "c3": HumanLabel(overall=55)}
    near = {"c1": _result("c1", 78, "near"), "c2": _result("c2", 23, "near"),
            "c3": _result("c3", 57, "near")}
    far = {"c1": _result("c1", 30, "far"), "c2": _result("c2", 70, "far"),
           "c3": _result("c3", 5, "far")}
    one = human_pair_comparison("near", "far", {"c1": near["c1"]}, {"c1": far["c1"]}, labels)
    assert one.n == 1 and "not told apart" in one.verdict and "closer" not in one.verdict
    assert one.mad_difference is not None and one.mad_difference.estimate == -48
    three = human_pair_comparison("near", "far", near, far, labels)
    assert three.n == 3 and three.verdict.startswith("near is closer to the people than far")


# -- the kernels over the sample matrix against the definitions, row by row ----------------


def _kappa_definition(x: list[int], y: list[int], count: int) -> float | None:
    """Quadratic κ from the confusion table, cell by cell (the closed form's reference)."""
    n = len(x)
    if n == 0 or count < 2:
        return None
    table, rows, cols = Counter(zip(x, y, strict=True)), Counter(x), Counter(y)
    observed = sum(c * (i - j) ** 2 for (i, j), c in table.items())
    chance = sum(rows[i] * cols[j] * (i - j) ** 2 for i in range(count) for j in range(count))
    expected = chance / n
    return None if expected == 0 else 1 - observed / expected


def _rho_definition(a: list[int], b: list[int]) -> float | None:
    """Pearson on average ranks with fsum: the pure-Python kernel the matrix one replaced."""
    def ranks(values: list[int]) -> list[float]:
        order = sorted(values)
        return [order.index(v) + (order.count(v) + 1) / 2 for v in values]

    n = len(a)
    if n < 2:
        return None
    x, y = ranks(a), ranks(b)
    mx, my = math.fsum(x) / n, math.fsum(y) / n
    sxy = math.fsum((p - mx) * (q - my) for p, q in zip(x, y, strict=True))
    sxx, syy = math.fsum((p - mx) ** 2 for p in x), math.fsum((q - my) ** 2 for q in y)
    return None if sxx == 0 or syy == 0 else sxy / math.sqrt(sxx * syy)


def _nan_none(values: object) -> list[float | None]:
    return [None if math.isnan(v) else v for v in np.asarray(values).tolist()]


@st.composite
def _cases_and_samples(draw: st.DrawFn) -> tuple[list[int], list[int], list[list[int]]]:
    n = draw(st.integers(0, 30))
    top = draw(st.sampled_from([1, 2, 4, 100]))
    a = draw(st.lists(st.integers(0, top), min_size=n, max_size=n))
    b = draw(st.lists(st.integers(0, top), min_size=n, max_size=n))
    width = draw(st.integers(0, 2 * n)) if n else 0
    rows = draw(st.lists(st.lists(st.integers(0, n - 1), min_size=width, max_size=width),
                         min_size=1, max_size=6)) if n else [[]]
    return a, b, rows


@settings(max_examples=300, deadline=None)
@given(_cases_and_samples())
def test_row_kernels_equal_the_definitions_bit_for_bit(
        case: tuple[list[int], list[int], list[list[int]]]) -> None:
    """Every row of the matrix kernels is the definition's float on that row's cases."""
    a, b, rows = case
    samples = np.asarray(rows, dtype=np.intp).reshape(len(rows), -1)
    ia, ib = [x % 5 for x in a], [y % 5 for y in b]
    tau = _nan_none(kendall_rows(a, b, samples))
    rho = _nan_none(spearman_rows(a, b, samples))
    kappa = _nan_none(kappa_rows(ia, ib, 5, samples))
    for k, row in enumerate(rows):
        x, y = [a[i] for i in row], [b[i] for i in row]
        assert tau[k] == _pairwise_tau_b(x, y)
        assert rho[k] == _rho_definition(x, y)
        assert kappa[k] == _kappa_definition([ia[i] for i in row], [ib[i] for i in row], 5)


def test_scalar_kernels_are_the_definitions_and_scipys() -> None:
    rng = random.Random(5)
    for _ in range(200):
        n, k = rng.randint(0, 40), rng.choice([2, 3, 101])
        a = [rng.randrange(k) for _ in range(n)]
        b = [rng.randrange(k) for _ in range(n)]
        assert spearman_rho(a, b) == _rho_definition(a, b)
        assert quadratic_kappa([x % 4 for x in a], [y % 4 for y in b], 4) == \
            _kappa_definition([x % 4 for x in a], [y % 4 for y in b], 4)
        if n >= 2 and len(set(a)) > 1 and len(set(b)) > 1:
            assert spearman_rho(a, b) == pytest.approx(stats.spearmanr(a, b).statistic)


def _loop_interval(n: int, statistic: Callable[[list[int]], float | None]) -> tuple[
        float | None, float | None, int, list[float]]:
    """The resampling loop the matrix replaced: ``rng.below(n)`` n times per resample, the
    statistic on each, numpy's linear percentile rule on the sorted values."""
    rng, values = SplitMix64(DEFAULT_SEED), []
    for _ in range(AGREEMENT_RESAMPLES):
        if (v := statistic([rng.below(n) for _ in range(n)])) is not None:
            values.append(v)
    ordered = sorted(values)

    def quantile(q: float) -> float:
        position = q * (len(ordered) - 1)
        below = math.floor(position)
        above = min(below + 1, len(ordered) - 1)
        return ordered[below] + (ordered[above] - ordered[below]) * (position - below)

    if len(ordered) < max(20, AGREEMENT_RESAMPLES // 2):
        return None, None, AGREEMENT_RESAMPLES - len(ordered), values
    return (quantile((1 - 0.95) / 2), quantile((1 + 0.95) / 2), AGREEMENT_RESAMPLES - len(ordered),
            values)


@pytest.mark.parametrize("seed", range(3))
def test_intervals_are_the_resampling_loops_to_the_bit(seed: int) -> None:
    """The same draws, in the same order, the same statistics: the same interval endpoints."""
    rng = random.Random(seed)
    n = rng.choice([6, 16, 23])
    a = [rng.randint(0, 20) * 5 for _ in range(n)]
    b = [min(100, max(0, x + rng.randint(-30, 30))) for x in a]
    found = pairwise_agreement(a, b, intervals=True).intervals
    assert found is not None
    scale = sorted(DEFAULT_BANDS, key=lambda band: band.min)
    ia = [[band.name for band in scale].index(band_for(x)) for x in a]
    ib = [[band.name for band in scale].index(band_for(y)) for y in b]
    definitions: dict[str, Callable[[list[int]], float | None]] = {
        "weightedKappa": lambda s: _kappa_definition([ia[i] for i in s], [ib[i] for i in s],
                                                     len(scale)),
        "spearmanRho": lambda s: _rho_definition([a[i] for i in s], [b[i] for i in s]),
        "kendallTau": lambda s: _pairwise_tau_b([a[i] for i in s], [b[i] for i in s]),
        "meanAbsDiff": lambda s: math.fsum(abs(b[i] - a[i]) for i in s) / len(s),
        "exactBandAgreement": lambda s: sum(ia[i] == ib[i] for i in s) / len(s),
    }
    for name, definition in definitions.items():
        interval = wire_value(found, name)
        assert interval is not None
        low, high, undefined, _ = _loop_interval(n, definition)
        assert (interval.low, interval.high, interval.undefined) == (low, high, undefined), name


def test_the_paired_comparison_is_the_resampling_loop_to_the_bit() -> None:
    from judge.core.stats.agreement import human_pair_comparison
    rng = random.Random(8)
    people = {f"c{i:02d}": rng.randint(0, 100) for i in range(15)}
    labels = {c: HumanLabel(overall=s) for c, s in people.items()}
    near = {c: _result(c, min(100, max(0, s + rng.randint(-10, 10))), "near")
            for c, s in people.items()}
    far = {c: _result(c, min(100, max(0, s + rng.randint(-25, 25))), "far")
           for c, s in people.items()}
    found = human_pair_comparison("near", "far", near, far, labels)
    ids = sorted(people)
    h = [people[i] for i in ids]
    j1, j2 = [near[i].overall_score or 0 for i in ids], [far[i].overall_score or 0 for i in ids]

    def mad_diff(s: list[int]) -> float:
        return (math.fsum(abs(j1[i] - h[i]) for i in s) / len(s)
                - math.fsum(abs(j2[i] - h[i]) for i in s) / len(s))

    low, high, _, values = _loop_interval(len(ids), mad_diff)
    assert found.mad_difference is not None
    assert (found.mad_difference.low, found.mad_difference.high) == (low, high)
    assert found.share_a_farther == 1 - sum(v <= 0 for v in values) / len(values)


def test_tau_blocks_change_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The sign matrix in blocks of columns and the rows in blocks: the same counts."""
    import judge.core.stats.correlation as correlation
    from judge.core.stats.intervals import resample_rows

    rng = random.Random(4)
    a = [rng.randrange(30) for _ in range(40)]
    b = [rng.randrange(30) for _ in range(40)]
    samples = resample_rows(40, 50, 3)
    whole = kendall_rows(a, b, samples)
    monkeypatch.setattr(correlation, "_BLOCK", 100)  # 2-3 columns of ~40 cells a block
    monkeypatch.setattr(correlation, "_ONE_THREAD", 16 * 40 * 40 * 2)  # rows in blocks of 32+
    assert kendall_rows(a, b, samples).tolist() == whole.tolist()
    assert [kendall_tau_b([a[i] for i in r], [b[i] for i in r]) for r in samples.tolist()] == \
        _nan_none(whole)
