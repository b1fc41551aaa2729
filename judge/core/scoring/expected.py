"""``score_mode = "expected"``: each AI score as the probability-weighted value of the answers.

G-Eval's idea (Liu et al. 2023): instead of the one answer a judge wrote, read the
probabilities it gave every allowed answer at the place where it wrote it, and take the
weighted mean of their values. A small or sampled judge flips between neighbouring answers
from ask to ask; the weighted mean moves far less.

The allowed answers are closed: a levels rubric's level names, or for a scores rubric the
five-point scale :data:`SCALE` (0, 25, 50, 75, 100; the schema of this mode allows nothing
else). Both are told apart by their first character (``e g a p f``, ``0 2 5 7 1``), so the
log-probabilities of the *first token* of the answer decide. Alternatives that match no
allowed answer (another digit, a space) are dropped and the rest renormalised; what share
of the probability the allowed answers held is kept with the score (``mass``).

Never a silent fallback (DeepEval #1029 was one): a reply without log-probabilities, or
whose answer token cannot be found, is an :class:`OutputError`; the case is then unscored
with that reason, not scored from the written answer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from ..formats.models import AdvisoryScore
from ..formats.rubric import Rubric
from ..text.errors import OutputError
from .exact import exact, round_half_up
from .scoring import level_score

__all__ = ["SCALE", "TOP_LOGPROBS", "Distribution", "answer_values", "expected_verdict"]

SCALE = (0, 25, 50, 75, 100)
"""The answers of a scores rubric in this mode: five points with distinct first digits."""
TOP_LOGPROBS = 20
"""Alternatives asked per token (OpenAI's most): the five answers and what else the model
weighed; a grammar-constrained server reports the model's own, unconstrained ranking."""

Distribution = dict[str, float]


def answer_values(rubric: Rubric) -> dict[str, int]:
    """Allowed answer (as written in the JSON) -> its 0..100 value."""
    if rubric.style == "levels":
        return {lv.name: level_score(rubric, lv.name) for lv in rubric.levels}
    return {str(v): v for v in SCALE}


def _by_first(answers: Sequence[str]) -> dict[str, str]:
    firsts = {a[:1] for a in answers}
    if len(firsts) != len(answers):
        raise OutputError("score_mode expected: the allowed answers do not differ in their "
                          "first character", errors=["answers must start differently"])
    return {a[:1]: a for a in answers}


def _value_offset(text: str, category: str, field: str) -> int:
    """Where the answer of ``category.field`` starts in the reply (its first character)."""
    cat = re.search(r'"' + re.escape(category) + r'"\s*:\s*\{', text)
    if cat is None:
        raise OutputError(f"score_mode expected: {category} not found in the reply",
                          errors=[f"{category}: missing"])
    end = text.find("}", cat.end())
    found = re.compile(r'"' + field + r'"\s*:\s*"?').search(text, cat.end(),
                                                            end if end >= 0 else len(text))
    if found is None:
        raise OutputError(f"score_mode expected: {category}.{field} not found in the reply",
                          errors=[f"{category}.{field}: missing"])
    return found.end()


def _distribution(tokens: Sequence[Mapping[str, Any]], offset: int,
                  by_first: Mapping[str, str]) -> tuple[Distribution, float]:
    """Probabilities of each allowed answer at ``offset``, renormalised; and their raw mass."""
    pos = 0
    for token in tokens:
        piece = str(token.get("token", ""))
        if pos <= offset < pos + len(piece) or (offset == pos and not piece):
            lead = piece[:offset - pos]  # what this token holds before the answer starts
            probs: Distribution = {}
            seen = [(str(a), lp) for a, lp in token.get("top") or ()]
            if token.get("logprob") is not None and piece not in {a for a, _ in seen}:
                # The answer written was forced by the schema's grammar and may lie outside
                # the model's own top alternatives: it counts with its own probability.
                seen.append((piece, token["logprob"]))
            for alt, logprob in seen:
                if not alt.startswith(lead) or len(alt) <= len(lead):
                    continue
                answer = by_first.get(alt[len(lead)])
                if answer is not None:
                    probs[answer] = probs.get(answer, 0.0) + math.exp(float(logprob))
            mass = sum(probs.values())
            if mass <= 0:
                raise OutputError("score_mode expected: no allowed answer among the "
                                  "alternatives at the answer's token",
                                  errors=["no allowed answer in the log-probabilities"])
            return {a: p / mass for a, p in sorted(probs.items())}, mass
        pos += len(piece)
    raise OutputError("score_mode expected: the log-probabilities do not cover the answer",
                      errors=["log-probabilities shorter than the reply"])


def expected_verdict(verdict: Mapping[str, AdvisoryScore], text: str,
                     logprobs: Sequence[Mapping[str, Any]] | None,
                     rubric: Rubric) -> tuple[dict[str, AdvisoryScore], dict[str, Distribution]]:
    """``verdict`` (the parsed reply) with each score replaced by its expected value.

    ``logprobs``: the reply's tokens in order, each ``{"token": text, "top": [[alt,
    logprob], ...]}`` (:class:`judge.llm.client.Completion`). Returns the new scores and, per
    category, the renormalised distribution they came from. For a levels rubric the
    ``level`` becomes the most probable one.
    """
    if not logprobs:
        raise OutputError("score_mode expected: the reply carries no log-probabilities (the "
                          "provider did not return them); use score_mode \"direct\" for it",
                          errors=["no log-probabilities in the reply"])
    values = answer_values(rubric)
    by_first = _by_first(tuple(values))
    field = "level" if rubric.style == "levels" else "score"
    scores: dict[str, AdvisoryScore] = {}
    dists: dict[str, Distribution] = {}
    for cat, advisory in verdict.items():
        dist, _ = _distribution(logprobs, _value_offset(text, cat, field), by_first)
        mean = sum((exact(p) * values[a] for a, p in dist.items()), Fraction(0))
        top = max(dist, key=lambda a: (dist[a], a))
        scores[cat] = advisory.model_copy(update={
            "score": max(0, min(100, round_half_up(mean))),
            **({"level": top} if rubric.style == "levels" else {})})
        dists[cat] = dist
    return scores, dists
