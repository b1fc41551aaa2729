"""People beside the judge: how far reviewers agree among themselves, and where the judge falls.

With two or more reviewers of a category, per category:

- Krippendorff's α (interval) over the reviewer x case matrix (:func:`judge.core.formats.labels.
  reviewer_alpha`, the one α), the chance-corrected agreement of the people;
- the mean pairwise correlation between reviewers (Pearson's r, Spearman's ρ, Kendall's τ-b)
  at each level: over the cases both of a pair labelled, then unweighted over the pairs;
- per reviewer: the judge against that reviewer; that reviewer against the mean of the
  *other* reviewers (leave one out: how well one person predicts the rest, the ceiling a
  judge is read against, as SummEval and G-Eval read inter-annotator agreement); and the
  judge against the same mean of the others, so the two are over the same cases and the
  same reference. The judge is "inside the range of people" when its correlation with the
  others lies between the reviewers' own.

The means of the other reviewers are exact fractions; the correlations read them exactly
(:mod:`judge.core.stats.levels`). Pure: labels and results in, values out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from itertools import combinations
from statistics import fmean

from pydantic import Field

from ..formats.labels import Label, reviewer_alpha, reviewer_scores
from ..formats.models import CaseResult
from ..formats.rubric import Rubric
from ..text.frozen import Frozen
from .levels import Exact, Grouping, Levels, LevelStats, correlations, levels

__all__ = ["Correlations", "PeopleCategory", "ReviewerAgreement", "people_agreement"]


class Correlations(Frozen):
    """Pearson's r, Spearman's ρ and Kendall's τ-b of two raters over the cases both scored."""

    n: int
    pearson_r: float | None = Field(None, alias="pearsonR")
    spearman_rho: float | None = Field(None, alias="spearmanRho")
    kendall_tau: float | None = Field(None, alias="kendallTau")
    levels: Levels | None = None
    """The group and system levels (when a grouping or a system is named)."""


class ReviewerAgreement(Frozen):
    """One reviewer beside the judge, on one category."""

    reviewer: str
    with_judge: Correlations = Field(alias="withJudge")
    """The judge against this reviewer."""
    with_others: Correlations = Field(alias="withOthers")
    """This reviewer against the mean of the other reviewers (leave one out)."""
    judge_with_others: Correlations = Field(alias="judgeWithOthers")
    """The judge against the same mean of the others, over the same cases."""


class PeopleCategory(Frozen):
    """The people's agreement among themselves on one category, and the judge among them."""

    category: str
    reviewers: tuple[str, ...]
    alpha: float | None
    """Krippendorff's α (interval) among the reviewers."""
    pairwise: Correlations
    """The mean over reviewer pairs of each correlation (``n``: the pairs averaged)."""
    by_reviewer: tuple[ReviewerAgreement, ...] = Field(alias="byReviewer")
    inside: bool | None = None
    """The judge's correlation (τ) with the others lies within the reviewers' own range."""


def _pair(ids: Sequence[str], a: Sequence[Exact], b: Sequence[Exact],
          grouping: Grouping | None) -> Correlations:
    found = correlations(a, b) if len(a) >= 2 else {}
    return Correlations(
        n=len(a), pearson_r=found.get("pearsonR"), spearman_rho=found.get("spearmanRho"),
        kendall_tau=found.get("kendallTau"),
        levels=None if grouping is None or not a else levels(a, b, ids, grouping))


def _aligned(first: Mapping[str, Exact], second: Mapping[str, Exact],
             ) -> tuple[list[str], list[Exact], list[Exact]]:
    ids = sorted(set(first) & set(second))
    return ids, [first[i] for i in ids], [second[i] for i in ids]


def _correlate(first: Mapping[str, Exact], second: Mapping[str, Exact],
               grouping: Grouping | None) -> Correlations:
    ids, a, b = _aligned(first, second)
    return _pair(ids, a, b, grouping)


def _mean(values: Iterable[float | None]) -> float | None:
    found = [v for v in values if v is not None]
    return fmean(found) if found else None


