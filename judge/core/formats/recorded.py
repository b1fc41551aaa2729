"""Judgments recorded elsewhere (another tool, a paper's release), for ``judge judges import``.

One JSON object a line, the case's id, the judge's name and its scores per category, or its
raw samples (a list of such score objects, one per sample)::

    {"case": "doc7-sysA", "judge": "gpt-4", "scores": {"coherence": 4}}
    {"case": "doc7-sysB", "judge": "gpt-4", "samples": [{"coherence": 3}, {"coherence": 4}]}

A score is a number on the file's scale (``scale``: 0..100 unless the import says e.g. 1..5),
mapped linearly onto the rubric's 0..100 and rounded half up, exactly; a levels rubric takes
the level's name. Only the advisory AI score comes in: the core scores the case as it scores a
live judge's verdict. Strict: the JSON grammar of :mod:`judge.core.text.strict_json`, no field
unknown, every category of the rubric (and no other) in every sample, a case once per judge;
a bad line is a :class:`~judge.core.text.errors.UsageError` naming the line and the field.
Pure: lines of text in, values out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

from ..scoring.exact import round_half_up
from ..scoring.scoring import level_score
from ..text.errors import UsageError
from ..text.strict_json import JsonProblem, loads_strict
from .rubric import Rubric

__all__ = ["MAX_SAMPLES", "Recorded", "Scale", "parse_recorded", "parse_scale"]

MAX_SAMPLES: Final = 1000
"""Samples one line may carry (G-Eval records 20 a summary)."""
FIELDS: Final = frozenset({"case", "judge", "scores", "samples", "rationale"})


@dataclass(frozen=True)
class Scale:
    """The file's score range, mapped linearly onto 0..100."""

    low: Fraction
    high: Fraction

    def to_points(self, value: Fraction) -> int | None:
        """``value`` on 0..100, rounded half up; None when it is off the scale."""
        if not self.low <= value <= self.high:
            return None
        return round_half_up((value - self.low) * 100 / (self.high - self.low))

    def __str__(self) -> str:
        return f"{self.low}:{self.high}"


def parse_scale(text: str) -> Scale:
    """``LOW:HIGH`` (e.g. ``1:5``) as a :class:`Scale`; UsageError otherwise."""
    low, sep, high = text.partition(":")
    try:
        scale = Scale(Fraction(low), Fraction(high))
    except (ValueError, ZeroDivisionError):
        scale = None
    if not sep or scale is None or scale.low >= scale.high:
        raise UsageError(f"--scale {text!r} is not a range", where="--scale",
                         fix="give LOW:HIGH with LOW below HIGH, e.g. --scale 1:5")
    return scale


@dataclass(frozen=True)
class Recorded:
    """One case's judgment by one judge: its samples' AI scores (0..100) per category."""

    line: int
    case: str
    judge: str
    samples: tuple[Mapping[str, int], ...]
    """One a sample, in the file's order; a judgment of one score object is one sample."""
    rationale: str = ""


def _problem(source: str, line: int, where: str, message: str, fix: str) -> UsageError:
    return UsageError(message, file=source, where=f"line {line}" + (f": {where}" if where
                                                                      else ""), fix=fix)


def _object(text: str, source: str, line: int) -> dict[str, object]:
    try:
        value = loads_strict(text)
    except json.JSONDecodeError as exc:
        raise _problem(source, line, "", f"invalid JSON: {exc.msg}",
                       "one JSON object per line") from None
    except JsonProblem as exc:
        raise _problem(source, line, "", exc.problem, exc.fix) from None
    except RecursionError:
        raise _problem(source, line, "", "nested too deeply",
                       "one flat object per line") from None
    if not isinstance(value, dict):
        raise _problem(source, line, "", "not a JSON object",
                       'write {"case": ..., "judge": ..., "scores": {...}}')
    return value


def _text(value: Any, name: str, source: str, line: int) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 255:
        raise _problem(source, line, name, f"{name} must be a non-empty string (255 "
                       f"characters at most)", f"give the {name} as a string")
    return value


