"""The judge-health check: constant scores, template text, short or
citation-only rationales are named; a judge that says something is left alone."""

from __future__ import annotations

from judge.core.formats.models import CaseResult, CategoryScore
from judge.core.stats.judge_health import HealthBuilder

HEALTHY = ("The fix is covered by six unit tests and the review approved it.",
           "Two of the checks failed and the agent did not rerun them.",
           "The docs were updated and the change was merged after review.")


def _case(n: int, scores: tuple[int, ...], rationales: tuple[str, ...],
          judged_by: str = "llm") -> CaseResult:
    cats = tuple(CategoryScore(category=f"c{i}", ai_score=s, final_score=s, weight=0.5,
                               rationale=r, evidence=("commits:abc123",))
                 for i, (s, r) in enumerate(zip(scores, rationales, strict=True)))
    return CaseResult(id=f"case-{n}", judged_by=judged_by, status="scored", overall_score=50,
                      band="weak", passed=False, category_scores=cats)


def _health(cases: list[CaseResult], template: str = ""):  # type: ignore[no-untyped-def]
    builder = HealthBuilder(template)
    for case in cases:
        builder.add(case)
    return builder.build()


def test_a_judge_that_answers_zero_is_named_constant() -> None:
    health = _health([_case(n, (0, 0), HEALTHY[:2]) for n in range(4)])
    assert health is not None and health.degenerate
    assert health.problems == ("constant AI scores: all 8 are 0",)
    assert (health.distinct_scores, health.top_score, health.top_share) == (1, 0, 1.0)


def test_near_constant_placeholders_short_and_citation_only() -> None:
    template = 'Write the rationale first, one to three sentences grounded in the evidence.'
    cases = [_case(n, (0, 0), ("<one to three sentences>", "sshp_1295},")) for n in range(4)]
    cases += [_case(9, (4, 0), ("commits:abc123", "one to three sentences grounded in the "
                                                  "evidence"))]
    health = _health(cases, template)
    assert health is not None
    assert health.problems == (
        "near-constant AI scores: 9 of 10 are 0",
        "5 of 10 rationales repeat the prompt template (placeholder or instruction text)",
        "4 of 10 rationales are shorter than 4 words")  # 1 citation-only: under the share
    assert health.short_rationales == 4 and health.citations_only == 1 \
        and health.template_text == 5


def test_a_judge_that_varies_and_explains_is_healthy() -> None:
    cases = [_case(n, (10 * n, 90 - 10 * n, 50), HEALTHY) for n in range(5)]
    health = _health(cases)
    assert health is not None and not health.degenerate and health.problems == ()
    assert health.scores == 15


def test_deterministic_and_too_few_scores_are_not_judged() -> None:
    assert _health([_case(0, (0, 0), ("", ""), judged_by="deterministic")]) is None
    few = _health([_case(0, (0, 0), HEALTHY[:2])])
    assert few is not None and few.problems == ()
