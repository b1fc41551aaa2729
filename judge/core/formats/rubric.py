"""Rubric files: the models, and parsing from text with every check a reader would want.

A rubric says what is judged (categories with weights and definitions), how the advisory
AI score meets the deterministic one (the blend and the rules for a missing input), and how
a number reads (bands, the pass mark). Two styles share one model:

- ``scores``: the judge writes an integer 0..100 per category (the task rubric).
- ``levels``: the judge picks a level *by name* per category; the core maps it to its value
  (the research-agent rubric). The model never writes the number.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, Literal

from pydantic import Field, PrivateAttr, ValidationError, field_validator

from ..scoring.exact import exact
from ..scoring.signal_rules import SignalRule
from ..text.canonical import canonical_json
from ..text.errors import RubricError
from ..text.frozen import Frozen
from ..text.safeyaml import load_yaml
from ..text.validation_text import format_validation_error, primary_error
from .evidence import DEFAULT_PROFILE, EvidenceProfile
from .limits import MAX_RUBRIC_CHARS

__all__ = [
    "DEFAULT_BANDS",
    "DEFAULT_BLEND",
    "Band",
    "Blend",
    "Category",
    "LabelExamples",
    "Level",
    "MissingPolicy",
    "Rubric",
    "format_validation_error",
    "parse_rubric",
    "rubric_hash",
]

WEIGHT_TOLERANCE = Fraction(1, 10**9)


class Band(Frozen):
    """A named, inclusive range of integer scores."""

    name: str = Field(min_length=1)
    """Label shown for scores in the range (``failing``, ``strong``...)."""
    min: int = Field(strict=True, ge=0, le=100)
    """Lowest score in the band, inclusive."""
    max: int = Field(strict=True, ge=0, le=100)
    """Highest score in the band, inclusive."""


class Blend(Frozen):
    """How a category's deterministic and AI scores combine; the weights sum to 1."""

    deterministic: float = Field(strict=True, ge=0, le=1)
    """Weight of the deterministic signal."""
    ai: float = Field(strict=True, ge=0, le=1)
    """Weight of the advisory AI score."""


class MissingPolicy(Frozen):
    """What happens when one input of a blended category is absent; recorded as the rule applied."""

    deterministic: Literal["ai_only", "unscored"] = "unscored"
    """No deterministic score: use the AI score alone, or leave the category unscored."""
    ai: Literal["deterministic_only", "unscored"] = "deterministic_only"
    """No AI score (a deterministic-only case): use the deterministic score, or unscored."""


class Level(Frozen):
    """A named level of a ``levels`` rubric and the value (0..1) it maps to."""

    name: str = Field(min_length=1, pattern=r"^[a-z][a-z0-9_]*$")
    """Identifier the judge answers with."""
    value: float = Field(strict=True, ge=0, le=1)
    """Value the core maps the level to."""


class Category(Frozen):
    """One scored category (a *dimension* in a level rubric)."""

    id: str = Field(min_length=1, pattern=r"^[A-Za-z][A-Za-z0-9_]*$")
    """Stable identifier; the judge's output schema uses it as a key."""
    weight: float = Field(strict=True, gt=0, le=1)
    """Share of the overall score; the rubric's weights sum to 1."""
    definition: str = Field(min_length=1)
    """What the category measures, shown to the judge."""
    blend: Blend | None = None
    """Overrides the rubric's blend for this category."""
    anchors: dict[str, str] = Field(default_factory=dict)
    """For ``levels`` rubrics: what each level means for this category."""


class LabelExamples(Frozen):
    """Show the judge K cases the people labelled (``examples:`` in a rubric; off by default).

    Chosen from the training folds only: a labelled case never sees itself or a case of its
    own fold (``folds`` by a seeded hash of the case id,
    :func:`judge.core.scoring.calibration.fold_of`), so agreement on every labelled case stays held
    out (see judge.core.formats.label_examples).
    """

    count: int = Field(strict=True, ge=1, le=8)
    """How many labelled examples the prompt shows."""
    folds: int = Field(default=5, strict=True, ge=2, le=20)
    """Folds the labelled cases are split into; a case's examples come from the others."""
    seed: int = Field(default=0, strict=True, ge=0)
    """Seed of the fold assignment."""


DEFAULT_BLEND = Blend(deterministic=0.7, ai=0.3)
DEFAULT_BANDS: tuple[Band, ...] = (
    Band(name="failing", min=0, max=39),
    Band(name="weak", min=40, max=59),
    Band(name="acceptable", min=60, max=74),
    Band(name="strong", min=75, max=89),
    Band(name="excellent", min=90, max=100),
)


