"""The input of ``judge rubric score``: per-category deterministic and AI scores; no model call."""

from __future__ import annotations

import json

from pydantic import Field, ValidationError

from ..scoring.scoring import level_score, score_case
from ..text.errors import ConfigError
from ..text.frozen import Frozen
from ..text.strict_json import JsonProblem, loads_strict
from .models import AdvisoryScore, CaseScore, Score
from .rubric import Rubric, format_validation_error

__all__ = ["CategoryInput", "ScoreInput", "parse_score_input", "score_input"]


class CategoryInput(Frozen):
    """One category's inputs."""

    deterministic: Score | None = None
    """Deterministic signal 0..100, or absent."""
    ai: Score | None = None
    """Advisory AI score 0..100, or absent."""
    level: str | None = None
    """For a levels rubric: the level name in place of ``ai``."""
    rationale: str = ""
    evidence: tuple[str, ...] = ()


class ScoreInput(Frozen):
    """A whole score file."""

    rubric: str | None = None
    """Rubric id or path; ``--rubric`` overrides it."""
    categories: dict[str, CategoryInput] = Field(min_length=1)


def parse_score_input(text: str, source: str) -> ScoreInput:
    """Parse a score file from JSON text; errors name the file and the field."""
    try:
        data = loads_strict(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON: {exc.msg}", file=source,
                          where=f"line {exc.lineno}, column {exc.colno}",
                          fix="check the JSON syntax near that place") from None
    except JsonProblem as exc:
        raise ConfigError(exc.problem, file=source, fix=exc.fix) from None
    except RecursionError:
        raise ConfigError("nested too deeply to read", file=source,
                          fix="a score file nests two levels: categories, then scores") \
            from None
    try:
        return ScoreInput.model_validate(data)
    except ValidationError as exc:
        where, msg = format_validation_error(exc)
        raise ConfigError(msg, file=source, where=where,
                          fix="scores are whole numbers 0..100; keys: deterministic, ai, "
                              "level, rationale, evidence") from None


def score_input(data: ScoreInput, rubric: Rubric, source: str) -> CaseScore:
    """Score a parsed file under ``rubric``; an unknown category or level is a clear error."""
    known = [c.id for c in rubric.categories]
    deterministic: dict[str, int | None] = {}
    advisory: dict[str, AdvisoryScore] = {}
    for name, cat in data.categories.items():
        if name not in known:
            raise ConfigError(f"unknown category {name!r} for rubric {rubric.id!r}", file=source,
                              where=f"categories.{name}", fix=f"use one of: {', '.join(known)}")
        deterministic[name] = cat.deterministic
        ai = cat.ai
        if cat.level is not None:
            try:
                ai = level_score(rubric, cat.level)
            except KeyError:
                names = ", ".join(lv.name for lv in rubric.levels) or "(this rubric has none)"
                raise ConfigError(f"unknown level {cat.level!r}", file=source,
                                  where=f"categories.{name}.level",
                                  fix=f"use one of: {names}") from None
        if ai is not None:
            advisory[name] = AdvisoryScore(score=ai, level=cat.level, rationale=cat.rationale,
                                           evidence=cat.evidence)
    return score_case(rubric, deterministic, advisory)
