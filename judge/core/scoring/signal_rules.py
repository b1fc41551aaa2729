"""Deterministic signals by declared rules: a rubric's ``signals:`` section, evaluated on facts.

``judge suite collect`` reduces artefacts to *facts* (``tests.passed``, ``reviews.approved``,
``commits.conventional``...; the catalogue is :data:`FACTS`). A rubric declares, per
category, rules that turn facts into a 0..100 signal; each rule is a list of *terms* whose
points sum to 100:

- a condition term ``{fact, op, value, points}`` earns all its points when the comparison
  holds, none otherwise;
- a share term ``{fact, over, points}`` earns ``points × fact / over`` (exact fractions);
- either may carry ``when: {fact, op, value}``: where that condition does not hold the term is
  *not applicable* — it earns nothing and its points leave the total, the other terms are
  scaled to 100 (a project that does not keep Conventional Commits is not scored on them;
  a rubric that wants every project to keep them leaves ``when`` out). A rule whose every
  term is not applicable does not apply, and says so.

The first rule of a category whose facts are all present (and whose shares have a non-zero
denominator) produces the signal, rounded half up once at the end; the case records the rule
id, every term's observation and the rules passed over, so the deterministic side explains
itself as the judge's rationale does. No rule applies: no signal, and the rubric's
``missing`` policy decides (``ai_only`` for the task rubric).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ..text.frozen import Frozen
from .exact import round_half_up

__all__ = [
    "FACTS",
    "Fact",
    "SignalCondition",
    "SignalOutcome",
    "SignalRule",
    "SignalTerm",
    "TermOutcome",
    "evaluate_signals",
]

Fact = bool | int | str
"""A collected fact: a count, a yes/no, or a state name."""

FACTS: dict[str, tuple[type, str]] = {
    "commits.total": (int, "commits collected from the git range"),
    "commits.conventional": (int, "commits whose subject is a Conventional Commit (type: ...)"),
    "commits.additions": (int, "lines added over the range"),
    "commits.deletions": (int, "lines deleted over the range"),
    "commits.files": (int, "file changes over the range (a file twice counts twice)"),
    "repo.conventional": (bool, "the project keeps Conventional Commits: half or more of the "
                                "first-parent subjects before the range are"),
    "tests.total": (int, "test cases in the JUnit reports"),
    "tests.run": (int, "test cases that ran (total minus skipped)"),
    "tests.passed": (int, "test cases that passed"),
    "tests.failed": (int, "test cases with a failure"),
    "tests.errors": (int, "test cases with an error"),
    "tests.skipped": (int, "test cases skipped"),
    "tests.failing": (int, "test cases failed or errored"),
    "reviews.total": (int, "reviews submitted on the pull request"),
    "reviews.approved": (int, "reviewers whose latest verdict is an approval"),
    "reviews.changes_requested": (int, "reviewers whose latest verdict requests changes"),
    "reviews.comments": (int, "conversation comments on the pull request"),
    "pr.merged": (bool, "the pull request is merged"),
    "pr.state": (str, "the pull request's state (OPEN, CLOSED, MERGED)"),
    "pr.review_decision": (str, "GitHub's review decision (APPROVED, CHANGES_REQUESTED...)"),
    "checks.total": (int, "status checks on the pull request"),
    "checks.passed": (int, "checks that succeeded"),
    "checks.failed": (int, "checks that failed, errored, timed out or were cancelled"),
    "checks.pending": (int, "checks without a conclusion yet"),
    "run.success": (bool, "the workflow run concluded with success"),
    "run.conclusion": (str, "the workflow run's conclusion (success, failure...)"),
    "jobs.total": (int, "jobs of the workflow run"),
    "jobs.passed": (int, "jobs that succeeded"),
    "jobs.failed": (int, "jobs that failed, timed out or were cancelled"),
    "agent.steps": (int, "steps (lines) of the agent log"),
    "agent.errors": (int, "agent log steps at level error (or tool results marked as errors)"),
    "agent.warnings": (int, "agent log steps at level warning"),
    "agent.tool_calls": (int, "tool calls the agent made"),
    "agent.ok_steps": (int, "steps that did not fail: agent log steps not at an error level (nor "
                            "tool results marked as errors), LLM and tool spans without an "
                            "error status"),
    "documents.total": (int, "documents collected"),
}
"""Every fact an adapter may produce: its type and meaning. A rule naming another fails."""

Op = Literal["eq", "ne", "ge", "gt", "le", "lt"]


def _known_fact(name: str) -> str:
    if name not in FACTS:
        close = difflib.get_close_matches(name, list(FACTS), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f"; known facts: {', '.join(FACTS)}"
        raise ValueError(f"unknown fact {name!r}{hint}")
    return name


class SignalCondition(Frozen):
    """When a term applies: a comparison of a fact with a value."""

    fact: str
    """The fact read (see FACTS)."""
    op: Op
    """The comparison with ``value``."""
    value: bool | int | float | str
    """What the fact is compared with."""

    @field_validator("fact")
    @classmethod
    def _fact_known(cls, value: str) -> str:
        return _known_fact(value)

    @model_validator(mode="after")
    def _shape(self) -> SignalCondition:
        _check_comparison(self.fact, self.op, self.value)
        return self

    def holds(self, facts: Mapping[str, Fact]) -> bool:
        """Whether the condition holds on ``facts`` (which hold its fact)."""
        return _compare(facts[self.fact], self.op, self.value)


def _check_comparison(fact: str, op: Op, value: bool | int | float | str) -> None:
    kind = FACTS[fact][0]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise ValueError(f"fact {fact!r} is a count: compare it with a number")
    if kind is not int and not isinstance(value, kind):
        raise ValueError(f"fact {fact!r} is a {kind.__name__}: compare it with one")
    if kind is not int and op not in ("eq", "ne"):
        raise ValueError(f"fact {fact!r} is a {kind.__name__}: use op eq or ne")


class SignalTerm(Frozen):
    """One term of a rule: a condition on a fact, or the share ``fact / over``."""

    fact: str
    """The fact read (see FACTS)."""
    over: str | None = None
    """Share term: the denominator fact (an integer fact)."""
    op: Op | None = None
    """Condition term: the comparison with ``value``."""
    value: bool | int | float | str | None = None
    """Condition term: what the fact is compared with."""
    points: int = Field(ge=1, le=100)
    """Points the term is worth; a rule's terms sum to 100."""
    when: SignalCondition | None = None
    """The term applies only where this holds; elsewhere it is not applicable (its points
    leave the total instead of counting as lost)."""

    @field_validator("fact", "over")
    @classmethod
    def _fact_known(cls, value: str | None) -> str | None:
        return None if value is None else _known_fact(value)

    @model_validator(mode="after")
    def _shape(self) -> SignalTerm:
        kind = FACTS[self.fact][0]
        if self.over is not None:
            if self.op is not None or self.value is not None:
                raise ValueError("a term is a share (fact, over) or a condition (fact, op, "
                                 "value), not both")
            if kind is not int or FACTS[self.over][0] is not int:
                raise ValueError(f"a share needs two counts; {self.fact!r} or {self.over!r} "
                                 "is not one")
            return self
        if self.op is None or self.value is None:
            raise ValueError("a term needs 'over' (a share) or 'op' and 'value' (a condition)")
        _check_comparison(self.fact, self.op, self.value)
        return self

    def facts(self) -> tuple[str, ...]:
        """The facts the term reads."""
        own = (self.fact,) if self.over is None else (self.fact, self.over)
        return own if self.when is None else (*own, self.when.fact)


