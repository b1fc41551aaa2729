"""Item, group and system level correlations against scipy, on fixtures of our own.

The group level is checked against the published recipe (G-Eval's meta-evaluation script:
scipy's three correlations inside each group, groups with a constant side skipped, the
unweighted mean), written out here with scipy; the system level against scipy on each
system's mean.
"""

from __future__ import annotations

import random
from statistics import fmean

import numpy as np
import pytest
from scipy import stats

from judge.core.formats.models import CaseResult, CategoryScore, JudgeMeta
from judge.core.formats.suite import Case, HumanLabel
from judge.core.stats.agreement import compare_runs
from judge.core.stats.correlation import pearson_r, pearson_rows
from judge.core.stats.intervals import AGREEMENT_RESAMPLES, resample_rows
from judge.core.stats.levels import case_keys, group_level, parse_field, system_level
from judge.core.text.errors import UsageError

TOLERANCE = 1e-12
"""Pearson's r is centred in floats (scipy normalises first): equal to this, not the bit."""


def _fixture(seed: int, groups: int = 12, per: int = 8) -> tuple[list[int], list[int], list[str],
                                                                   list[str]]:
    rng = random.Random(seed)
    a, b, g, s = [], [], [], []
    for k in range(groups):
        for j in range(per):
            human = rng.randint(1, 5) * 25 - 25
            a.append(human)
            b.append(min(100, max(0, human + rng.randint(-30, 30))))
            g.append(f"doc{k}")
            s.append(f"sys{j}")
    return a, b, g, s


@pytest.mark.parametrize("seed", range(5))
def test_pearson_kernel_is_scipys(seed: int) -> None:
    a, b, _, _ = _fixture(seed)
    assert pearson_r(a, b) == pytest.approx(stats.pearsonr(a, b).statistic, abs=TOLERANCE)
    reals = [x / 7 for x in a]
    assert pearson_r(reals, b) == pytest.approx(stats.pearsonr(reals, b).statistic,
                                                abs=TOLERANCE)
    samples = resample_rows(len(a), 20, seed)
    rows = pearson_rows(a, b, samples).tolist()
    for row, value in zip(samples.tolist(), rows, strict=True):
        x, y = [a[i] for i in row], [b[i] for i in row]
        assert value == pytest.approx(stats.pearsonr(x, y).statistic, abs=TOLERANCE)
    assert pearson_r([1, 1, 1], [1, 2, 3]) is None and pearson_r([1], [2]) is None


def _published_group_level(a: list[int], b: list[int], g: list[str]) -> tuple[float, ...]:
    """G-Eval's recipe, with scipy: per group, skip a constant side, average the rest."""
    found: list[tuple[float, float, float]] = []
    for key in dict.fromkeys(g):
        x = [v for v, k in zip(a, g, strict=True) if k == key]
        y = [v for v, k in zip(b, g, strict=True) if k == key]
        if len(set(x)) <= 1 or len(set(y)) <= 1:
            continue
        found.append((stats.pearsonr(x, y).statistic, stats.spearmanr(x, y).statistic,
                      stats.kendalltau(x, y).statistic))
    return tuple(fmean(col) for col in zip(*found, strict=True))


@pytest.mark.parametrize("seed", range(5))
def test_group_level_is_the_published_recipe(seed: int) -> None:
    a, b, g, _ = _fixture(seed, per=4)
    g[:4] = ["flat"] * 4
    a[:4] = [50] * 4  # one side constant in one group: skipped and counted
    level = group_level(a, b, g, intervals=True)
    r, rho, tau = _published_group_level(a, b, g)
    assert (level.n, level.skipped, level.items) == (11, 1, len(a))
    assert level.pearson_r == pytest.approx(r, abs=TOLERANCE)
    assert level.spearman_rho == pytest.approx(rho, abs=TOLERANCE)
    assert level.kendall_tau == pytest.approx(tau, abs=TOLERANCE)
    assert level.intervals is not None and level.intervals.kendall_tau is not None
    interval = level.intervals.kendall_tau
    assert interval.n == 11 and interval.resamples == AGREEMENT_RESAMPLES  # groups resampled
    assert interval.low is not None and interval.high is not None
    assert interval.low <= tau <= interval.high