def _score(value: Any, where: str, rubric: Rubric, scale: Scale, source: str,
           line: int) -> int:
    if rubric.style == "levels":
        names = [lv.name for lv in rubric.levels]
        if not isinstance(value, str) or value not in names:
            raise _problem(source, line, where, f"{value!r} is not a level of rubric "
                           f"{rubric.id!r}", f"give one of: {', '.join(names)}")
        return level_score(rubric, value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _problem(source, line, where, f"{value!r} is not a number",
                       f"give a number on the scale {scale}")
    points = scale.to_points(Fraction(repr(value)) if isinstance(value, float)
                             else Fraction(value))
    if points is None:
        raise _problem(source, line, where, f"{value!r} is off the scale {scale}",
                       "give the scale the file uses with --scale LOW:HIGH")
    return points


def _sample(value: Any, where: str, rubric: Rubric, scale: Scale, source: str,
            line: int) -> dict[str, int]:
    known = [c.id for c in rubric.categories]
    if not isinstance(value, dict):
        raise _problem(source, line, where, "not an object of scores by category",
                       f"give {{{', '.join(repr(k) + ': ...' for k in known)}}}")
    unknown = sorted(set(value) - set(known))
    missing = [k for k in known if k not in value]
    if unknown or missing:
        what = (f"unknown categor{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)}"
                if unknown else f"no score for {', '.join(missing)}")
        raise _problem(source, line, where, f"{what} (rubric {rubric.id!r})",
                       f"give a score for each of: {', '.join(known)}")
    return {k: _score(value[k], f"{where}.{k}", rubric, scale, source, line) for k in known}


def _record(value: dict[str, Any], rubric: Rubric, scale: Scale, source: str,
            line: int) -> Recorded:
    extra = sorted(set(value) - FIELDS)
    if extra:
        raise _problem(source, line, extra[0], f"unknown field {extra[0]!r}",
                       f"use only: {', '.join(sorted(FIELDS))}")
    case = _text(value.get("case"), "case", source, line)
    judge = _text(value.get("judge"), "judge", source, line)
    if ("scores" in value) == ("samples" in value):
        raise _problem(source, line, "scores", "give either scores or samples",
                       'a judgment: "scores": {...}; its raw samples: "samples": [{...}, ...]')
    samples: tuple[dict[str, int], ...]
    if "scores" in value:
        samples = (_sample(value["scores"], "scores", rubric, scale, source, line),)
    else:
        raw = value["samples"]
        if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_SAMPLES:
            raise _problem(source, line, "samples", f"samples must be a list of 1 to "
                           f"{MAX_SAMPLES} score objects", "one score object per sample")
        samples = tuple(_sample(s, f"samples[{i}]", rubric, scale, source, line)
                        for i, s in enumerate(raw))
    rationale = value.get("rationale", "")
    if not isinstance(rationale, str):
        raise _problem(source, line, "rationale", "rationale must be a string",
                       "give the judge's words as a string, or leave it out")
    return Recorded(line=line, case=case, judge=judge, samples=samples, rationale=rationale)


def parse_recorded(lines: Iterable[str], rubric: Rubric, scale: Scale,
                   source: str) -> list[Recorded]:
    """Every judgment of the file, in order; UsageError naming the line and the field."""
    found: list[Recorded] = []
    seen: dict[tuple[str, str], int] = {}
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        record = _record(_object(text, source, number), rubric, scale, source, number)
        first = seen.setdefault((record.judge, record.case), number)
        if first != number:
            raise _problem(source, number, "case", f"case {record.case!r} of judge "
                           f"{record.judge!r} is given again (first on line {first})",
                           "give each case once per judge (its samples in one list)")
        found.append(record)
    if not found:
        raise UsageError("no judgment in the file", file=source,
                         fix='one JSON object a line: {"case": ..., "judge": ..., '
                             '"scores": {...}}')
    return found