class SignalRule(Frozen):
    """A named rule: terms whose points sum to 100."""

    id: str = Field(min_length=1, pattern=r"^[a-z0-9][a-z0-9_.-]*$")
    """Recorded in every case the rule scores."""
    description: str = ""
    """What the rule rewards, for a reader of the rubric and the case."""
    terms: tuple[SignalTerm, ...] = Field(min_length=1)
    """The terms, each a condition on a fact or a share of two counts; points sum to 100."""

    @model_validator(mode="after")
    def _hundred(self) -> SignalRule:
        total = sum(t.points for t in self.terms)
        if total != 100:
            raise ValueError(f"the points of rule {self.id!r} sum to {total}, not 100")
        return self


class TermOutcome(Frozen):
    """What one term saw and earned."""

    fact: str
    observed: Fact
    over: str | None = None
    over_observed: int | None = Field(None, alias="overObserved")
    op: Op | None = None
    value: bool | int | float | str | None = None
    points: int
    earned: float
    """Points earned (exact value rounded to 4 places for display; the sum is exact)."""
    applicable: bool = True
    """False: the term's ``when`` did not hold; its points left the total."""
    note: str | None = None
    """Why the term was not applicable (``not applicable: repo.conventional is False``)."""


class SignalOutcome(Frozen):
    """The signal of one category: its value and the rule that produced it (or why none)."""

    category: str
    value: int | None = None
    rule: str | None = None
    terms: tuple[TermOutcome, ...] = ()
    skipped: tuple[str, ...] = ()
    """Rules passed over, each with why (``rule-id: no fact reviews.approved``)."""

    def record(self) -> dict[str, Any]:
        """The JSON a case keeps in ``metadata.signals``."""
        return self.model_dump(mode="json", exclude_defaults=True, exclude={"category"})


