"""Calibration from people's labels: a monotone map from one judge's AI scores to their scale.

Why isotonic, not ordinal: a team labels tens of cases, not thousands. Isotonic regression
(pool-adjacent-violators) assumes only that a higher AI score never means a lower human
score; it has no parameters to fit by an optimiser, is exact in rationals (so the same
labels give the same file on every machine), and is the least-squares monotone fit, so it
can only shrink the held-out error of a judge whose bias is monotone (scores squeezed into
40-70, shifted, stretched). An ordinal (proportional-odds) model would add a link function
and one threshold per band, estimated by iteration from few labels; it predicts a band, not
the 0..100 score the core blends. A level rubric is the same map over its level scores.

The map is written out as a table of 101 integers per category (the calibrated score of
every AI score 0..100): what the core applies is a lookup, a reviewer reads it in a diff,
and monotonicity is checked on load. Between the fitted points the map is linear, outside
them it is flat (as scikit-learn's ``IsotonicRegression(out_of_bounds="clip")``); each value
is rounded half up, exactly.

The core applies a calibration *before the blend*: the AI score stays stored as the judge
gave it, the final is the blend of the deterministic score with the calibrated AI score, so
``judge rescore`` re-applies or removes a calibration with no model call. A calibration
names the judge model, the rubric and the scale it was fitted on, and is refused for
another with the reason (:func:`check_fits`, :func:`check_judge`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, Literal, TypedDict

from pydantic import Field

from ..formats.rubric import Band, Rubric
from ..stats.agreement import PairStats, pairwise_agreement
from ..text.canonical import canonical_json
from ..text.errors import ConfigError
from ..text.frozen import Frozen
from ..text.seals import NO_SECRET, Sealer, checked_file, sealed_text
from ..text.strict_json import strict_document
from .exact import round_half_up

__all__ = [
    "CALIBRATION_FIX",
    "CALIBRATION_FORMAT",
    "Calibration",
    "CalibrationError",
    "CategoryMap",
    "FoldReport",
    "RubricScale",
    "attach_calibration",
    "calibrated_score",
    "calibration_digest",
    "calibration_text",
    "check_fits",
    "check_judge",
    "cross_validate",
    "fit_category",
    "fold_of",
    "isotonic_points",
    "parse_calibration",
    "rubric_scale",
    "table_from_points",
]

CALIBRATION_FORMAT = 1


class CalibrationError(ConfigError):
    """A calibration file is malformed, or does not fit the rubric or judge it is used with."""


class CategoryMap(Frozen):
    """One category's map: the calibrated score of every AI score 0..100."""

    table: tuple[int, ...] = Field(min_length=101, max_length=101)
    """``table[ai]`` is the calibrated score (non-decreasing, each 0..100)."""
    labels: int = Field(ge=1)
    """How many labelled cases it was fitted on."""


class FoldReport(Frozen):
    """Held-out agreement with people before and after calibration, over k folds."""

    folds: int
    cases: int
    """Held-out predictions made: each labelled case once, by a map fitted without it."""
    before: PairStats
    """The raw AI scores against the labels, on the held-out cases."""
    after: PairStats
    """The calibrated AI scores (each by a map fitted without its case) against the labels."""


class Calibration(Frozen):
    """A versioned calibration file (JSON): which judge, rubric and scale, and the maps."""

    version: Literal[1] = 1
    kind: Literal["judgeflow-calibration"] = "judgeflow-calibration"
    method: Literal["isotonic"] = "isotonic"
    judge: str = Field(min_length=1)
    """The judge model whose AI scores were mapped; the map is refused for another."""
    rubric: str = Field(min_length=1)
    scale: dict[str, Any]
    """The rubric's scale when fitted (:func:`rubric_scale`): style, levels, bands."""
    categories: dict[str, CategoryMap] = Field(min_length=1)
    cross_validation: dict[str, FoldReport] = Field(default_factory=dict, alias="crossValidation")
    """Per category, the held-out agreement of k-fold cross-validation."""
    labels_digest: str = Field("", alias="labelsDigest")
    """sha256 of the labels it was fitted on (their canonical JSON)."""
    runs: tuple[str, ...] = ()
    """The stored runs whose AI scores were used."""


