"""Pairwise judging, the pure part: pair suites, the verdict schema, order swap and flip rate.

A pair is one input and two outputs, ``A`` and ``B``. The judge sees each pair twice:

- order 1: A as "Response 1", B as "Response 2";
- order 2: B as "Response 1", A as "Response 2".

It answers ``{"rationale": str, "winner": "1" | "2" | "tie"}`` by *position*; each verdict
is mapped back to the outcome ``A``, ``B`` or ``tie``. When the two orders agree, that is the
pair's result. When they disagree in any way (A against B, or a win against a tie), the
verdict depends on the order, not on the responses: the pair's result is a **tie** and the
pair counts as a **flip** (MT-Bench's rule). A judge that always picks the first position
therefore gets a 100% flip rate and nothing but ties.

Rates (see :class:`PairSummary`):

- ``flipRate`` = flipped pairs / pairs judged in both orders;
- ``positionOneWinRate`` = verdicts won by position 1 / verdicts won by either position
  (tie verdicts excluded), over both orders: 0.5 for a judge with no position bias;
- ``humanAgreement`` = pairs whose result equals the human ``preferred`` / judged pairs that
  have one.

No I/O here: the model call, the cache and the command live in ``judge.cli.judges_pairwise``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from ..formats.evidence import (
    DEFAULT_PROFILE,
    EvidenceBundle,
    EvidenceInputError,
    EvidenceProfile,
    GroupSpec,
    build_bundle,
    check_evidence,
    truncate,
)
from ..formats.output_schema import RATIONALE_LIMIT
from ..formats.rubric import format_validation_error
from ..formats.suite import iter_jsonl, read_suite_document
from ..scoring.replies import extract_json
from ..text.errors import OutputError, SuiteError
from ..text.frozen import Frozen
from ..text.secrets import masked_fields

__all__ = [
    "ORDERS",
    "WINNERS",
    "Order",
    "OrderVerdict",
    "Outcome",
    "Pair",
    "PairResult",
    "PairStatus",
    "PairSuite",
    "PairSummary",
    "PairVerdict",
    "Position",
    "combine",
    "evidence_profile",
    "order_outcome",
    "pair_bundle",
    "parse_pair_suite",
    "parse_pair_verdict",
    "shown",
    "summarize",
    "verdict_schema",
]

Position = Literal["1", "2", "tie"]
"""What the judge answers: the position of the better response, or a tie."""
Outcome = Literal["A", "B", "tie"]
"""A verdict mapped back to the pair's outputs."""
Order = Literal[1, 2]
"""Order 1 shows A first; order 2 shows B first."""
PairStatus = Literal["judged", "unscored", "cache_miss"]
"""``judged``: both orders gave a valid verdict; ``unscored``: one did not (reason kept);
``cache_miss``: offline replay had no cached verdict for an order."""

WINNERS: tuple[Position, ...] = ("1", "2", "tie")
ORDERS: tuple[Order, ...] = (1, 2)

RATIONALE_DOC = "Why: one to three sentences comparing the two responses."
WINNER_DOC = 'The better response by position: "1", "2", or "tie" when neither is better.'


# --- suites ---------------------------------------------------------------------------------