@pytest.mark.parametrize("seed", range(5))
def test_system_level_is_scipy_on_the_systems_means(seed: int) -> None:
    a, b, _, s = _fixture(seed)
    level = system_level(a, b, s, intervals=True)
    names = sorted(set(s))
    mean_a = [fmean(v for v, k in zip(a, s, strict=True) if k == n) for n in names]
    mean_b = [fmean(v for v, k in zip(b, s, strict=True) if k == n) for n in names]
    assert level.n == len(names)
    assert level.pearson_r == pytest.approx(stats.pearsonr(mean_a, mean_b).statistic,
                                            abs=TOLERANCE)
    assert level.spearman_rho == pytest.approx(stats.spearmanr(mean_a, mean_b).statistic,
                                               abs=TOLERANCE)
    assert level.kendall_tau == pytest.approx(stats.kendalltau(mean_a, mean_b).statistic,
                                              abs=TOLERANCE)
    assert level.intervals is not None and level.intervals.pearson_r is not None
    assert level.intervals.pearson_r.n == len(names)


def test_unkeyed_items_and_undefined_levels_are_said() -> None:
    level = group_level([1, 2, 3], [3, 2, 1], ["x", None, "y"])
    assert (level.n, level.unkeyed, level.skipped, level.pearson_r) == (0, 1, 2, None)
    assert level.notes
    one = system_level([1, 2], [3, 4], ["s", "s"])
    assert one.n == 1 and one.pearson_r is None and one.notes


def test_fields_name_metadata_keys_or_tag_prefixes() -> None:
    case = Case(id="c1", metadata={"doc": 7, "nested": {"a": 1}}, tags=("sys=m1", "x"))
    assert parse_field("metadata.doc", "--group-by").of(case) == "7"
    assert parse_field("metadata.nested", "--group-by").of(case) is None
    assert parse_field("tag:sys=", "--system-by").of(case) == "m1"
    assert parse_field("tag:none=", "--system-by").of(case) is None
    for bad in ("doc", "metadata.", "tag:", "tags:x"):
        with pytest.raises(UsageError, match="names no case field"):
            parse_field(bad, "--group-by")


def _result(case_id: str, score: int) -> CaseResult:
    meta = JudgeMeta(model="j", template_id="t", template_hash="h", rubric_hash="r",
                     temperature=0.0, seed=1, output_mode="json_schema", cache_key="k",
                     cached=False)
    return CaseResult(id=case_id, status="scored", judged_by="llm", overall_score=score,
                      band=None, passed=None, judge=meta, category_scores=(
                          CategoryScore(category="quality", ai_score=score, final_score=score,
                                        weight=1.0),))


def test_compare_runs_reports_every_level_against_people() -> None:
    a, b, g, s = _fixture(3, groups=6, per=5)
    cases = [Case(id=f"c{i}", metadata={"doc": g[i], "system": s[i]}) for i in range(len(a))]
    grouping = case_keys(cases, parse_field("metadata.doc", "--group-by"),
                         parse_field("metadata.system", "--system-by"))
    labels = {f"c{i}": HumanLabel(overall=v, categories={"quality": v}) for i, v in enumerate(a)}
    comparison = compare_runs({"j": [_result(f"c{i}", v) for i, v in enumerate(b)]},
                              human=labels, grouping=grouping)
    (human,) = comparison.human
    (category,) = human.categories
    assert category.ai.pearson_r == pytest.approx(stats.pearsonr(a, b).statistic,
                                                  abs=TOLERANCE)
    found = category.ai.levels
    assert found is not None and found.group is not None and found.system is not None
    assert (found.group_by, found.system_by) == ("metadata.doc", "metadata.system")
    assert found.group.kendall_tau == pytest.approx(_published_group_level(a, b, g)[2],
                                                    abs=TOLERANCE)
    assert found.system.n == 5
    data = comparison.model_dump(mode="json")
    level = data["human"][0]["categories"][0]["ai"]["levels"]["group"]
    assert {"pearsonR", "spearmanRho", "kendallTau", "n", "skipped"} <= set(level)
    assert np.isfinite(level["kendallTau"])
