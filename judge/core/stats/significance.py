"""The gate's statistics: a paired test over cases and a false-discovery-rate case list.

Why. A judge's scores move between asks; the exact per-case rule ("a drop of more than 5
points is a regression") lists a third of a suite as regressed when a noisy judge is simply
asked again. This module decides from the paired drops ``d_i = before_i - after_i`` over the
cases both runs scored (docs/statistics.md argues each choice):

- **Suite verdict.** Regression when the mean drop exceeds the threshold *and* a one-sided
  paired t test says the drop is not the judge's noise (its one-sided 95 % lower bound is
  above 0; p < 0.05). With no noise (a pure replay) this is exactly today's mean rule; with
  no real change it blocks in at most 5 % of runs whatever the suite's size.
- **Case list.** A case is listed as regressed when its drop exceeds the threshold and the
  hypothesis "its true drop is within the threshold" is rejected by Benjamini-Hochberg at a
  5 % false-discovery rate over all compared cases; each case's p-value is a t test of
  ``(d_i - threshold) / sqrt(var_i)`` with the noise model's degrees of freedom, where
  ``var_i`` is the judge's variance on each side that re-asked (0 for the same cached
  judgment: such a case's drop is exact and listed by the exact rule).
- **No noise model** on either side while cases were re-asked (``test.rule == "paired"``):
  the suite verdict is the same paired test (it needs no model: the paired differences'
  own spread holds the judge's noise of both asks), and no case is listed alone, since
  one case's drop cannot be told from the judge's noise without a model; each case that
  dropped by more than the threshold is named as not judged alone. Newly unscored cases
  still block. docs/statistics.md argues it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Final, Literal

from pydantic import Field

from ..formats.models import CaseResult
from ..outcomes.baseline import Baseline, BaselineComparison, compare
from ..text.frozen import Frozen
from .intervals import Interval, MeanTest, benjamini_hochberg, mean_test, t_ppf, t_sf
from .noise import (
    FDR,
    GateTest,
    Rule,
    SideNoise,
    case_variance,
    judgment_key,
    same_judgment,
)

__all__ = [
    "ALPHA",
    "Movement",
    "MovementNoise",
    "classify_movements",
    "statistical_compare",
]

ALPHA: Final = 0.05
"""One-sided level of the suite test."""

MovementNoise = Literal["exact", "beyond", "within", "unknown"]


def _drops(baseline: Baseline, now: Mapping[str, CaseResult]) -> dict[str, tuple[int, CaseResult]]:
    drops: dict[str, tuple[int, CaseResult]] = {}
    for case_id, was in sorted(baseline.cases.items()):
        result = now.get(case_id)
        if (result is None or was.status != "scored" or was.overall_score is None
                or result.status != "scored" or result.overall_score is None):
            continue
        drops[case_id] = (was.overall_score - result.overall_score, result)
    return drops


def _exact(comparison: BaselineComparison,
           drops: Mapping[str, tuple[int, CaseResult]]) -> BaselineComparison:
    """A pure replay: the exact rule's verdict, with the test saying so."""
    mean = float(Fraction(sum(d for d, _ in drops.values()), len(drops))) if drops else 0.0
    test = GateTest(rule="exact-replay", mean_drop=mean, interval=None, lower_bound=None,
                    p_value=None,
                    test="exact rule: mean drop and each case's drop against the threshold",
                    exact_cases=len(drops), noisy_cases=0)
    return comparison.model_copy(update={"test": test})