class Pair(Frozen):
    """One pair of a pairwise suite: two outputs for the same input."""

    id: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._:/-]*$")
    """Unique within the suite."""
    input: Any = None
    """What both were asked (text or structured)."""
    output_a: str | dict[str, Any]
    """Output A (text, or a mapping with ``text``/``content``...)."""
    output_b: str | dict[str, Any]
    """Output B."""
    evidence: dict[str, Any] = Field(default_factory=dict)
    """Evidence items by group, shown to the judge in both orders."""
    tags: tuple[str, ...] = ()
    preferred: Literal["a", "b", "tie"] | None = None
    """What a person preferred, for the judge's agreement with humans."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form context; never sent to the judge."""

    @field_validator("preferred", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    def preferred_outcome(self) -> Outcome | None:
        """The human preference as an outcome (``A``, ``B``, ``tie``), or None."""
        if self.preferred is None:
            return None
        return "tie" if self.preferred == "tie" else ("A" if self.preferred == "a" else "B")


class PairSuite(Frozen):
    """A named list of pairs and the criteria the judge compares them by."""

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    description: str = ""
    criteria: tuple[str, ...] = ()
    """Lines shown to the judge under ## Criteria; empty: the template's default criteria."""
    cases: tuple[Pair, ...]


_TOP_KEYS = ("id", "description", "criteria", "cases")
_PAIR_TEXT = ("input", "output_a", "output_b", "evidence", "metadata")
"""The fields of a pair that hold untrusted text, masked at load."""
_FIX = "see examples/pairwise/suite.yaml for the pair shape"


def evidence_profile(evidence: Mapping[str, Any]) -> EvidenceProfile:
    """The groups a pair's evidence has: the default profile's order first, then as written."""
    known = {g.name: g for g in DEFAULT_PROFILE.groups}
    groups = [g for g in DEFAULT_PROFILE.groups if g.name in evidence]
    groups += [GroupSpec(name=str(name)) for name in evidence if name not in known]
    return EvidenceProfile(groups=tuple(groups))


def pair_bundle(pair: Pair) -> EvidenceBundle | None:
    """The pair's evidence bundle (capped and bounded as always), or None when it has none."""
    if not pair.evidence:
        return None
    return build_bundle(pair.evidence, evidence_profile(pair.evidence))


def _check_pair_evidence(pair: Pair, source: str) -> None:
    if not pair.evidence:
        return
    for name in pair.evidence:
        try:
            GroupSpec(name=name)
        except ValidationError:
            raise SuiteError(f"invalid evidence group name {name!r}", file=source,
                             where=f"case {pair.id!r}: evidence.{name}",
                             fix="group names are a letter, then letters, digits or _") \
                from None
    try:
        check_evidence(pair.evidence, evidence_profile(pair.evidence))
    except EvidenceInputError as exc:
        raise SuiteError(str(exc).split(": ", 1)[-1], file=source,
                         where=f"case {pair.id!r}: {exc.where}", fix=_FIX) from None


def _parse_pairs(raw_pairs: Iterable[Any], source: str,
                 values: re.Pattern[str] | None) -> tuple[Pair, ...]:
    pairs: list[Pair] = []
    seen: set[str] = set()
    for index, raw in enumerate(raw_pairs):
        if not isinstance(raw, dict):
            raise SuiteError("a pair is a mapping", file=source, where=f"case #{index + 1}",
                             fix="write each pair as id: ..., input: ..., output_a: ..., "
                                 "output_b: ...")
        raw_id = raw.get("id")
        label = f"case {raw_id!r}" if isinstance(raw_id, str) and raw_id else \
            f"case #{index + 1}"
        try:
            pair = Pair.model_validate(masked_fields(raw, _PAIR_TEXT, values))
        except ValidationError as exc:
            where, msg = format_validation_error(exc)
            raise SuiteError(msg, file=source, where=f"{label}: {where}", fix=_FIX) from None
        if pair.id in seen:
            raise SuiteError(f"duplicate case id {pair.id!r}", file=source,
                             where=f"case #{index + 1}", fix="give every pair its own id")
        seen.add(pair.id)
        _check_pair_evidence(pair, source)
        pairs.append(pair)
    return tuple(pairs)


def _criteria(value: Any, source: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(line.strip() for line in value.splitlines() if line.strip())
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(v.strip() for v in value if v.strip())
    raise SuiteError("criteria is a text or a list of texts", file=source, where="criteria",
                     fix="write criteria: [- Correctness: ..., - Completeness: ...]")


def parse_pair_suite(text: str, source: str, default_id: str,
                     values: re.Pattern[str] | None = None) -> PairSuite:
    """Parse a pair suite from YAML (a mapping with ``cases``) or JSONL (one pair a line).

    Its pairs' text is masked for secrets as a suite's cases are (``values``: the
    credentials the caller holds).
    """
    if source.endswith(".jsonl"):
        raw = list(iter_jsonl(text.splitlines(), source))
        return PairSuite(id=default_id, cases=_parse_pairs(raw, source, values))
    data = read_suite_document(text, source, _TOP_KEYS,
                               "write cases: [- id: ..., output_a: ..., output_b: ...]")
    pairs = _parse_pairs(data["cases"], source, values)
    if not pairs:
        raise SuiteError("the suite has no pairs", file=source, where="cases",
                         fix="add at least one pair")
    try:
        return PairSuite(id=str(data.get("id") or default_id),
                         description=str(data.get("description") or ""),
                         criteria=_criteria(data.get("criteria"), source), cases=pairs)
    except ValidationError as exc:
        where, msg = format_validation_error(exc)
        raise SuiteError(msg, file=source, where=where,
                         fix="suite ids are letters, digits, . _ -") from None


# --- the verdict ----------------------------------------------------------------------------


class PairVerdict(Frozen):
    """One valid verdict: the winner by position and the judge's reasons (bounded)."""

    rationale: str = Field(max_length=RATIONALE_LIMIT, description=RATIONALE_DOC)
    winner: Position = Field(description=WINNER_DOC)


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if k != "title"}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def verdict_schema() -> dict[str, Any]:
    """The JSON schema of a verdict, flat, closed, without titles.

    ``rationale`` comes first, so the model writes its reasons before it commits to a
    winner; both are required and nothing else is allowed.
    """
    schema: dict[str, Any] = _strip_titles(PairVerdict.model_json_schema())
    schema["description"] = "Which of two responses to one task is better."
    schema["required"] = ["rationale", "winner"]
    return schema


def _winner(value: Any) -> Position | None:
    # Forgiven: 1 / 2 as numbers, "Tie", "Response 2". Anything else is an error.
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value in (1, 2):
        return "1" if value == 1 else "2"
    if isinstance(value, str):
        text = value.strip().lower().removeprefix("response").strip()
        if text == "1":
            return "1"
        if text == "2":
            return "2"
        if text == "tie":
            return "tie"
    return None


def parse_pair_verdict(text: str) -> PairVerdict:
    """The verdict in a reply; OutputError lists every problem, for a repair turn."""
    data = extract_json(text)
    if not isinstance(data, dict):
        raise OutputError("the reply is JSON but not an object", errors=["reply with one object"])
    errors: list[str] = []
    winner = _winner(data.get("winner"))
    if "winner" not in data:
        errors.append('winner: missing; answer "1", "2" or "tie"')
    elif winner is None:
        errors.append(f'winner: {data["winner"]!r} is not one of "1", "2", "tie"')
    rationale = data.get("rationale", "")
    if not isinstance(rationale, str):
        errors.append("rationale: must be a string")
        rationale = ""
    if errors or winner is None:
        raise OutputError(f"invalid verdict: {errors[0]}" + (
            f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""), errors=errors)
    return PairVerdict(rationale=truncate(rationale.strip(), RATIONALE_LIMIT)[0], winner=winner)


# --- orders, outcomes, aggregation ----------------------------------------------------------


def shown(pair: Pair, order: Order) -> tuple[str | dict[str, Any], str | dict[str, Any]]:
    """The outputs as Response 1 and Response 2 in ``order``."""
    return (pair.output_a, pair.output_b) if order == 1 else (pair.output_b, pair.output_a)


def order_outcome(order: Order, winner: Position) -> Outcome:
    """A positional verdict mapped back to the pair's outputs."""
    if winner == "tie":
        return "tie"
    first_wins = winner == "1"
    return ("A" if first_wins else "B") if order == 1 else ("B" if first_wins else "A")


class OrderVerdict(Frozen):
    """The judgment of a pair in one order, with how it was obtained."""

    order: Order
    first: Literal["A", "B"]
    """Which output was shown as Response 1."""
    status: PairStatus
    winner: Position | None = None
    """What the judge answered (by position)."""
    outcome: Outcome | None = None
    """The answer mapped back to A / B / tie."""
    rationale: str = ""
    reason: str | None = None
    """Why there is no verdict, when there is none."""
    cache_key: str = Field(alias="cacheKey")
    cached: bool = False
    """Whether this run read the verdict from the cache."""
    repair_turns: int = Field(0, alias="repairTurns")
    output_mode: str | None = Field(None, alias="outputMode")
    prompt_tokens: int | None = Field(None, alias="promptTokens")
    completion_tokens: int | None = Field(None, alias="completionTokens")
    cost_usd: float | None = Field(None, alias="costUsd")
    latency_ms: float | None = Field(None, alias="latencyMs")
    finish_reason: str | None = Field(None, alias="finishReason")
    model_reported: str | None = Field(None, alias="modelReported")


class PairResult(Frozen):
    """A pair judged in both orders, and what the two verdicts add up to."""

    id: str
    status: PairStatus
    result: Outcome | None = None
    """The pair's result; a tie when the orders disagree. None unless judged."""
    flipped: bool | None = None
    """Whether the verdict depended on the order. None unless judged."""
    preferred: Outcome | None = None
    """The human preference, when the suite gives one."""
    agrees: bool | None = None
    """Whether ``result`` equals ``preferred`` (judged and labelled pairs only)."""
    reason: str | None = None
    tags: tuple[str, ...] = ()
    verdicts: tuple[OrderVerdict, ...]
    """Order 1, then order 2."""


def combine(pair: Pair, verdicts: Sequence[OrderVerdict]) -> PairResult:
    """The pair's result from its two verdicts: agreement stands, any disagreement is a tie."""
    ordered = tuple(sorted(verdicts, key=lambda v: v.order))
    if [v.order for v in ordered] != list(ORDERS):
        raise ValueError(f"pair {pair.id!r} needs exactly one verdict per order")
    preferred = pair.preferred_outcome()
    base: dict[str, Any] = {"id": pair.id, "preferred": preferred, "tags": pair.tags,
                            "verdicts": ordered}
    missing = [v for v in ordered if v.status != "judged" or v.outcome is None]
    if missing:
        status: PairStatus = "cache_miss" if any(v.status == "cache_miss" for v in missing) \
            else "unscored"
        reason = "; ".join(f"order {v.order}: {v.reason or v.status}" for v in missing)
        return PairResult(**base, status=status, reason=reason)
    one, two = ordered[0].outcome, ordered[1].outcome
    flipped = one != two
    result: Outcome = "tie" if flipped or one is None else one
    return PairResult(**base, status="judged", result=result, flipped=flipped,
                      agrees=None if preferred is None else result == preferred)


class PairSummary(Frozen):
    """What a pairwise run adds up to."""

    pairs: int
    judged: int
    """Pairs with a valid verdict in both orders."""
    unscored: int
    cache_misses: int = Field(alias="cacheMisses")
    wins_a: int = Field(alias="winsA")
    wins_b: int = Field(alias="winsB")
    ties: int
    """Judged pairs whose result is a tie (flips included)."""
    flips: int
    flip_rate: float | None = Field(alias="flipRate")
    """Flipped pairs / judged pairs; None when none was judged."""
    position_one_wins: int = Field(alias="positionOneWins")
    """Valid verdicts, over both orders, that picked position 1."""
    position_two_wins: int = Field(alias="positionTwoWins")
    position_ties: int = Field(alias="positionTies")
    """Valid verdicts that answered tie."""
    position_one_win_rate: float | None = Field(alias="positionOneWinRate")
    """positionOneWins / (positionOneWins + positionTwoWins); None without a decisive verdict."""
    labelled: int
    """Judged pairs with a human ``preferred``."""
    agreements: int
    human_agreement: float | None = Field(alias="humanAgreement")
    """agreements / labelled; None when no judged pair is labelled."""


def _rate(part: int, whole: int) -> float | None:
    return None if whole == 0 else part / whole


def summarize(results: Iterable[PairResult]) -> PairSummary:
    """Counts and rates over the pairs (see the module docstring for each definition)."""
    items = list(results)
    judged = [r for r in items if r.status == "judged"]
    valid = [v for r in items for v in r.verdicts if v.status == "judged" and v.winner]
    labelled = [r for r in judged if r.preferred is not None]
    p1 = sum(v.winner == "1" for v in valid)
    p2 = sum(v.winner == "2" for v in valid)
    flips = sum(bool(r.flipped) for r in judged)
    agreements = sum(bool(r.agrees) for r in labelled)
    return PairSummary(
        pairs=len(items), judged=len(judged),
        unscored=sum(r.status == "unscored" for r in items),
        cache_misses=sum(r.status == "cache_miss" for r in items),
        wins_a=sum(r.result == "A" for r in judged), wins_b=sum(r.result == "B" for r in judged),
        ties=sum(r.result == "tie" for r in judged), flips=flips,
        flip_rate=_rate(flips, len(judged)), position_one_wins=p1, position_two_wins=p2,
        position_ties=sum(v.winner == "tie" for v in valid),
        position_one_win_rate=_rate(p1, p1 + p2), labelled=len(labelled), agreements=agreements,
        human_agreement=_rate(agreements, len(labelled)),
    )