class Rubric(Frozen):
    """A validated rubric. Build one with :func:`parse_rubric` so every check runs."""

    version: Literal[1] = 1
    """File format version."""
    id: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    """Identifier used on the command line and in stored runs."""
    title: str = ""
    """Human title."""
    description: str = ""
    """What the rubric is for; shown to the judge."""
    style: Literal["scores", "levels"] = "scores"
    """``scores``: the judge writes 0..100; ``levels``: the judge names a level."""
    blend: Blend = DEFAULT_BLEND
    """Default blend of deterministic and AI scores for every category."""
    missing: MissingPolicy = MissingPolicy()
    """Rules for a category whose deterministic or AI input is absent."""
    partial: Literal["unscored", "renormalize"] = "unscored"
    """An unscored category makes the case unscored, or the overall renormalises over the rest."""
    categories: tuple[Category, ...] = Field(min_length=1)
    """The scored categories, in display order."""
    levels: tuple[Level, ...] = ()
    """Level names and values (``levels`` style only), best first."""
    bands: tuple[Band, ...] = DEFAULT_BANDS
    """Bands covering 0..100 with no gap or overlap."""
    pass_score: int = Field(default=60, strict=True, ge=0, le=100)
    """A case passes when its overall score is at least this."""
    evidence: EvidenceProfile = DEFAULT_PROFILE
    """Evidence groups in prompt order, their caps and excerpt limits."""
    signals: dict[str, tuple[SignalRule, ...]] = Field(default_factory=dict)
    """How ``judge suite collect`` computes each category's deterministic signal from collected
    facts: rules tried in order, the first applicable one wins (see
    judge.core.scoring.signal_rules)."""
    calibration: str | None = None
    """A calibration file (``judge judges calibrate``), relative to the rubric file: the judge's AI
    scores are mapped to people's scale before the blend (see judge.core.scoring.calibration)."""
    examples: LabelExamples | None = None
    """Labelled examples in the prompt (a template that shows them: ``judge-examples``)."""
    _calibrated: tuple[dict[str, tuple[int, ...]], str, Any] | None = PrivateAttr(default=None)
    """The loaded calibration: its tables per category, its digest, the file's model."""
    _derived: dict[str, Any] = PrivateAttr(default_factory=dict)
    """What other modules compute once per rubric (the scoring plan, the schema base): kept
    with the rubric it came from, so it can never be another rubric's."""

    def model_copy(self, *, update: Mapping[str, Any] | None = None,
                   deep: bool = False) -> Rubric:
        """A copy (``update`` is not re-validated, as in pydantic) that derives anew."""
        copy = super().model_copy(update=update, deep=deep)
        copy._derived = {}
        copy._calibrated = self._calibrated
        return copy

    def with_calibration(self, tables: dict[str, tuple[int, ...]], digest: str,
                         source: Any) -> Rubric:
        """A copy applying ``tables`` before the blend (see judge.core.scoring.calibration)."""
        copy = self.model_copy()
        copy._calibrated = (tables, digest, source)
        return copy

    @property
    def calibrated(self) -> tuple[dict[str, tuple[int, ...]], str, Any] | None:
        """The attached calibration (tables, digest, file model), or None."""
        return self._calibrated

    def derived(self, key: str, build: Any) -> Any:
        """``build(self)`` computed once per rubric object and kept with it."""
        if key not in self._derived:
            self._derived[key] = build(self)
        return self._derived[key]

    @field_validator("categories")
    @classmethod
    def _unique_ids(cls, value: tuple[Category, ...]) -> tuple[Category, ...]:
        seen: set[str] = set()
        for cat in value:
            if cat.id in seen:
                raise ValueError(f"category id {cat.id!r} appears twice; ids must be unique")
            seen.add(cat.id)
        return value

    def category(self, category_id: str) -> Category:
        """The category with this id (KeyError if none)."""
        for cat in self.categories:
            if cat.id == category_id:
                return cat
        raise KeyError(category_id)

    def blend_for(self, category_id: str) -> Blend:
        """The blend that applies to a category."""
        return self.category(category_id).blend or self.blend

    def level_value(self, name: str) -> Fraction:
        """Exact value of a level, by name."""
        for level in self.levels:
            if level.name == name:
                return exact(level.value)
        raise KeyError(name)


def rubric_hash(rubric: Rubric) -> str:
    """sha256 of the rubric's canonical JSON: what a run records to say which rubric it used.

    ``signals`` is left out: its rules act when a case is collected, and the case records
    the values and the rule of each; a run judges and scores those recorded values, so the
    rules cannot change a run, and editing them must not void baselines or replay records.
    """
    data = rubric.model_dump(mode="json", exclude={"signals"})
    # A rubric without a calibration hashes as before the field existed (stored runs and
    # baselines keep their rubric hash); with one, the map's digest is part of the rubric.
    if rubric.calibrated is not None:
        data["calibration"] = {"file": data["calibration"], "sha256": rubric.calibrated[1]}
    elif data["calibration"] is None:
        del data["calibration"]
    if data["examples"] is None:  # as for calibration: an opt-in key hashes only when set
        del data["examples"]
    return hashlib.sha256(canonical_json(data).encode()).hexdigest()