def statistical_compare(baseline: Baseline, current: Sequence[CaseResult], *,
                        threshold: float | None = None, before: SideNoise | None = None,
                        after: SideNoise | None = None) -> BaselineComparison:
    """Compare ``current`` with ``baseline`` by the module's rules (one result per case)."""
    exact = compare(baseline, current, threshold=threshold)
    limit = float(Fraction(str(exact.threshold)) * 100)
    now = {r.id: r for r in current}
    drops = _drops(baseline, now)
    keys = baseline.judgments or {}
    same = {cid for cid, (_, r) in drops.items() if same_judgment(r, keys.get(cid))}
    if len(same) == len(drops):
        return _exact(exact, drops)
    if before is None and after is None:
        return _paired(exact, drops, len(same), limit)
    before = before or after
    after = after or before
    assert before is not None and after is not None
    sds = {"before": before.sd, "after": after.sd}
    df = min(before.df, after.df)
    values = [float(d) for d, _ in drops.values()]
    tested = mean_test(values, null=0.0)
    assert tested is not None
    p_values: dict[str, float] = {}
    for cid, (drop, result) in drops.items():
        variance = case_variance(result, keys.get(cid), sds)
        assert variance is not None
        if variance == 0:
            p_values[cid] = 0.0 if drop > limit else 1.0
        else:
            p_values[cid] = t_sf((drop - limit) / math.sqrt(variance), df)
    rejected = benjamini_hochberg(p_values, FDR)
    listed = tuple(cid for cid, (drop, _) in drops.items() if drop > limit and cid in rejected)
    within = tuple(cid for cid, (drop, _) in drops.items()
                   if drop > limit and cid not in rejected)
    suite_regressed = tested.mean > limit and tested.p_value < ALPHA
    reasons = _reasons(exact, drops, listed, tested.mean, tested.interval, limit,
                       suite_regressed)
    sources = before.source if before == after else f"{before.source} / {after.source}"
    test = _suite_test(
        "statistical", tested, len(drops), len(same), within,
        f"paired one-sided t test over {len(drops)} cases: regression when the mean drop "
        f"exceeds {limit:g} points and p < {ALPHA:g}; cases by Benjamini-Hochberg at FDR "
        f"{FDR:g} against the judge's noise ({sources})", before=before, after=after)
    noise_reasons = tuple(_within_sentence(cid, drops[cid][0], baseline, before, after)
                          for cid in within)
    return exact.model_copy(update={
        "has_regression": bool(reasons), "blocked_reasons": reasons, "regressed_cases": listed,
        "noise": tuple(sorted(set(exact.noise) | set(within))),
        "noise_reasons": noise_reasons, "test": test})


def _suite_test(rule: Rule, tested: MeanTest, compared: int, exact_cases: int,
                within: tuple[str, ...], words: str, *, before: SideNoise | None = None,
                after: SideNoise | None = None) -> GateTest:
    """How the suite's paired test decided, with the noise it assumed per side (if any)."""
    return GateTest(rule=rule, mean_drop=tested.mean, interval=tested.interval,
                    lower_bound=tested.lower_bound, p_value=tested.p_value, test=words,
                    noise_before=before, noise_after=after, exact_cases=exact_cases,
                    noisy_cases=compared - exact_cases, within_noise=within)


def _paired(exact: BaselineComparison, drops: Mapping[str, tuple[int, CaseResult]],
            exact_cases: int, limit: float) -> BaselineComparison:
    """The suite's paired test with no noise model; no case is listed alone."""
    tested = mean_test([float(d) for d, _ in drops.values()], null=0.0)
    assert tested is not None
    regressed = tested.mean > limit and tested.p_value < ALPHA
    unlisted = tuple(cid for cid, (drop, _) in drops.items() if drop > limit)
    reasons = _reasons(exact, drops, (), tested.mean, tested.interval, limit, regressed)
    test = _suite_test(
        "paired", tested, len(drops), exact_cases, unlisted,
        f"paired one-sided t test over {len(drops)} cases, their own differences the noise "
        f"(no noise model): regression when the mean drop exceeds {limit:g} points and p < "
        f"{ALPHA:g}; no case is listed alone")
    return exact.model_copy(update={
        "has_regression": bool(reasons), "blocked_reasons": reasons, "regressed_cases": (),
        "noise": tuple(sorted(set(exact.noise) | set(unlisted))), "test": test,
        "noise_reasons": tuple(f"{cid}: -{drops[cid][0]} points, not judged alone (no noise "
                               f"model: the suite's mean decides)" for cid in unlisted)})