CALIBRATION_FIX = ("fit it again with `judge judges calibrate RUN --labels FILE` (with "
                   "JUDGE_CACHE_SECRET set if the team uses one); never edit it by hand")


def calibration_text(cal: Calibration, sealer: Sealer = NO_SECRET) -> str:
    """The calibration file's text: stable JSON, sealed (:mod:`judge.core.text.seals`)."""
    return sealed_text(cal, sealer)


def parse_calibration(text: str, source: str = "<calibration>",
                      sealer: Sealer = NO_SECRET) -> Calibration:
    """Read a calibration file; every error names ``source``, the place, a fix.

    Strict JSON, typed as the schema says, its seals checked: a calibration decides scores.
    """
    cal = checked_file(strict_document(text, source, CalibrationError, CALIBRATION_FIX), source,
                       Calibration, sealer, error=CalibrationError, what="a calibration",
                       fix=CALIBRATION_FIX)
    for cat, cmap in cal.categories.items():
        bad = [v for v in cmap.table if not 0 <= v <= 100]
        down = [i for i in range(1, 101) if cmap.table[i] < cmap.table[i - 1]]
        if bad or down:
            raise CalibrationError(
                "the map must be non-decreasing within 0..100"
                + (f" (it falls at AI score {down[0]})" if down else ""),
                file=source, where=f"categories.{cat}.table", fix=CALIBRATION_FIX)
    return cal


def calibration_digest(cal: Calibration) -> str:
    """sha256 of the calibration's canonical JSON (recorded in the rubric's hash)."""
    return hashlib.sha256(canonical_json(cal.model_dump(mode="json")).encode()).hexdigest()


class RubricScale(TypedDict):
    """The scale a calibration is valid on, as its file keeps it (compared as canonical JSON)."""

    style: str
    levels: list[list[str | float]]
    """Each level's ``[name, value]``."""
    bands: list[list[str | int]]
    """Each band's ``[name, minimum, maximum]``."""


def rubric_scale(rubric: Rubric) -> RubricScale:
    """The scale a calibration is valid on: the style, level names and values, the bands."""
    return {"style": rubric.style, "levels": [[lv.name, lv.value] for lv in rubric.levels],
            "bands": [[b.name, b.min, b.max] for b in rubric.bands]}


def check_fits(cal: Calibration, rubric: Rubric, source: str) -> None:
    """Refuse a calibration fitted on another rubric or scale, or for unknown categories."""
    if cal.rubric != rubric.id:
        raise CalibrationError(
            f"fitted on rubric {cal.rubric!r}, used with rubric {rubric.id!r}", file=source,
            where="rubric", fix=f"fit a calibration on runs of {rubric.id!r}")
    if canonical_json(rubric_scale(rubric)) != canonical_json(cal.scale):
        raise CalibrationError(
            f"fitted on another scale than rubric {rubric.id!r}'s (its style, levels or "
            "bands differ)", file=source, where="scale",
            fix="fit the calibration again under the rubric as it is now")
    known = [c.id for c in rubric.categories]
    unknown = sorted(set(cal.categories) - set(known))
    if unknown:
        raise CalibrationError(f"category {unknown[0]!r} is not in rubric {rubric.id!r}",
                               file=source, where=f"categories.{unknown[0]}",
                               fix="fit the calibration again under the rubric as it is now")


def attach_calibration(rubric: Rubric, cal: Calibration, source: str) -> Rubric:
    """``rubric`` with ``cal`` applied before the blend, after :func:`check_fits`."""
    check_fits(cal, rubric, source)
    tables = {cat: cmap.table for cat, cmap in cal.categories.items()}
    return rubric.with_calibration(tables, calibration_digest(cal), cal)


def check_judge(cal: Calibration, model: str, where: str) -> None:
    """Refuse to apply a calibration to another judge's AI scores."""
    if model != cal.judge:
        raise CalibrationError(
            f"the calibration maps judge {cal.judge!r}'s scores; {where} was judged by "
            f"{model!r}", where="judge",
            fix=f"fit a calibration on runs of {model!r}, or rescore without it")