def _check_semantics(rubric: Rubric, source: str) -> None:
    total = sum((exact(c.weight) for c in rubric.categories), Fraction(0))
    if abs(total - 1) > WEIGHT_TOLERANCE:
        weights = ", ".join(f"{c.id}={c.weight:g}" for c in rubric.categories)
        raise RubricError(
            f"category weights sum to {float(total):g}, not 1 ({weights})",
            file=source, where="categories[].weight",
            fix="adjust the weights so they add up to exactly 1",
        )
    blends = [("blend", rubric.blend)] + [
        (f"categories[{i}].blend", c.blend) for i, c in enumerate(rubric.categories) if c.blend
    ]
    for where, blend in blends:
        if blend is not None and exact(blend.deterministic) + exact(blend.ai) != 1:
            raise RubricError(
                f"blend weights sum to {blend.deterministic + blend.ai:g}, not 1",
                file=source, where=where, fix="make deterministic + ai equal 1 (e.g. 0.7 and 0.3)",
            )
    _check_bands(rubric.bands, source)
    _check_signals(rubric, source)
    if rubric.style == "levels":
        _check_levels(rubric, source)
    elif rubric.levels:
        raise RubricError("levels are only used by a 'levels' rubric", file=source,
                          where="levels", fix="set style: levels, or remove the levels")


def _check_bands(bands: tuple[Band, ...], source: str) -> None:
    ordered = sorted(bands, key=lambda b: b.min)
    names = [b.name for b in bands]
    if len(set(names)) != len(names):
        raise RubricError("band names must be unique", file=source, where="bands",
                          fix="give every band its own name")
    expected = 0
    for band in ordered:
        if band.max < band.min:
            raise RubricError(f"band {band.name!r} has max {band.max} below min {band.min}",
                              file=source, where=f"bands.{band.name}", fix="swap min and max")
        if band.min > expected:
            raise RubricError(
                f"bands leave a gap: no band covers {expected}..{band.min - 1}",
                file=source, where=f"bands.{band.name}.min",
                fix=f"start band {band.name!r} at {expected}, or add a band for the gap",
            )
        if band.min < expected:
            raise RubricError(
                f"bands overlap: {band.name!r} starts at {band.min}, "
                f"but {band.min}..{expected - 1} is already covered",
                file=source, where=f"bands.{band.name}.min",
                fix=f"start band {band.name!r} at {expected}",
            )
        expected = band.max + 1
    if expected != 101:
        raise RubricError(f"bands stop at {expected - 1}; they must cover 0..100",
                          file=source, where="bands", fix="let the highest band end at 100")


def _check_signals(rubric: Rubric, source: str) -> None:
    known = [c.id for c in rubric.categories]
    seen: set[str] = set()
    for category, rules in rubric.signals.items():
        if category not in known:
            raise RubricError(f"signal rules for unknown category {category!r}", file=source,
                              where=f"signals.{category}", fix=f"use one of: {', '.join(known)}")
        for i, rule in enumerate(rules):
            if rule.id in seen:
                raise RubricError(f"signal rule id {rule.id!r} appears twice", file=source,
                                  where=f"signals.{category}[{i}].id",
                                  fix="give every rule its own id: cases record it")
            seen.add(rule.id)


def _check_levels(rubric: Rubric, source: str) -> None:
    if not rubric.levels:
        raise RubricError("a 'levels' rubric needs its levels", file=source, where="levels",
                          fix="list levels as - {name: excellent, value: 1.0} ... best first")
    names = [lv.name for lv in rubric.levels]
    if len(set(names)) != len(names):
        raise RubricError("level names must be unique", file=source, where="levels",
                          fix="give every level its own name")
    for i, cat in enumerate(rubric.categories):
        unknown = sorted(set(cat.anchors) - set(names))
        if unknown:
            raise RubricError(
                f"anchor for unknown level {unknown[0]!r}", file=source,
                where=f"categories[{i}].anchors",
                fix=f"use one of the rubric's levels: {', '.join(names)}",
            )


def parse_rubric(text: str, source: str = "<rubric>") -> Rubric:
    """Parse and validate a rubric from YAML; every error names ``source``, the place, a fix."""
    data: Any = load_yaml(text, source, RubricError, max_chars=MAX_RUBRIC_CHARS)
    if not isinstance(data, dict):
        raise RubricError("a rubric is a mapping with at least 'id' and 'categories'",
                          file=source, fix="see rubrics/task-evaluation.yaml for the shape")
    try:
        rubric = Rubric.model_validate(data)
    except ValidationError as exc:
        where, msg = format_validation_error(exc)
        raise RubricError(msg, file=source, where=where,
                          fix=_fix_hint(exc)) from None
    _check_semantics(rubric, source)
    return rubric


def _fix_hint(exc: ValidationError) -> str:
    err = primary_error(exc)
    if err["type"] == "extra_forbidden":
        missing = [str(e["loc"][-1]) for e in exc.errors()
                   if e["type"] == "missing" and e["loc"][:-1] == err["loc"][:-1]]
        close = difflib.get_close_matches(str(err["loc"][-1]), missing, n=1)
        if close:
            return f"rename it to {close[0]!r}"
        allowed = {
            0: "id, title, description, style, blend, missing, partial, categories, levels, "
               "bands, pass_score, evidence, signals, calibration, version",
        }
        if len(err["loc"]) == 1:
            return f"remove it or correct the spelling; allowed keys: {allowed[0]}"
        return "remove it or correct the spelling"
    if err["type"] == "missing":
        return f"add the required key {err['loc'][-1]!r}"
    return "correct the value as the message says"
