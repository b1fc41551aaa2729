"""People beside the judge: α, the mean pairwise correlation and the leave-one-out rows,
against scipy and the krippendorff package on a fixture of our own."""

from __future__ import annotations

import random
from fractions import Fraction
from itertools import combinations
from statistics import fmean

import krippendorff
import numpy as np
import pytest
from scipy import stats

from judge.core.formats.labels import Label
from judge.core.formats.models import CaseResult, CategoryScore, JudgeMeta
from judge.core.formats.rubric import parse_rubric
from judge.core.formats.suite import Case
from judge.core.stats.levels import case_keys, parse_field
from judge.core.stats.raters import people_agreement

RUBRIC = parse_rubric("""version: 1
id: one
title: One
description: One category.
categories:
  - {id: quality, weight: 1.0, definition: How good., blend: {deterministic: 0.0, ai: 1.0}}
missing: {deterministic: ai_only}
""", "one.yaml")
REVIEWERS = ("ana", "bo", "cy")
TOLERANCE = 1e-12


def _judged(scores: dict[str, int]) -> dict[str, CaseResult]:
    meta = JudgeMeta(model="j", template_id="t", template_hash="h", rubric_hash="r",
                     temperature=0.0, seed=None, cache_key="", cached=False)
    return {cid: CaseResult(id=cid, status="scored", overall_score=s, judge=meta,
                            category_scores=(CategoryScore(category="quality", ai_score=s,
                                                           final_score=s, weight=1.0),))
            for cid, s in scores.items()}


@pytest.fixture
def fixture() -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    rng = random.Random(5)
    truth = {f"d{d}-s{s}": rng.randint(0, 100) for d in range(6) for s in range(4)}
    people = {r: {c: min(100, max(0, v + rng.randint(-20, 20))) for c, v in truth.items()
                  if not (r == "cy" and c.endswith("s3"))} for r in REVIEWERS}
    judge = {c: min(100, max(0, v + rng.randint(-35, 35))) for c, v in truth.items()}
    return people, judge


def _labels(people: dict[str, dict[str, int]]) -> list[Label]:
    return [Label(suite="s", case=c, category="quality", reviewer=r, at="2026-12-06T00:00:00Z",
                  score=v) for r, by in people.items() for c, v in by.items()]


def test_people_agreement_is_scipys_and_krippendorffs(
        fixture: tuple[dict[str, dict[str, int]], dict[str, int]]) -> None:
    people, judge = fixture
    (found,) = people_agreement(_labels(people), RUBRIC, _judged(judge))
    cases = sorted(judge)
    matrix = np.array([[people[r].get(c, np.nan) for c in cases] for r in REVIEWERS], float)
    assert found.alpha == pytest.approx(krippendorff.alpha(reliability_data=matrix,
                                                           level_of_measurement="interval"))
    taus = []
    for x, y in combinations(REVIEWERS, 2):
        common = sorted(set(people[x]) & set(people[y]))
        taus.append(stats.kendalltau([people[x][c] for c in common],
                                     [people[y][c] for c in common]).statistic)
    assert found.pairwise.n == 3
    assert found.pairwise.kendall_tau == pytest.approx(fmean(taus), abs=TOLERANCE)
    for row in found.by_reviewer:
        mine = people[row.reviewer]
        others = {c: Fraction(sum(people[o][c] for o in REVIEWERS
                                  if o != row.reviewer and c in people[o]),
                              sum(1 for o in REVIEWERS if o != row.reviewer and c in people[o]))
                  for c in mine}
        common = sorted(mine)
        rest = [float(others[c]) for c in common]
        assert row.with_others.n == len(common)
        assert row.with_others.pearson_r == pytest.approx(
            stats.pearsonr([mine[c] for c in common], rest).statistic, abs=TOLERANCE)
        assert row.with_others.kendall_tau == pytest.approx(
            stats.kendalltau([mine[c] for c in common], rest).statistic, abs=TOLERANCE)
        assert row.judge_with_others.spearman_rho == pytest.approx(
            stats.spearmanr([judge[c] for c in common], rest).statistic, abs=TOLERANCE)
        assert row.with_judge.pearson_r == pytest.approx(
            stats.pearsonr([mine[c] for c in common], [judge[c] for c in common]).statistic,
            abs=TOLERANCE)
    assert found.inside is False  # the judge is noisier than every reviewer


def test_levels_of_people_and_one_reviewer_gives_nothing(
        fixture: tuple[dict[str, dict[str, int]], dict[str, int]]) -> None:
    people, judge = fixture
    cases = [Case(id=c, metadata={"doc": c.split("-")[0], "system": c.split("-")[1]})
             for c in judge]
    grouping = case_keys(cases, parse_field("metadata.doc", "--group-by"),
                         parse_field("metadata.system", "--system-by"))
    (found,) = people_agreement(_labels(people), RUBRIC, _judged(judge), grouping)
    row = found.by_reviewer[0]
    assert row.with_judge.levels is not None and row.with_judge.levels.group is not None
    assert row.with_judge.levels.group.n == 6
    assert found.pairwise.levels is not None and found.pairwise.levels.system is not None
    assert found.pairwise.levels.system.n == 3  # averaged over the three pairs
    assert people_agreement(_labels({"ana": people["ana"]}), RUBRIC, _judged(judge)) == ()
