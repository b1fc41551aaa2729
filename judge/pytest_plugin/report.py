"""Judged assertions and their failure text: what a person needs to act on a failed judgment.

A failure names the case, its overall and per-category scores (deterministic / AI / final),
the band, the judge's rationale and the evidence it cited, and the command that re-renders
the prompt. The plugin registers each result it returns with the context those commands
need (:func:`remember`); a result from elsewhere is described with what it carries.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..core.formats.models import CaseResult
from ..core.formats.rubric import DEFAULT_BANDS, Rubric
from ..core.text.terminal_text import visible

__all__ = [
    "JudgeAssertionError",
    "JudgedContext",
    "assert_band",
    "assert_passes",
    "assert_score",
    "context_of",
    "describe",
    "forget_all",
    "junit_properties",
    "remember",
]

RATIONALE_CHARS = 400
EXCERPT_CHARS = 160
_REMEMBERED = 10_000  # results kept for their context; older ones are described without it


class JudgeAssertionError(AssertionError):
    """A judged assertion failed; the message is the whole report."""


@dataclass(frozen=True)
class JudgedContext:
    """What the plugin knew when it produced a result: rubric, and the commands to act."""

    rubric: Rubric | None
    render: Callable[[], str] | None = None
    """The command that re-renders the prompt (called only when a failure is reported)."""
    record: str | None = None
    """The command that would record a missing judgment."""
    mode: str | None = None


# id(result) -> (result, context). The result is kept so its id is not reused meanwhile.
_CONTEXTS: dict[int, tuple[CaseResult, JudgedContext]] = {}


def remember(result: CaseResult, context: JudgedContext) -> CaseResult:
    """Keep ``context`` for ``result`` (the failure text uses it); returns ``result``."""
    if len(_CONTEXTS) >= _REMEMBERED:
        _CONTEXTS.pop(next(iter(_CONTEXTS)))
    _CONTEXTS[id(result)] = (result, context)
    return result


def context_of(result: CaseResult) -> JudgedContext | None:
    """The context the plugin registered for ``result``, if any."""
    found = _CONTEXTS.get(id(result))
    return found[1] if found is not None and found[0] is result else None


def forget_all() -> None:
    """Drop every kept context (at the end of a session)."""
    _CONTEXTS.clear()


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _num(value: int | None) -> str:
    return "—" if value is None else str(value)


def _table(result: CaseResult) -> list[str]:
    if not result.category_scores:
        return []
    width = max(len("category"), *(len(c.category) for c in result.category_scores))
    lines = [f"  {'category':<{width}}  {'det':>4} {'ai':>4} {'final':>6}  weight  band"]
    for c in result.category_scores:
        lines.append(f"  {c.category:<{width}}  {_num(c.deterministic_score):>4} "
                     f"{_num(c.ai_score):>4} {_num(c.final_score):>6}  {c.weight:>6.2f}  "
                     f"{c.band or '—'}")
    lines.append(f"  {'overall':<{width}}  {'':>4} {'':>4} {_num(result.overall_score):>6}  "
                 f"{'':>6}  {result.band or '—'}")
    return lines


def _rationale(result: CaseResult) -> list[str]:
    said = [(c.category, c.rationale) for c in result.category_scores if c.rationale.strip()]
    if not said:
        return []
    return ["  judge's rationale:",
            *(f"    {cat}: {_clip(text, RATIONALE_CHARS)}" for cat, text in said)]


def _evidence(result: CaseResult) -> list[str]:
    if not result.evidence:
        return []
    lines = ["  evidence cited:"]
    for item in result.evidence:
        text = " — ".join(p for p in (_clip(item.title, EXCERPT_CHARS),
                                       _clip(item.excerpt, EXCERPT_CHARS)) if p)
        lines.append(f"    [{item.id}] {text}".rstrip())
    return lines


def _judge_line(result: CaseResult) -> list[str]:
    meta = result.judge
    if meta is None:
        return [f"  judged by: {result.judged_by} (no model)"]
    how = "replayed from the cache" if meta.cached else "judged anew"
    return [f"  judge: {meta.model} · {how} · template {meta.template_id} · "
            f"cache key {meta.cache_key or '—'}"]


def describe(result: CaseResult, headline: str, context: JudgedContext | None = None) -> str:
    """The failure text of ``result`` under ``headline`` (plain text: CI logs show it as is).

    Evidence, rationales and reasons are untrusted text: control and direction characters are
    written as visible escapes, so a terminal colour code or a cursor move is shown, not run.
    """
    ctx = context if context is not None else context_of(result)
    rubric = ctx.rubric if ctx else None
    facts = [f"status {result.status}"]
    if rubric is not None:
        facts.insert(0, f"rubric {rubric.id} (pass mark {rubric.pass_score})")
    if result.passed is not None:
        facts.append("passed" if result.passed else "not passed")
    lines = [f"{result.id}: {headline}", "  " + " · ".join(facts)]
    if result.reason:
        lines.append(f"  reason: {_clip(result.reason, RATIONALE_CHARS)}")
    lines += _table(result) + _rationale(result) + _evidence(result) + _judge_line(result)
    if result.status == "cache_miss":
        lines.append("  offline: no model was called for this judgment")
        if ctx and ctx.record:
            lines.append(f"  record it (calls the judge, writes the cache): {ctx.record}")
    if ctx and ctx.render and result.judged_by == "llm":
        lines.append(f"  re-render the prompt: {ctx.render()}")
    return visible("\n".join(lines))


def _fail(result: CaseResult, headline: str) -> JudgeAssertionError:
    return JudgeAssertionError(describe(result, headline))


def _unscored(result: CaseResult) -> str | None:
    if result.status == "cache_miss":
        return "no cached judgment (offline mode)"
    if result.status != "scored":
        return "could not be scored"
    return None


def assert_passes(result: CaseResult) -> None:
    """Fail unless the case is scored and passes the rubric's pass mark."""
    __tracebackhide__ = True
    problem = _unscored(result)
    if problem is not None:
        raise _fail(result, problem)
    if not result.passed:
        mark = (context_of(result) or JudgedContext(None)).rubric
        below = f" is below the pass mark {mark.pass_score}" if mark else ""
        raise _fail(result, f"did not pass: overall {_num(result.overall_score)} "
                            f"({result.band or '—'}){below}")


