"""Reading a judge's reply: tolerant about the wrapping, strict about the verdict.

Real models wrap JSON in code fences, put prose around it, leave a trailing comma, or
write a raw control character (a newline) inside a string; those are forgiven. What is not
forgiven: a missing category, a score outside 0..100, a level that does not exist, a
citation of an ID the bundle does not have. Each of those is listed, so a repair turn can
show the model all of its mistakes at once. Any final or overall score the model writes is
ignored: the core computes those.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from ..formats.evidence import truncate
from ..formats.models import AdvisoryScore
from ..formats.output_schema import MAX_CITATIONS, RATIONALE_LIMIT
from ..formats.rubric import Rubric
from ..text.errors import OutputError
from .scoring import level_score

__all__ = ["extract_json", "parse_verdict"]


def _structural(text: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """Positions and characters of ``text`` outside JSON string literals (quotes excluded)."""
    in_string, escaped = False, False
    for pos in range(start, len(text)):
        ch = text[pos]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        else:
            yield pos, ch


def _matching_brace(text: str, start: int) -> int:
    depth = 0
    for pos, ch in _structural(text, start):
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return pos
    return -1


def _drop_trailing_commas(text: str) -> str:
    drop = {pos for pos, ch in _structural(text)
            if ch == "," and text[pos + 1:].lstrip()[:1] in {"}", "]"}}
    return "".join(ch for pos, ch in enumerate(text) if pos not in drop)


def extract_json(text: str) -> Any:
    """The first JSON object in ``text``; forgives fences, prose around it, trailing commas."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        # The usual reply is nothing but the object: one parse, no scan.
        try:
            value = json.loads(body)
        except (json.JSONDecodeError, RecursionError):
            pass
        else:
            if isinstance(value, dict):
                return value
    start = text.find("{")
    if start < 0:
        raise OutputError("the reply contains no JSON object",
                          errors=["the reply must be one JSON object; none was found"])
    end = _matching_brace(text, start)
    if end < 0:
        raise OutputError("the reply's JSON object is not closed (cut off?)",
                          errors=["the JSON object is incomplete; write the whole object"])
    candidate = text[start:end + 1]
    # strict=False: a raw newline or tab inside a string (small models write them in
    # rationales) is read as that character, not refused as an invalid verdict.
    try:
        return json.loads(candidate, strict=False)
    except json.JSONDecodeError:
        pass
    try:
        return json.loads(_drop_trailing_commas(candidate), strict=False)
    except json.JSONDecodeError as exc:
        raise OutputError(f"the reply is not valid JSON: {exc.msg} at column {exc.colno}",
                          errors=[f"invalid JSON: {exc.msg}"]) from None


def _as_int_score(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _parse_category(rubric: Rubric, cat_id: str, raw: Any, ids: frozenset[str],
                    errors: list[str]) -> AdvisoryScore | None:
    if not isinstance(raw, Mapping):
        errors.append(f"{cat_id}: must be an object with rationale, evidence and "
                      f"{'level' if rubric.style == 'levels' else 'score'}")
        return None
    before = len(errors)
    level: str | None = None
    score: int | None = None
    if rubric.style == "levels":
        names = [lv.name for lv in rubric.levels]
        raw_level = raw.get("level")
        level = raw_level.strip().lower() if isinstance(raw_level, str) else None
        if level not in names:
            errors.append(f"{cat_id}.level: {raw_level!r} is not one of {', '.join(names)}")
        else:
            score = level_score(rubric, level)
    else:
        score = _as_int_score(raw.get("score"))
        if score is None:
            errors.append(f"{cat_id}.score: {raw.get('score')!r} is not a whole number 0..100")
        elif not 0 <= score <= 100:
            errors.append(f"{cat_id}.score: {score} is outside 0..100")
    rationale = raw.get("rationale", "")
    if not isinstance(rationale, str):
        errors.append(f"{cat_id}.rationale: must be a string")
        rationale = ""
    cited = raw.get("evidence", [])
    if not isinstance(cited, list) or not all(isinstance(c, str) for c in cited):
        errors.append(f"{cat_id}.evidence: must be a list of evidence IDs")
        cited = []
    unknown = [c for c in cited if c not in ids]
    if unknown:
        hint = ", ".join(sorted(ids)[:20]) or "(the bundle is empty: cite nothing)"
        errors.append(f"{cat_id}.evidence: cites {unknown[0]!r}, which is not in ## Evidence; "
                      f"valid IDs: {hint}")
    if len(errors) > before or score is None:
        return None
    unique = tuple(dict.fromkeys(cited))[:MAX_CITATIONS]
    return AdvisoryScore(score=score, level=level, rationale=truncate(rationale.strip(),
                         RATIONALE_LIMIT)[0], evidence=unique)


def parse_verdict(text: str, rubric: Rubric, ids: tuple[str, ...]) -> dict[str, AdvisoryScore]:
    """Advisory scores per category from a reply; OutputError lists every problem found."""
    data = extract_json(text)
    if not isinstance(data, dict):
        raise OutputError("the reply is JSON but not an object", errors=["reply with one object"])
    cat_ids = [c.id for c in rubric.categories]
    inner = data.get("categories")
    if "categories" not in cat_ids and isinstance(inner, dict):
        data = inner  # a common wrapping: {"categories": {...}}
    errors: list[str] = []
    allowed = frozenset(ids)
    scores: dict[str, AdvisoryScore] = {}
    for cat_id in cat_ids:
        if cat_id not in data:
            errors.append(f"{cat_id}: missing; every category is required")
            continue
        parsed = _parse_category(rubric, cat_id, data[cat_id], allowed, errors)
        if parsed is not None:
            scores[cat_id] = parsed
    if errors:
        raise OutputError(f"invalid verdict: {errors[0]}" + (
            f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""), errors=errors)
    return scores