def _pairwise(by_reviewer: Mapping[str, Mapping[str, int]],
              grouping: Grouping | None) -> Correlations:
    """Each correlation (and each level's) averaged over the reviewer pairs."""
    pairs = [_correlate(by_reviewer[x], by_reviewer[y], grouping)
             for x, y in combinations(sorted(by_reviewer), 2)]
    levels_of = [p.levels for p in pairs if p.levels is not None]
    merged = None
    if levels_of:
        merged = Levels(group_by=levels_of[0].group_by, system_by=levels_of[0].system_by,
                        group=_mean_level([lv.group for lv in levels_of]),
                        system=_mean_level([lv.system for lv in levels_of]))
    return Correlations(n=len(pairs), pearson_r=_mean(p.pearson_r for p in pairs),
                        spearman_rho=_mean(p.spearman_rho for p in pairs),
                        kendall_tau=_mean(p.kendall_tau for p in pairs), levels=merged)


def _mean_level(found: Sequence[LevelStats | None]) -> LevelStats | None:
    stats = [s for s in found if s is not None]
    if not stats:
        return None
    return LevelStats(n=len(stats), items=sum(s.items for s in stats),
                      pearson_r=_mean(s.pearson_r for s in stats),
                      spearman_rho=_mean(s.spearman_rho for s in stats),
                      kendall_tau=_mean(s.kendall_tau for s in stats),
                      notes=("the mean over reviewer pairs (n: pairs)",))


def _reviewer(name: str, by_reviewer: Mapping[str, Mapping[str, int]],
              judge: Mapping[str, int], grouping: Grouping | None) -> ReviewerAgreement:
    others: dict[str, Exact] = {}
    for case in by_reviewer[name]:
        given = [by_reviewer[r][case] for r in by_reviewer if r != name and case in
                 by_reviewer[r]]
        if given:
            others[case] = Fraction(sum(given), len(given))
    own = {c: v for c, v in by_reviewer[name].items() if c in others and c in judge}
    return ReviewerAgreement(
        reviewer=name, with_judge=_correlate(by_reviewer[name], judge, grouping),
        with_others=_correlate(own, others, grouping),
        judge_with_others=_correlate({c: judge[c] for c in own}, others, grouping))


def _inside(rows: Sequence[ReviewerAgreement]) -> bool | None:
    own = [r.with_others.kendall_tau for r in rows if r.with_others.kendall_tau is not None]
    judge = [r.judge_with_others.kendall_tau for r in rows
             if r.judge_with_others.kendall_tau is not None]
    if len(own) < 2 or not judge:
        return None
    return min(own) <= fmean(judge) <= max(own)


def people_agreement(labels: Iterable[Label], rubric: Rubric,
                     judged: Mapping[str, CaseResult],
                     grouping: Grouping | None = None) -> tuple[PeopleCategory, ...]:
    """Per category with two or more reviewers: α, pairwise correlations, the judge among them.

    ``judged`` is the judge's headline result per case id (its AI score per category is read).
    """
    given = list(labels)
    scored = reviewer_scores(given, rubric)
    alpha = reviewer_alpha(given, rubric)
    out: list[PeopleCategory] = []
    for cat in (c.id for c in rubric.categories):
        by_reviewer: dict[str, dict[str, int]] = {}
        for (case, category), by in scored.items():
            if category == cat:
                for reviewer, score in by.items():
                    by_reviewer.setdefault(reviewer, {})[case] = score
        if len(by_reviewer) < 2:
            continue
        judge = {cid: c.ai_score for cid, r in judged.items() if r.status == "scored"
                 for c in r.category_scores if c.category == cat and c.ai_score is not None}
        rows = tuple(_reviewer(name, by_reviewer, judge, grouping)
                     for name in sorted(by_reviewer))
        out.append(PeopleCategory(category=cat, reviewers=tuple(sorted(by_reviewer)),
                                  alpha=alpha.get(cat), pairwise=_pairwise(by_reviewer,
                                                                           grouping),
                                  by_reviewer=rows, inside=_inside(rows)))
    return tuple(out)