def _compare(observed: Fact, op: Op, value: bool | int | float | str) -> bool:
    if isinstance(observed, bool) or isinstance(observed, str):
        return (observed == value) == (op == "eq")
    left, right = Fraction(observed), Fraction(repr(value)) if isinstance(value, float) \
        else Fraction(int(value))
    return {"eq": left == right, "ne": left != right, "ge": left >= right, "gt": left > right,
            "le": left <= right, "lt": left < right}[op]


def _display(value: Fraction) -> float:
    return int(value) if value.denominator == 1 else round(float(value), 4)


def _not_applicable(term: SignalTerm, facts: Mapping[str, Fact]) -> TermOutcome:
    assert term.when is not None
    cond = term.when
    return TermOutcome(fact=term.fact, observed=facts[term.fact], over=term.over,
                       over_observed=None, op=term.op, value=term.value, points=term.points,
                       earned=0, applicable=False,
                       note=f"not applicable: {cond.fact} is {facts[cond.fact]} "
                            f"(applies when {cond.op} {cond.value})")


def _apply(rule: SignalRule, facts: Mapping[str, Fact]) -> tuple[Fraction, list[TermOutcome]] | str:
    """The exact points and the term outcomes, or why the rule does not apply.

    The points are scaled to 100 over the applicable terms.
    """
    missing = [f for t in rule.terms for f in t.facts() if f not in facts]
    if missing:
        return f"no fact {missing[0]}"
    total = Fraction(0)
    applicable = 0
    outcomes = []
    for term in rule.terms:
        if term.when is not None and not term.when.holds(facts):
            outcomes.append(_not_applicable(term, facts))
            continue
        applicable += term.points
        observed = facts[term.fact]
        if term.over is not None:
            over = facts[term.over]
            if not isinstance(over, int) or isinstance(over, bool) or over <= 0:
                return f"{term.over} is {over}: no share"
            share = min(Fraction(1), max(Fraction(0), Fraction(int(observed), over)))
            earned = Fraction(term.points) * share
            outcomes.append(TermOutcome(fact=term.fact, observed=observed, over=term.over,
                                        over_observed=over, points=term.points,
                                        earned=_display(earned)))
        else:
            assert term.op is not None and term.value is not None
            earned = Fraction(term.points if _compare(observed, term.op, term.value) else 0)
            outcomes.append(TermOutcome(fact=term.fact, observed=observed, op=term.op,
                                        value=term.value, points=term.points,
                                        earned=_display(earned)))
        total += earned
    if not applicable:
        return "not applicable: " + "; ".join(o.note.removeprefix("not applicable: ")
                                              for o in outcomes if o.note)
    return total * 100 / applicable, outcomes


def evaluate_signals(rules: Mapping[str, Sequence[SignalRule]],
                     facts: Mapping[str, Fact]) -> dict[str, SignalOutcome]:
    """Each category's signal: the first applicable rule's points, rounded half up once."""
    out: dict[str, SignalOutcome] = {}
    for category, candidates in rules.items():
        skipped: list[str] = []
        outcome = SignalOutcome(category=category)
        for rule in candidates:
            applied = _apply(rule, facts)
            if isinstance(applied, str):
                skipped.append(f"{rule.id}: {applied}")
                continue
            total, terms = applied
            outcome = SignalOutcome(category=category, value=round_half_up(total),
                                    rule=rule.id, terms=tuple(terms))
            break
        out[category] = outcome.model_copy(update={"skipped": tuple(skipped)})
    return out