def assert_score(result: CaseResult, *, at_least: int, category: str | None = None) -> None:
    """Fail unless the overall score (or ``category``'s final score) is at least ``at_least``."""
    __tracebackhide__ = True
    problem = _unscored(result)
    if problem is not None:
        raise _fail(result, problem)
    if category is None:
        score, what = result.overall_score, "overall"
    else:
        found = next((c for c in result.category_scores if c.category == category), None)
        if found is None:
            known = ", ".join(c.category for c in result.category_scores)
            raise ValueError(f"no category {category!r} in the result of {result.id} "
                             f"(its categories: {known})")
        score, what = found.final_score, f"{category} final"
    if score is None or score < at_least:
        raise _fail(result, f"{what} score {_num(score)} is below {at_least}")


def assert_band(result: CaseResult, *, at_least: str) -> None:
    """Fail unless the result's band is ``at_least`` or a higher one of the rubric's bands."""
    __tracebackhide__ = True
    ctx = context_of(result)
    bands = ctx.rubric.bands if ctx and ctx.rubric else DEFAULT_BANDS
    order = [b.name for b in sorted(bands, key=lambda b: b.min)]
    if at_least not in order:
        raise ValueError(f"no band {at_least!r}; the rubric's bands, lowest first: "
                         f"{', '.join(order)}")
    problem = _unscored(result)
    if problem is not None:
        raise _fail(result, problem)
    if result.band not in order or order.index(result.band) < order.index(at_least):
        raise _fail(result, f"band {result.band or '—'} is below {at_least} "
                            f"(bands, lowest first: {', '.join(order)})")


def junit_properties(result: CaseResult) -> list[tuple[str, object]]:
    """The result's scores as JUnit XML properties, prefixed ``judge.<case id>.``."""
    p = f"judge.{result.id}."
    props: list[tuple[str, object]] = [(p + "status", result.status),
                                       (p + "overall", _num(result.overall_score)),
                                       (p + "band", result.band or ""),
                                       (p + "passed", "" if result.passed is None
                                        else str(result.passed).lower())]
    for c in result.category_scores:
        props += [(f"{p}{c.category}.deterministic", _num(c.deterministic_score)),
                  (f"{p}{c.category}.ai", _num(c.ai_score)),
                  (f"{p}{c.category}.final", _num(c.final_score))]
    if result.judge is not None:
        props += [(p + "model", result.judge.model),
                  (p + "cached", str(result.judge.cached).lower()),
                  (p + "cacheKey", result.judge.cache_key)]
    return props
