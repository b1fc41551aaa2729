"""The deterministic core: exact blends, weights, rounding and bands.

All arithmetic is on :class:`fractions.Fraction`, and weights written as decimals (0.45)
are read as the exact decimal (9/20), so a half is a half and rounds *up*, as the
reference implementation's ``Math.round`` does (76.5 -> 77). Python's ``round`` rounds
half to even and must never be used for scores.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from ..formats.models import AdvisoryScore, CaseScore, CategoryScore, Rule
from ..formats.rubric import DEFAULT_BANDS, DEFAULT_BLEND, Band, Blend, Category, Rubric
from .exact import exact, round_half_up

__all__ = [
    "band_for",
    "clamp",
    "compute_final_score",
    "compute_overall_score",
    "level_score",
    "overall_fraction",
    "score_case",
    "score_category",
]


def clamp(value: Fraction, low: int = 0, high: int = 100) -> Fraction:
    """``value`` limited to ``low..high``."""
    return Fraction(low) if value < low else Fraction(high) if value > high else Fraction(value)


def _check_score(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer 0..100, got {value!r}")
    if not 0 <= value <= 100:
        raise ValueError(f"{name} must be in 0..100, got {value}")
    return value


def _half_up(num: int, den: int) -> int:
    """``num / den`` (den > 0) clamped to 0..100 and rounded half up, in integers only."""
    if num <= 0:
        return 0
    if num >= 100 * den:
        return 100
    return (2 * num + den) // (2 * den)


def _coefficients(blend: Blend) -> tuple[int, int, int]:
    """``d`` and ``a`` over their common denominator: (for deterministic, for AI, denominator)."""
    d, a = exact(blend.deterministic), exact(blend.ai)
    return d.numerator * a.denominator, a.numerator * d.denominator, d.denominator * a.denominator


def _blended(deterministic: int, ai: int, coefficients: tuple[int, int, int]) -> int:
    for_det, for_ai, denominator = coefficients
    return _half_up(_check_score("deterministic score", deterministic) * for_det
                    + _check_score("AI score", ai) * for_ai, denominator)


def compute_final_score(deterministic: int, ai: int, blend: Blend = DEFAULT_BLEND) -> int:
    """``round(clamp(deterministic * d + ai * a, 0, 100))``, half up and exact."""
    # Exact in integers (the same value as the Fractions, without building any): a run
    # scores thousands of categories.
    return _blended(deterministic, ai, _coefficients(blend))


def _present_weights(finals: Mapping[str, int], rubric: Rubric) -> dict[str, Fraction]:
    """The exact weights of the categories in ``finals``, after checking them."""
    weights = {c.id: exact(c.weight) for c in rubric.categories}
    unknown = sorted(set(finals) - set(weights))
    if unknown:
        raise ValueError(f"unknown category {unknown[0]!r} for rubric {rubric.id!r}")
    if rubric.partial != "renormalize":
        missing = [c for c in weights if c not in finals]
        if missing:
            raise ValueError(f"category {missing[0]!r} has no final score")
    present = {c: weights[c] for c in finals}
    if not any(present.values()):
        raise ValueError("no category has a final score")
    for c, score in finals.items():
        _check_score(f"final score of {c}", score)
    return present


def overall_fraction(finals: Mapping[str, int], rubric: Rubric) -> Fraction:
    """The exact weighted overall before rounding; renormalised over present weights if allowed."""
    weights = _present_weights(finals, rubric)
    return sum((finals[c] * w for c, w in weights.items()), Fraction(0)) / sum(weights.values())


def compute_overall_score(finals: Mapping[str, int], rubric: Rubric) -> int:
    """``round(sum(finalScore * weight))`` over the rubric's categories, half up and exact."""
    _present_weights(finals, rubric)
    return _overall(finals, _plan(rubric))


def _overall(finals: Mapping[str, int], plan: _Plan) -> int:
    # The overall_fraction value in integers: every weight over one common denominator (the
    # same for any subset of categories, so renormalising is summing over those present).
    return _half_up(sum(finals[c] * plan.scaled[c] for c in finals),
                    sum(plan.scaled[c] for c in finals))


def band_for(score: int, bands: Sequence[Band] = DEFAULT_BANDS) -> str:
    """The name of the band holding ``score``."""
    _check_score("score", score)
    for band in bands:
        if band.min <= score <= band.max:
            return band.name
    raise ValueError(f"no band covers {score}")


def level_score(rubric: Rubric, level: str) -> int:
    """The 0..100 score of a named level (its value x 100, half up)."""
    return round_half_up(rubric.level_value(level) * 100)


def score_category(rubric: Rubric, category_id: str, deterministic: int | None,
                   advisory: AdvisoryScore | None) -> CategoryScore:
    """One category's authoritative score, recording which rule produced it."""
    plan = _plan(rubric)
    index = next((i for i, c in enumerate(rubric.categories) if c.id == category_id), None)
    if index is None:
        raise KeyError(category_id)
    return _score_category(rubric, plan, index, deterministic, advisory)