def _within_sentence(cid: str, drop: int, baseline: Baseline, before: SideNoise,
                     after: SideNoise) -> str:
    spread = baseline.cases[cid].spread
    recorded = (f"; within the judge's measured noise of ±{spread} points"
                if spread is not None else "")
    return (f"{cid}: -{drop} points is within the judge's noise (sd {before.sd:.1f}/"
            f"{after.sd:.1f} a side, FDR {FDR:g}{recorded})")


def _reasons(exact: BaselineComparison, drops: Mapping[str, tuple[int, CaseResult]],
             listed: Sequence[str], mean: float, interval: Interval, limit: float,
             suite_regressed: bool) -> tuple[str, ...]:
    sentences: list[tuple[str, str]] = []
    for cid in listed:
        drop, result = drops[cid]
        sentences.append((cid, f"{cid}: {drop + (result.overall_score or 0)} → "
                               f"{result.overall_score} (-{drop} points, beyond the judge's "
                               f"noise and the threshold {limit:g})"))
    unscored = set(exact.newly_unscored)
    sentences.extend((r.split(":", 1)[0], r) for r in exact.blocked_reasons
                     if r.split(":", 1)[0] in unscored)
    out = [s for _, s in sorted(sentences)]
    if suite_regressed:
        out.insert(0, f"mean score fell by {mean:.2f} points (95 % interval "
                      f"{interval.low:.2f} to {interval.high:.2f}; threshold {limit:g}): "
                      f"beyond the judge's noise")
    return tuple(out)


class Movement(Frozen):
    """Whether one case's movement between two runs is beyond the judge's noise."""

    delta: int
    """B − A of the overall score."""
    noise: MovementNoise
    """``exact``: the same judgment on both sides (or no judge), the movement is all real;
    ``beyond``: rejected as noise by Benjamini-Hochberg at :data:`FDR` over the moved cases;
    ``within``: the judge's noise explains it; ``unknown``: no noise estimate."""
    explained: float | None = None
    """Half-width (points) of the 95 % interval of a movement the noise alone produces."""
    p_value: float | None = Field(None, alias="pValue")
    """Two-sided p-value of "the movement is noise" (t, the noise model's df)."""


def classify_movements(pairs: Mapping[str, tuple[CaseResult, CaseResult]],
                       a: SideNoise | None, b: SideNoise | None, *,
                       fdr: float = FDR, rescored: bool = False) -> dict[str, Movement]:
    """Each scored pair's movement, marked beyond or within the judge's noise.

    A side without a noise estimate borrows the other side's; with neither, every re-asked
    movement is ``unknown``. Unmoved cases are in the BH family too (they are compared).
    ``rescored``: one side is a ``judge rescore`` of the other (the same judgments re-scored
    by exact arithmetic): every movement is exact.
    """
    a = a or b
    b = b or a
    out: dict[str, Movement] = {}
    p_values: dict[str, float] = {}
    quantiles: dict[float, float] = {}  # t's 97.5 % point per df: a root search, asked once
    for cid, (ra, rb) in sorted(pairs.items()):
        if ra.overall_score is None or rb.overall_score is None:
            continue
        delta = rb.overall_score - ra.overall_score
        key_a = judgment_key(ra)
        if rescored or (same_judgment(rb, key_a) and (ra.judge is None) == (rb.judge is None)):
            out[cid] = Movement(delta=delta, noise="exact", explained=0.0)
            continue
        if a is None or b is None:
            out[cid] = Movement(delta=delta, noise="unknown")
            continue
        sd = math.sqrt(a.sd * a.sd + b.sd * b.sd)
        df = min(a.df, b.df)
        p = 1.0 if delta == 0 else (2 * t_sf(abs(delta) / sd, df) if sd > 0 else 0.0)
        p_values[cid] = p
        if df not in quantiles:
            quantiles[df] = t_ppf(0.975, df)
        out[cid] = Movement(delta=delta, noise="within", p_value=p, explained=quantiles[df] * sd)
    for cid in benjamini_hochberg(p_values, fdr):
        if out[cid].delta != 0:
            out[cid] = out[cid].model_copy(update={"noise": "beyond"})
    return out
