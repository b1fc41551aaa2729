"""Judging one case: prepare (pure, shared by every judge), then judge with one model.

The flow for an LLM-judged case::

    bundle + signals + prompt ──► request ──► cache key ──► hit? parse the cached turns
                                                              │ miss
                                                              ▼
                                    call ──► parse ──► invalid? repair turn (bounded) ──► ...
                                                              │ valid
                                                              ▼
                                          cache the turns ──► score (core) ──► CaseResult

Only exchanges that ended in a valid verdict are cached: a transport failure or a reply
still invalid after the repair turns leaves the case unscored *and uncached*, so a later
run asks again. Parsing always happens after reading, so a parser fix needs no new calls.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypedDict, TypeVar

from ..cache.disk import JudgmentCache
from ..cache.entry import EntryMeta, key_request, seal_entry
from ..core.formats.conversation import (
    CONVERSATION_GROUP,
    ConversationView,
    TurnView,
    bound_conversation,
)
from ..core.formats.evidence import EvidenceBundle, build_bundle
from ..core.formats.models import (
    AdvisoryScore,
    CaseResult,
    CategoryScore,
    CheckResult,
    CitedEvidence,
    JudgedBy,
    JudgeMeta,
)
from ..core.formats.output_schema import (
    expected_schema,
    output_schema,
    output_schema_json,
    stable_schema,
)
from ..core.formats.rubric import Rubric
from ..core.formats.suite import Case
from ..core.formats.turns import CachedTurn, turn_totals
from ..core.scoring.check_signals import deterministic_signals
from ..core.scoring.expected import SCALE, expected_verdict
from ..core.scoring.replies import parse_verdict
from ..core.scoring.scoring import score_case
from ..core.text.errors import OutputError, ProviderError
from ..llm.client import Completion, JudgeRequest
from ..render.prompts import PromptRenderer, RenderedPrompt

__all__ = [
    "CaseFacts",
    "Completer",
    "Exchange",
    "ForwardingCompleter",
    "JudgeSettings",
    "Prepared",
    "build_request",
    "cited_turn",
    "exchange",
    "judge_meta",
    "judge_prepared",
    "judge_request",
    "prepare",
    "repair_message",
    "scored_result",
    "verdict_reader",
]

VERSION = "0.1.0"
T = TypeVar("T")


class Completer(Protocol):
    """What the judge and the runner use of a model client (the LiteLLM client, or a fake).

    Read-only properties, so a plain attribute or a property both satisfy them (the
    runner's :class:`judge.engine.runner.LimitedCompleter` forwards its inner client's).
    """

    @property
    def engine(self) -> Mapping[str, Any] | None:
        """What serves the model, when known: stored in the meta of every entry it writes."""
        ...

    @property
    def max_concurrency(self) -> int | None:
        """Calls the server takes at once, when it has its own limit (a llama.cpp server: 1)."""
        ...

    @property
    def attempts(self) -> int:
        """Requests sent on the wire so far, retries and fallbacks included (a run's calls)."""
        ...

    @property
    def retries(self) -> int:
        """Of those, the ones sent again after a transport fault."""
        ...

    async def complete(self, request: JudgeRequest,
                       messages: Sequence[Mapping[str, str]] | None = None) -> Completion:
        """One completion for ``request`` (``messages`` overrides, for repair turns)."""
        ...


@dataclass(frozen=True)
class JudgeSettings:
    """Call settings that are part of every cache key (and recorded with every result)."""

    temperature: float = 0.0
    seed: int | None = 42
    output_mode: str = "auto"
    max_repairs: int = 1
    params: Mapping[str, Any] = field(default_factory=lambda: {"max_tokens": 1024})
    stable_schema: bool = False
    """Send the rubric's schema without the case's citation enum (a prefix the provider's
    prompt cache can reuse; :func:`judge.core.formats.output_schema.stable_schema`). Off: keys as
    before."""
    score_mode: Literal["direct", "expected"] = "direct"
    """``direct``: the AI score is the answer the judge wrote. ``expected``: the
    probability-weighted value over the allowed answers (:mod:`judge.core.scoring.expected`); the
    request asks for log-probabilities (in ``params``, so in the key) and a closed answer set."""

    def seed_for(self, sample: int) -> int | None:
        """The seed of sample ``sample`` (seed + sample), None without a seed."""
        return None if self.seed is None else self.seed + sample


@dataclass(frozen=True)
class Prepared:
    """Everything about a case that does not depend on the judge model."""

    case: Case
    bundle: EvidenceBundle
    signals: dict[str, int | None]
    checks: tuple[CheckResult, ...]
    prompt: RenderedPrompt | None
    schema: dict[str, Any] | None
    schema_json: tuple[dict[str, Any], str] | None = field(default=None, repr=False,
                                                           compare=False)
    """``schema`` and its canonical JSON (written once, for the cache key and the entry);
    used only while ``schema`` is that very object (a ``replace`` of it drops the text)."""
    conversation: ConversationView | None = field(default=None, compare=False)
    """The case's turns as the judge saw them (None: it has none); its ids are citable."""

    @property
    def case_id(self) -> str:
        """The case's id."""
        return self.case.id

    @property
    def judged_by(self) -> JudgedBy:
        """``llm`` or ``deterministic``."""
        return self.case.judged_by

    @property
    def tags(self) -> tuple[str, ...]:
        """The case's tags."""
        return self.case.tags

    @property
    def complexity(self) -> str | None:
        """The case's complexity, if it has one."""
        return self.case.complexity

    @property
    def dropped(self) -> dict[str, int]:
        """How many items each capped group left out (groups that dropped none omitted)."""
        return {g.name: g.dropped for g in self.bundle.groups if g.dropped}

    def cite(self, ids: Iterable[str]) -> tuple[CitedEvidence, ...]:
        """The cited items of the bundle, in the order given; unknown ids are left out."""
        by_id = self.bundle.by_id()
        turns = {t.id: t for t in self.conversation.turns} if self.conversation else {}
        return tuple(CitedEvidence(id=i, group=by_id[i].group, title=by_id[i].title,
                                   excerpt=by_id[i].excerpt, refs=by_id[i].refs)
                     if i in by_id else cited_turn(turns[i])
                     for i in ids if i in by_id or i in turns)

    def citable(self) -> tuple[str, ...]:
        """The ids a verdict may cite: the bundle's, then the conversation's turns."""
        ids = self.bundle.ids()
        return ids + self.conversation.ids() if self.conversation else ids


class CaseFacts(Protocol):
    """What a result needs of a case besides the verdict.

    :class:`Prepared` has it from the bundle; a replay index record has it stored
    (:mod:`judge.engine.replay`), so both paths build results with the same code.
    """

    @property
    def case_id(self) -> str: ...  # noqa: D102
    @property
    def judged_by(self) -> JudgedBy: ...  # noqa: D102
    @property
    def tags(self) -> tuple[str, ...]: ...  # noqa: D102
    @property
    def complexity(self) -> str | None: ...  # noqa: D102
    @property
    def signals(self) -> dict[str, int | None]: ...  # noqa: D102
    @property
    def checks(self) -> tuple[CheckResult, ...]: ...  # noqa: D102
    @property
    def dropped(self) -> dict[str, int]: ...  # noqa: D102
    def cite(self, ids: Iterable[str]) -> tuple[CitedEvidence, ...]: ...  # noqa: D102


def prepare(case: Case, rubric: Rubric, renderer: PromptRenderer | None) -> Prepared:
    """Build the bundle, run the checks and render the prompt, once per case."""
    bundle = build_bundle(case.evidence, rubric.evidence)
    signals, checks = deterministic_signals(case, rubric)
    if case.judged_by == "deterministic" or renderer is None:
        return Prepared(case, bundle, signals, tuple(checks), None, None)
    prompt = renderer.render(rubric, case, bundle)
    conversation = bound_conversation(case.conversation) if case.conversation else None
    ids = bundle.ids() + (conversation.ids() if conversation else ())
    schema = output_schema(rubric, ids)
    text = output_schema_json(rubric, ids)
    return Prepared(case, bundle, signals, tuple(checks), prompt, schema,
                    (schema, text) if text is not None else None, conversation)


def cited_turn(turn: TurnView) -> CitedEvidence:
    """A cited conversation turn as a result stores it: id, role label, bounded excerpt."""
    return CitedEvidence(id=turn.id, group=CONVERSATION_GROUP, title=turn.label,
                         excerpt=turn.text, refs={"role": turn.role})


def repair_message(errors: Sequence[str], finish_reason: str | None) -> str:
    """The user turn that shows the model what was wrong with its reply."""
    lines = ["Your reply was not a valid verdict:"]
    if finish_reason == "length":
        lines.append("- it was cut off by the length limit; keep rationales short")
    lines += [f"- {e}" for e in errors[:20]]
    lines.append("Reply again with only the corrected JSON object.")
    return "\n".join(lines)


class _BaseResult(TypedDict):
    """The fields every result of a case has, whatever its judge said."""

    id: str
    judged_by: JudgedBy
    checks: tuple[CheckResult, ...]
    evidence_dropped: dict[str, int]
    tags: tuple[str, ...]
    complexity: str | None


def _base_result(facts: CaseFacts) -> _BaseResult:
    return {"id": facts.case_id, "judged_by": facts.judged_by, "checks": facts.checks,
            "evidence_dropped": facts.dropped, "tags": facts.tags,
            "complexity": facts.complexity}


def scored_result(facts: CaseFacts, rubric: Rubric, advisory: Mapping[str, AdvisoryScore] | None,
                  meta: JudgeMeta | None, reason: str | None) -> CaseResult:
    """The result of a case from its facts and the judge's verdict (None: no judge)."""
    score = score_case(rubric, facts.signals, advisory, reason=reason)
    cited = dict.fromkeys(i for a in (advisory or {}).values() for i in a.evidence)
    return CaseResult(
        **_base_result(facts),
        status=score.status,
        overall_score=score.overall_score,
        band=score.band,
        passed=score.passed,
        category_scores=score.category_scores,
        reason=score.reason,
        judge=meta,
        evidence=facts.cite(cited),
    )


def judge_meta(model: str, settings: JudgeSettings, key: str, turns: Sequence[CachedTurn], *,
               cached: bool, sample: int, template_id: str, template_hash: str,
               rubric_hash: str) -> JudgeMeta:
    """The judge metadata of one judgment."""
    t = turn_totals(turns)
    return JudgeMeta(model=model, temperature=settings.temperature,
                     seed=settings.seed_for(sample), sample=sample, template_id=template_id,
                     template_hash=template_hash, rubric_hash=rubric_hash, cache_key=key,
                     cached=cached, repair_turns=t.repair_turns, output_mode=t.output_mode,
                     prompt_tokens=t.prompt_tokens, completion_tokens=t.completion_tokens,
                     cost_usd=t.cost_usd, latency_ms=t.latency_ms,
                     finish_reason=t.finish_reason, model_reported=t.model_reported,
                     system_fingerprint=t.system_fingerprint, cached_tokens=t.cached_tokens,
                     cache_write_tokens=t.cache_write_tokens, score_mode=settings.score_mode)


def build_request(prep: Prepared, model: str, settings: JudgeSettings, sample: int) -> JudgeRequest:
    """The logical request for one judge and one sample (seed + sample)."""
    assert prep.prompt is not None
    return judge_request(prep.prompt, prep.schema, model, settings, sample)


def judge_request(prompt: RenderedPrompt, schema: dict[str, Any] | None, model: str,
                  settings: JudgeSettings, sample: int = 0) -> JudgeRequest:
    """The logical request of a rendered prompt and its rubric's schema, as the settings ask.

    The schema sent is the rubric's, without the case's citation enum under
    ``stable_schema``, and answer-first on a closed scale under ``score_mode = "expected"``.
    """
    if settings.stable_schema and schema is not None:
        schema = stable_schema(schema)
    if settings.score_mode == "expected" and schema is not None:
        schema = expected_schema(schema, SCALE)
    return JudgeRequest(model=model, messages=prompt.messages,
                        temperature=settings.temperature, seed=settings.seed_for(sample),
                        schema=schema,
                        output_mode=settings.output_mode, params=settings.params)



class ForwardingCompleter:
    """A completer around another one: what it reports is the inner client's.

    Subclasses change how ``complete`` reaches the inner client (a limit, a refusal);
    the counters stay the inner client's, so a run's calls are those on the wire.
    """

    def __init__(self, inner: Completer) -> None:
        self.inner = inner

    @property
    def engine(self) -> Mapping[str, Any] | None:
        """The inner client's engine."""
        return self.inner.engine

    @property
    def max_concurrency(self) -> int | None:
        """The inner client's own limit."""
        return self.inner.max_concurrency

    @property
    def attempts(self) -> int:
        """The inner client's requests on the wire."""
        return self.inner.attempts

    @property
    def retries(self) -> int:
        """The inner client's retries."""
        return self.inner.retries

    async def complete(self, request: JudgeRequest,
                       messages: Sequence[Mapping[str, str]] | None = None) -> Completion:
        """The inner client's completion."""
        return await self.inner.complete(request, messages)

@dataclass(frozen=True)
class Exchange(Generic[T]):
    """How one logical judge request ended: a parsed value, or why there is none."""

    key: str
    turns: tuple[CachedTurn, ...]
    cached: bool
    value: T | None
    status: Literal["ok", "unscored", "cache_miss"]
    reason: str | None = None
    written: str | None = None
    """The digest of the entry this exchange stored (None: a hit, or nothing stored)."""


def _provenance(meta: EntryMeta, turns: Sequence[CachedTurn],
                engine: Mapping[str, Any] | None) -> EntryMeta:
    """An entry's meta with its provenance; value metadata, so the key never changes.

    Who wrote it (judgeflow's version; ``createdAt`` is already in ``meta``) and what served
    it (the model's reported id, the provider's system fingerprint, a local engine), where
    known.
    """
    last = turns[-1]
    out: EntryMeta = {**meta, "judgeflow": VERSION}
    if last.model_reported is not None:
        out["modelReported"] = last.model_reported
    if last.system_fingerprint is not None:
        out["systemFingerprint"] = last.system_fingerprint
    if engine:
        out["engine"] = dict(engine)
    return out


async def exchange(request: JudgeRequest, parse: Callable[[str], T], *,
                   cache: JudgmentCache | None, client: Completer | None, max_repairs: int,
                   meta: EntryMeta, schema_json: str | None = None,
                   parse_turn: Callable[[CachedTurn], T] | None = None) -> Exchange[T]:
    """Cache hit, else call, parse, repair at most ``max_repairs`` times, cache when valid.

    The one loop every kind of judgment (rubric verdicts, pairwise verdicts) goes through.
    ``parse`` raises :class:`OutputError` for an invalid reply. ``client`` None is offline:
    a miss is ``cache_miss``, never a call. ``meta`` is stored with a cached entry.
    ``schema_json``: the canonical JSON of ``request.schema`` when the caller has it.
    ``parse_turn``: parses the whole turn instead (its log-probabilities, not just its text).
    """
    def read(turn: CachedTurn) -> T:
        return parse_turn(turn) if parse_turn is not None else parse(turn.text)

    keyed = key_request(request.key_material(),
                        {"responseFormat": schema_json} if schema_json is not None else None)
    key = keyed.key
    found = cache.turns(key) if cache is not None and cache.readable else None
    if found is not None:
        cached_turns = tuple(found)
        try:
            return Exchange(key, cached_turns, True, read(cached_turns[-1]), "ok")
        except OutputError as exc:
            if client is None:
                return Exchange(key, cached_turns, True, None, "unscored",
                                f"cached reply no longer parses: {exc}")
    if client is None:
        return Exchange(key, (), False, None, "cache_miss", f"not in the cache (key {key[:16]})")
    messages: list[Mapping[str, str]] = list(request.messages)
    turns: list[CachedTurn] = []
    error: OutputError | None = None
    for _ in range(1 + max(0, max_repairs)):
        try:
            turn = await client.complete(request, messages)
        except ProviderError as exc:
            return Exchange(key, tuple(turns), False, None, "unscored", f"provider error: {exc}")
        turns.append(turn.cached())
        try:
            value = read(turns[-1])
        except OutputError as exc:
            error = exc
            messages = [*messages, {"role": "assistant", "content": turn.text},
                        {"role": "user", "content": repair_message(exc.errors,
                                                                   turn.finish_reason)}]
            continue
        written = None
        if cache is not None and cache.writable:
            entry, data = seal_entry(keyed, turns, _provenance(meta, turns, client.engine))
            if await cache.put_soon(entry, data=data, vouched=(
                    ("responseFormat",) if "responseFormat" in keyed.pieces else ())):
                written = entry.digest
        return Exchange(key, tuple(turns), False, value, "ok", written=written)
    reason = f"invalid verdict after {len(turns) - 1} repair turn(s): " + "; ".join(
        (error.errors if error else ["unknown"])[:5])
    return Exchange(key, tuple(turns), False, None, "unscored", reason)


async def judge_prepared(prep: Prepared, rubric: Rubric, rubric_hash: str, model: str,
                         settings: JudgeSettings, cache: JudgmentCache | None,
                         client: Completer | None, *, now: str, sample: int = 0,
                         remember: Callable[[Prepared, CaseResult, str | None], None]
                         | None = None,
                         ) -> CaseResult:
    """Judge one prepared case with one model.

    ``client`` None means offline: a miss becomes a ``cache_miss`` result, never a call.
    ``remember`` is told of every result scored from a verdict that is in the cache, with
    the digest of the entry when this judgment wrote it (None for a hit).
    """
    if prep.prompt is None:
        return scored_result(prep, rubric, None, None, None)
    prompt = prep.prompt
    request = build_request(prep, model, settings, sample)
    ids = prep.citable()
    known = prep.schema_json
    done = await exchange(
        request, lambda text: parse_verdict(text, rubric, ids), cache=cache, client=client,
        max_repairs=settings.max_repairs, parse_turn=verdict_reader(rubric, ids, settings),
        meta={"templateId": prompt.template_id, "templateHash": prompt.template_hash,
              "rubricId": rubric.id, "rubricHash": rubric_hash, "createdAt": now},
        schema_json=known[1] if known is not None and known[0] is request.schema else None)
    # Every judgment carries its judge, sample and key, even a miss or a failure before any
    # reply: the store keeps one row per (case, judge, sample), and the key says what to warm.
    meta = judge_meta(model, settings, done.key, done.turns, cached=done.cached, sample=sample,
                      template_id=prompt.template_id, template_hash=prompt.template_hash,
                      rubric_hash=rubric_hash)
    if done.status == "cache_miss":
        return CaseResult(**_base_result(prep), status="cache_miss", reason=done.reason,
                          judge=meta)
    if done.value is None:
        return _unscored(prep, rubric, meta, done.reason or "no verdict")
    result = scored_result(prep, rubric, done.value, meta, None)
    if remember is not None and (done.cached or (cache is not None and cache.writable)):
        remember(prep, result, done.written)  # in the cache: a replay may find it directly
    return result


def verdict_reader(rubric: Rubric, ids: tuple[str, ...], settings: JudgeSettings,
                   ) -> Callable[[CachedTurn], dict[str, AdvisoryScore]] | None:
    """How a turn becomes advisory scores in ``settings.score_mode`` (None: from its text)."""
    if settings.score_mode != "expected":
        return None

    def read(turn: CachedTurn) -> dict[str, AdvisoryScore]:
        text = turn.text
        return expected_verdict(parse_verdict(text, rubric, ids), text, turn.logprobs,
                                rubric)[0]

    return read


def _unscored(prep: Prepared, rubric: Rubric, meta: JudgeMeta | None, reason: str) -> CaseResult:
    # The judge was asked and failed: the case is unscored, whatever the rubric's policy
    # for a missing AI score (that policy is for cases never meant to reach a judge).
    cats = tuple(CategoryScore(category=c.id, deterministic_score=prep.signals.get(c.id),
                               weight=c.weight, rule="unscored") for c in rubric.categories)
    return CaseResult(**_base_result(prep), status="unscored", category_scores=cats,
                      reason=reason, judge=meta)
