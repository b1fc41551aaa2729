"""Re-scoring a stored run under another rubric's weights, bands, blend or levels: no model call.

The advisory inputs of every judged category are stored (AI score, level, rationale,
citations) beside the deterministic signal, so a rubric change that does not touch the
prompt is pure arithmetic over the stored run.
"""

from __future__ import annotations

from ..formats.models import AdvisoryScore, CaseResult
from ..formats.rubric import Rubric
from .scoring import level_score, score_case

__all__ = ["RescoreError", "rescore_result"]


class RescoreError(ValueError):
    """The stored result cannot be scored under the new rubric (categories or levels differ)."""


def rescore_result(result: CaseResult, rubric: Rubric) -> CaseResult:
    """``result`` with finals, overall, band and pass recomputed under ``rubric``."""
    if result.status == "cache_miss" or (result.status == "unscored"
                                         and result.judged_by == "llm"
                                         and not any(c.ai_score is not None
                                                     for c in result.category_scores)):
        # Nothing was judged (a miss, or the judge failed, with or without a reply kept):
        # nothing to re-score. A failed judge stays unscored whatever the new rubric's
        # policy for a missing AI score, as when the run judged it.
        return result
    stored = {c.category: c for c in result.category_scores}
    wanted = [c.id for c in rubric.categories]
    missing = [c for c in wanted if c not in stored]
    extra = [c for c in stored if c not in wanted]
    if missing or extra:
        raise RescoreError(
            f"case {result.id!r}: the run has categories {sorted(stored)}, rubric "
            f"{rubric.id!r} has {sorted(wanted)}; re-scoring needs the same categories "
            "(a category change alters the prompt: run the suite again)")
    deterministic = {c: stored[c].deterministic_score for c in wanted}
    advisory: dict[str, AdvisoryScore] = {}
    for cat in wanted:
        s = stored[cat]
        if s.ai_score is None:
            continue
        ai = s.ai_score
        if rubric.style == "levels":
            if s.level is None:
                raise RescoreError(f"case {result.id!r}: {cat} has no level to map under "
                                   f"levels rubric {rubric.id!r}")
            try:
                ai = level_score(rubric, s.level)
            except KeyError:
                raise RescoreError(f"case {result.id!r}: level {s.level!r} is not in rubric "
                                   f"{rubric.id!r}") from None
        advisory[cat] = AdvisoryScore(score=ai, level=s.level, rationale=s.rationale,
                                      evidence=s.evidence)
    score = score_case(rubric, deterministic, advisory)
    return result.model_copy(update={
        "status": score.status, "overall_score": score.overall_score, "band": score.band,
        "passed": score.passed, "category_scores": score.category_scores,
        "reason": score.reason,
    })