@dataclass(frozen=True)
class _Plan:
    """What scoring a case needs of a rubric, worked out once per rubric object."""

    known: frozenset[str]
    blends: tuple[tuple[Category, tuple[int, int, int], bool, bool], ...]
    """Per category: its blend's :func:`_coefficients`, and whether its deterministic/AI
    part is 0."""
    band_of: tuple[str | None, ...]
    """The band of each score 0..100 (None where no band covers it)."""
    scaled: dict[str, int]
    """The weights over their common denominator (see :func:`_overall`)."""
    calibration: dict[str, tuple[int, ...]]
    """Per calibrated category, the calibrated score of each AI score (core.scoring.calibration)."""


def _plan(rubric: Rubric) -> _Plan:
    # Planned once per rubric object and kept on it (Rubric.derived).
    plan: _Plan = rubric.derived("scoring.plan", _build_plan)
    return plan


def _build_plan(rubric: Rubric) -> _Plan:
    blends = []
    for cat in rubric.categories:
        blend = cat.blend or rubric.blend
        blends.append((cat, _coefficients(blend), exact(blend.deterministic) == 0,
                       exact(blend.ai) == 0))
    band_of = tuple(next((b.name for b in rubric.bands if b.min <= v <= b.max), None)
                    for v in range(101))
    weights = {c.id: exact(c.weight) for c in rubric.categories}
    common = math.lcm(*(w.denominator for w in weights.values()))
    return _Plan(known=frozenset(weights), blends=tuple(blends), band_of=band_of,
                 scaled={c: w.numerator * (common // w.denominator) for c, w in weights.items()},
                 calibration=dict(rubric.calibrated[0]) if rubric.calibrated else {})


def _score_category(rubric: Rubric, plan: _Plan, index: int, deterministic: int | None,
                    advisory: AdvisoryScore | None) -> CategoryScore:
    cat, coefficients, no_det, no_ai = plan.blends[index]
    raw = advisory.score if advisory is not None else None
    table = plan.calibration.get(cat.id)
    # The calibration maps the AI score before the blend; the judge's own score is stored.
    ai = table[raw] if table is not None and raw is not None else raw
    rule: Rule
    final: int | None
    if no_det:
        rule, final = ("ai_only", ai) if ai is not None else ("unscored", None)
    elif no_ai:
        rule, final = (("deterministic_only", deterministic) if deterministic is not None
                       else ("unscored", None))
    elif deterministic is not None and ai is not None:
        # compute_final_score, with the blend's integers worked out once per rubric.
        rule, final = "blend", _blended(deterministic, ai, coefficients)
    elif deterministic is None and ai is not None and rubric.missing.deterministic == "ai_only":
        rule, final = "ai_only", ai
    elif ai is None and deterministic is not None and rubric.missing.ai == "deterministic_only":
        rule, final = "deterministic_only", deterministic
    else:
        rule, final = "unscored", None
    band = None
    if final is not None:
        final = _check_score("score", final)
        band = plan.band_of[final] or band_for(final, rubric.bands)  # (raises if uncovered)
    return CategoryScore(
        category=cat.id,
        deterministic_score=deterministic,
        ai_score=raw,
        final_score=final,
        weight=cat.weight,
        band=band,
        rationale=advisory.rationale if advisory else "",
        evidence=advisory.evidence if advisory else (),
        rule=rule,
        level=advisory.level if advisory else None,
    )


def score_case(rubric: Rubric, deterministic: Mapping[str, int | None],
               advisory: Mapping[str, AdvisoryScore] | None, *,
               reason: str | None = None) -> CaseScore:
    """Score every category of a case and combine them; unscored with a reason when it must be.

    ``reason`` explains a missing ``advisory`` (the judge failed) and is kept on the result.
    """
    plan = _plan(rubric)
    if not plan.known.issuperset(deterministic):
        unknown = sorted(set(deterministic) - plan.known)
        raise ValueError(f"deterministic score for unknown category {unknown[0]!r}")
    advisory = advisory or {}
    if not plan.known.issuperset(advisory):
        unknown = sorted(set(advisory) - plan.known)
        raise ValueError(f"AI score for unknown category {unknown[0]!r}")
    cats = tuple(_score_category(rubric, plan, i, deterministic.get(c.id), advisory.get(c.id))
                 for i, c in enumerate(rubric.categories))
    finals = {c.category: c.final_score for c in cats if c.final_score is not None}
    missing = [c.category for c in cats if c.final_score is None]
    if not finals or (missing and rubric.partial == "unscored"):
        why = f"no final score for {', '.join(missing)}"
        return CaseScore(status="unscored", category_scores=cats,
                         reason=f"{reason}; {why}" if reason else why)
    overall = _overall(finals, plan)  # over the categories present (renormalised)
    band = plan.band_of[overall] or band_for(overall, rubric.bands)
    return CaseScore(status="scored", overall_score=overall, band=band,
                     passed=overall >= rubric.pass_score, category_scores=cats, reason=reason)
