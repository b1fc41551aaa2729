"""Run summaries: pass rate, per-category averages, failures, distributions, spend.

Built incrementally so a 100,000-case run never holds its results in memory.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction

from pydantic import Field

from ..formats.models import CaseResult
from ..scoring.exact import round_half_up
from ..stats.judge_health import HealthBuilder, JudgeHealth
from ..text.frozen import Frozen
from .usage import ZERO, Usage

__all__ = ["FAILURE_LIST_LIMIT", "Failure", "Summary", "SummaryBuilder"]

FAILURE_LIST_LIMIT = 50


def _mean(total: Fraction | int, count: int, places: int) -> float | None:
    if count == 0:
        return None
    scaled = Fraction(total) / count * 10**places
    return float(Fraction(round_half_up(scaled), 10**places))


class Failure(Frozen):
    """A case that failed the pass mark or could not be scored."""

    id: str
    status: str
    overall_score: int | None = Field(None, alias="overallScore")
    band: str | None = None
    reason: str | None = None


class Summary(Frozen):
    """What a person wants to know about a run at a glance."""

    cases: int
    scored: int
    unscored: int
    cache_misses: int = Field(alias="cacheMisses")
    passed: int
    failed: int
    pass_rate: float | None = Field(alias="passRate")
    """Passed over all cases: an unscored case or a cache miss has not passed (a rate over
    the scored cases alone read 100 % when most cases were never judged)."""
    mean_overall: float | None = Field(alias="meanOverall")
    category_averages: dict[str, float] = Field(alias="categoryAverages")
    bands: dict[str, int]
    complexity: dict[str, int]
    tags: dict[str, int]
    failures: tuple[Failure, ...] = ()
    """The first failures by case id (at most FAILURE_LIST_LIMIT)."""
    failures_total: int = Field(0, alias="failuresTotal")
    cache_hits: int = Field(0, alias="cacheHits")
    prompt_tokens: int = Field(0, alias="promptTokens")
    completion_tokens: int = Field(0, alias="completionTokens")
    cost_usd: float | None = Field(default=None, alias="costUsd")
    """Spend of the judgments in this run's results (cached ones at their original price)."""
    judge_health: JudgeHealth | None = Field(None, alias="judgeHealth")
    """Whether the judge said anything (:mod:`judge.core.stats.judge_health`); None: no AI score."""


class SummaryBuilder:
    """Accumulates results one at a time."""

    def __init__(self, template_text: str = "") -> None:
        self.health = HealthBuilder(template_text)
        self.status: Counter[str] = Counter()
        self.passed = 0
        self.failed = 0
        self.overall_total = 0
        self.cat_total: dict[str, int] = {}
        self.cat_count: Counter[str] = Counter()
        self.bands: Counter[str] = Counter()
        self.complexity: Counter[str] = Counter()
        self.tags: Counter[str] = Counter()
        self.failures: list[Failure] = []
        self.failures_total = 0
        self.cache_hits = 0
        self.usage = ZERO
        """What the verdicts cost when they were made (a cached one: its original call's)."""

    def add(self, result: CaseResult) -> None:
        """Count one result."""
        self.health.add(result)
        self.status[result.status] += 1
        self.complexity[result.complexity or "unspecified"] += 1
        self.tags.update(result.tags)
        if result.status == "scored" and result.overall_score is not None:
            self.overall_total += result.overall_score
            self.bands[result.band or "?"] += 1
            for cat in result.category_scores:
                if cat.final_score is not None:
                    self.cat_total[cat.category] = self.cat_total.get(cat.category, 0) \
                        + cat.final_score
                    self.cat_count[cat.category] += 1
            if result.passed:
                self.passed += 1
            else:
                self.failed += 1
        if result.status != "scored" or not result.passed:
            self._failure(result)
        judge = result.judge
        if judge is not None:
            self.cache_hits += judge.cached
            self.usage += Usage.of(judge)

    def _failure(self, result: CaseResult) -> None:
        self.failures_total += 1
        self.failures.append(Failure(id=result.id, status=result.status,
                                     overall_score=result.overall_score, band=result.band,
                                     reason=result.reason))
        if len(self.failures) > 2 * FAILURE_LIST_LIMIT:
            self.failures = sorted(self.failures, key=lambda f: f.id)[:FAILURE_LIST_LIMIT]

    def build(self) -> Summary:
        """The summary of everything added so far."""
        scored = self.status["scored"]
        return Summary(
            cases=sum(self.status.values()),
            scored=scored,
            unscored=self.status["unscored"],
            cache_misses=self.status["cache_miss"],
            passed=self.passed,
            failed=self.failed,
            pass_rate=_mean(Fraction(self.passed), sum(self.status.values()), 4),
            mean_overall=_mean(self.overall_total, scored, 2),
            category_averages={c: _mean(t, self.cat_count[c], 2) or 0.0
                              for c, t in self.cat_total.items()},
            bands=dict(sorted(self.bands.items())),
            complexity=dict(sorted(self.complexity.items())),
            tags=dict(sorted(self.tags.items())),
            failures=tuple(sorted(self.failures, key=lambda f: f.id)[:FAILURE_LIST_LIMIT]),
            failures_total=self.failures_total,
            cache_hits=self.cache_hits,
            prompt_tokens=self.usage.prompt_tokens,
            completion_tokens=self.usage.completion_tokens,
            cost_usd=self.usage.cost_usd(digits=None),
            judge_health=self.health.build(),
        )