def calibrated_score(cal: Calibration, category: str, ai: int) -> int:
    """The calibrated AI score of ``category`` (unchanged where the file has no map)."""
    cmap = cal.categories.get(category)
    return ai if cmap is None else cmap.table[ai]


# -- fitting -------------------------------------------------------------------------------


def isotonic_points(pairs: Sequence[tuple[int, int]]) -> list[tuple[int, Fraction]]:
    """Pool-adjacent-violators over ``(ai, human)`` pairs: the fitted value per distinct AI score.

    Non-decreasing and exact: the least-squares monotone fit.
    """
    if not pairs:
        raise ValueError("no labelled pair to fit")
    grouped: dict[int, list[int]] = {}
    for x, y in pairs:
        grouped.setdefault(x, []).append(y)
    # blocks: [sum of y, count, first x, last x]
    blocks: list[list[Any]] = []
    for x in sorted(grouped):
        ys = grouped[x]
        blocks.append([Fraction(sum(ys)), len(ys), x, x])
        while len(blocks) > 1 and (blocks[-2][0] / blocks[-2][1]) > (blocks[-1][0]
                                                                   / blocks[-1][1]):
            s, n, _, hi = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += n
            blocks[-1][3] = hi
    value = {x: b[0] / b[1] for b in blocks for x in grouped if b[2] <= x <= b[3]}
    return [(x, value[x]) for x in sorted(grouped)]


def table_from_points(points: Sequence[tuple[int, Fraction]]) -> tuple[int, ...]:
    """The 101 calibrated scores: linear between fitted points, flat outside, half up."""
    table: list[int] = []
    for ai in range(101):
        if ai <= points[0][0]:
            v = points[0][1]
        elif ai >= points[-1][0]:
            v = points[-1][1]
        else:
            j = next(i for i, (x, _) in enumerate(points) if x >= ai)
            (x0, y0), (x1, y1) = points[j - 1], points[j]
            v = y0 + (y1 - y0) * Fraction(ai - x0, x1 - x0)
        table.append(min(100, max(0, round_half_up(v))))
    return tuple(table)


def fit_category(pairs: Sequence[tuple[int, int]]) -> CategoryMap:
    """The map of one category from its ``(ai, human)`` pairs."""
    return CategoryMap(table=table_from_points(isotonic_points(pairs)), labels=len(pairs))


def fold_of(case_id: str, folds: int, seed: int = 0) -> int:
    """The fold of a case: a hash of its id and the seed, so folds never depend on order."""
    digest = hashlib.sha256(f"{seed}:{case_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % folds


def _stats(a: Sequence[int], b: Sequence[int], bands: Sequence[Band]) -> PairStats:
    return pairwise_agreement(a, b, rubric_bands=bands, label_a="judge", label_b="people")


def cross_validate(pairs: Mapping[str, tuple[int, int]], folds: int,
                   bands: Sequence[Band], seed: int = 0) -> FoldReport:
    """k-fold held-out agreement of raw and calibrated AI scores with the labels.

    ``pairs``: case id -> (AI score, human score). Each case is predicted once, by a map
    fitted on the other folds only; a fold whose training part is empty predicts nothing.
    The statistics are :func:`judge.core.stats.agreement.pairwise_agreement`'s over the held-out
    predictions (MAD, exact band agreement, weighted κ, ρ).
    """
    if folds < 2:
        raise ValueError("cross-validation needs at least 2 folds")
    fold = {cid: fold_of(cid, folds, seed) for cid in pairs}
    raw: list[int] = []
    mapped: list[int] = []
    human: list[int] = []
    for k in range(folds):
        train = [pairs[c] for c in sorted(pairs) if fold[c] != k]
        test = [pairs[c] for c in sorted(pairs) if fold[c] == k]
        if not train or not test:
            continue
        table = fit_category(train).table
        for ai, person in test:
            raw.append(ai)
            mapped.append(table[ai])
            human.append(person)
    return FoldReport(folds=folds, cases=len(human), before=_stats(raw, human, bands),
                      after=_stats(mapped, human, bands))
