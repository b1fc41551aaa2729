"""Result values: the advisory score the judge gives and the authoritative scores the core computes.

Field names of the persisted payload are the wire's (``deterministicScore``, ``finalScore``...),
so stored rows and ``--json`` output read the same as the contract.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, StrictInt

from ..text.frozen import Frozen, FrozenView

__all__ = [
    "AdvisoryScore",
    "CaseResult",
    "CaseScore",
    "CaseStatus",
    "CategoryScore",
    "CheckResult",
    "CitedEvidence",
    "JudgeLedger",
    "JudgeMeta",
    "JudgedBy",
    "Rule",
    "RunCalibration",
    "RunInfo",
    "RunOwner",
    "RunSettings",
    "RunTotals",
    "Score",
]

Score = Annotated[StrictInt, Field(ge=0, le=100)]
"""An integer score 0..100; floats, bools and strings are rejected, not coerced."""

JudgedBy = Literal["llm", "deterministic"]
"""Who judges a case: a judge model (``llm``), or its deterministic signals alone."""

Rule = Literal["blend", "ai_only", "deterministic_only", "unscored"]
"""Which rule produced a category's final score."""


class AdvisoryScore(Frozen):
    """What the judge said about one category: advisory input to the core, never final."""

    score: Score
    """The judge's 0..100 score (for a levels rubric: the chosen level's value x 100)."""
    level: str | None = None
    """The level the judge named (levels rubrics only)."""
    rationale: str = ""
    """The judge's reasons, bounded."""
    evidence: tuple[str, ...] = ()
    """Evidence IDs the judge cited; each is in the case's bundle."""


class CategoryScore(Frozen):
    """The persisted per-category payload, plus the rule that produced the final."""

    category: str
    deterministic_score: Score | None = Field(None, alias="deterministicScore")
    ai_score: Score | None = Field(None, alias="aiScore")
    final_score: Score | None = Field(None, alias="finalScore")
    """Authoritative: computed by the core from the two inputs above."""
    weight: float = Field(gt=0, le=1)
    band: str | None = None
    rationale: str = ""
    evidence: tuple[str, ...] = ()
    """IDs of the evidence items the judge cited for this category."""
    rule: Rule = "blend"
    level: str | None = None
    spread: int | None = Field(default=None, ge=0, le=100)
    """On a sample aggregate: max - min of the K samples' AI scores (the judge's noise)."""
    final_spread: int | None = Field(default=None, ge=0, le=100, alias="finalSpread")
    """On a sample aggregate: max - min of the K samples' final scores."""


class CaseScore(Frozen):
    """The authoritative score of one case under one rubric."""

    status: Literal["scored", "unscored"]
    overall_score: Score | None = Field(None, alias="overallScore")
    band: str | None = None
    passed: bool | None = None
    category_scores: tuple[CategoryScore, ...] = Field((), alias="categoryScores")
    reason: str | None = None
    """Why the case is unscored, when it is."""


CaseStatus = Literal["scored", "unscored", "cache_miss"]
"""``unscored``: the judge or the inputs could not give a score (reason kept);
``cache_miss``: offline replay had no cached judgment for the case."""


class CheckResult(Frozen):
    """The outcome of one deterministic check."""

    type: str
    value: str | float
    category: str | None
    passed: bool
    detail: str


class CitedEvidence(Frozen):
    """A cited evidence item as stored: its references and bounded excerpt, never a raw blob."""

    id: str
    group: str
    title: str = ""
    excerpt: str = ""
    refs: dict[str, Any] = Field(default_factory=dict)


class JudgeMeta(Frozen):
    """How a case was judged: enough to reproduce the call and to price it.

    Latency, tokens and cost are those of the original call, kept in the cache entry, so a
    replay reports the same numbers; ``cached`` says whether this run paid for the call.
    """

    model: str
    output_mode: str | None = Field(None, alias="outputMode")
    """Structured-output mode used: ``json_schema``, ``json_object`` or ``prompt``."""
    temperature: float
    seed: int | None
    sample: int = 0
    """Which of ``--samples K`` this judgment is (0 for the first; -1 for their aggregate)."""
    template_id: str = Field(alias="templateId")
    template_hash: str = Field(alias="templateHash")
    rubric_hash: str = Field(alias="rubricHash")
    cache_key: str = Field(alias="cacheKey")
    cached: bool
    repair_turns: int = Field(0, alias="repairTurns")
    prompt_tokens: int | None = Field(None, alias="promptTokens")
    completion_tokens: int | None = Field(None, alias="completionTokens")
    cost_usd: float | None = Field(None, alias="costUsd")
    """None when the price is unknown, never a made-up zero."""
    latency_ms: float | None = Field(None, alias="latencyMs")
    finish_reason: str | None = Field(None, alias="finishReason")
    model_reported: str | None = Field(None, alias="modelReported")
    system_fingerprint: str | None = Field(None, alias="systemFingerprint")
    """The provider's ``system_fingerprint`` of the last turn, when it gave one."""
    cached_tokens: int | None = Field(None, alias="cachedTokens")
    """Of ``promptTokens``, those the provider read from its prompt cache (billed at its
    cached rate); None when any turn's provider did not say."""
    cache_write_tokens: int | None = Field(None, alias="cacheWriteTokens")
    """Of ``promptTokens``, those written to the provider's prompt cache (Anthropic)."""
    aggregate: str | None = None
    """None for one judgment. On a result that combines others, how: ``median`` or ``mean``.
    A sample aggregate has the judge's model and sample -1 (median of its K samples); a panel
    has model ``panel:<method>`` and sample 0. Neither has a cache entry (``cacheKey`` "");
    tokens and cost are the members' sums, ``cached`` is true when every member was."""
    members: tuple[str, ...] = ()
    """What an aggregate combined: ``model#sample`` of each member judgment."""
    score_mode: str | None = Field(None, alias="scoreMode")
    """How the AI scores were read: ``direct`` (the answer written) or ``expected`` (the
    probability-weighted value over the allowed answers); None on records made before it."""


class CaseResult(Frozen):
    """Everything a run keeps about one case under one judge."""

    id: str
    status: CaseStatus
    overall_score: Score | None = Field(None, alias="overallScore")
    band: str | None = None
    passed: bool | None = None
    category_scores: tuple[CategoryScore, ...] = Field((), alias="categoryScores")
    reason: str | None = None
    judged_by: JudgedBy = Field("llm", alias="judgedBy")
    judge: JudgeMeta | None = None
    checks: tuple[CheckResult, ...] = ()
    evidence: tuple[CitedEvidence, ...] = ()
    """The cited items, with references and bounded excerpts."""
    evidence_dropped: dict[str, int] = Field(default_factory=dict, alias="evidenceDropped")
    """Items each group's cap left out of the prompt."""
    tags: tuple[str, ...] = ()
    complexity: str | None = None
    spread: int | None = Field(default=None, ge=0, le=100)
    """Measured judge noise: on a sample aggregate, max - min of the K samples' overall
    scores; on a panel, the largest of its members' spreads. None otherwise."""


class JudgeLedger(Frozen):
    """One judge's calls in a run, itemised so that they add up.

    ``calls = requests + repairTurns + sum(retries.values()) + fallbacks``; a judgment
    reused from the cache costs no call and is counted in ``cacheHits``.
    """

    model: str
    judgments: int = 0
    """Judgments of this judge the run needed (cases x samples)."""
    cache_hits: int = Field(0, alias="cacheHits")
    """Of those, reused from the cache: no call."""
    requests: int = 0
    """First requests of judgments asked of the model this run (one per judgment)."""
    repair_turns: int = Field(0, alias="repairTurns")
    """Follow-up requests showing the model its invalid reply (at most ``max_repairs`` each)."""
    retries: dict[str, int] = {}
    """Requests sent again after a transport fault, by reason: ``429``, ``5xx``, ``timeout``,
    ``connection``, ``other``."""
    fallbacks: int = 0
    """Requests sent again in another structured-output mode after the server rejected one."""
    calls: int = 0
    """Requests on the wire: the sum of the four counts above."""
    prompt_tokens: int = Field(0, alias="promptTokens")
    completion_tokens: int = Field(0, alias="completionTokens")
    cached_tokens: int = Field(0, alias="cachedTokens")
    """Of ``promptTokens``, those read from the provider's prompt cache (its cached rate)."""
    cache_write_tokens: int = Field(0, alias="cacheWriteTokens")
    """Of ``promptTokens``, those written to the provider's prompt cache (Anthropic)."""
    cost_usd: float | None = Field(None, alias="costUsd")
    """None when any paid call's price is unknown, never a made-up zero."""


class RunTotals(Frozen):
    """What a run did and spent."""

    cases: int = 0
    scored: int = 0
    unscored: int = 0
    cache_misses: int = Field(0, alias="cacheMisses")
    cache_hits: int = Field(0, alias="cacheHits")
    calls: int = 0
    """Model calls this run paid for (repair turns and retries included)."""
    prompt_tokens: int = Field(0, alias="promptTokens")
    completion_tokens: int = Field(0, alias="completionTokens")
    cached_tokens: int = Field(0, alias="cachedTokens")
    """Of ``promptTokens``, those read from the provider's prompt cache (every judge's)."""
    cache_write_tokens: int = Field(0, alias="cacheWriteTokens")
    """Of ``promptTokens``, those written to the provider's prompt cache (Anthropic)."""
    cost_usd: float | None = Field(None, alias="costUsd")
    """None when any paid call's price is unknown."""
    wall_seconds: float = Field(0.0, alias="wallSeconds")
    judgments: int = 0
    """Judgments the run needed (judged cases x judges x samples); aggregates not counted."""
    judged_anew: int = Field(0, alias="judgedAnew")
    """Judgments not found in the cache and asked of a model this run."""
    saved_calls: int = Field(0, alias="savedCalls")
    """Model calls the cache spared: one per reused judgment plus its stored repair turns."""
    index_hits: int = Field(0, alias="indexHits")
    """Reused judgments found through the replay index, with no prompt rendered."""
    batch_calls: int = Field(0, alias="batchCalls")
    """Of the judgments asked anew, those answered by a provider batch job (billed at the
    batch rate; their tokens and cost are in the totals above, not in ``calls``)."""
    batch_cost_usd: float | None = Field(0.0, alias="batchCostUsd")
    """What the batch-answered judgments cost at the batch rate; None when unknown."""
    ledger: dict[str, JudgeLedger] = {}
    """Per judge model: its calls itemised (requests, repair turns, retries by reason, mode
    fallbacks), cache hits, tokens and cost. Empty for a run stored before it existed."""


class RunOwner(Frozen):
    """The process that runs a run: a run left "running" by a dead owner is abandoned."""

    host: str
    pid: int


def _is_none(value: object) -> bool:
    return value is None


def _given(alias: str | None = None) -> Any:
    """A setting written only when given: None (the default) is left out of the JSON."""
    return Field(None, alias=alias, exclude_if=_is_none)


class RunCalibration(FrozenView):
    """The calibration a re-scored run applied: its file and the digest of what it held."""

    file: str | None = None
    sha256: str


class RunSettings(FrozenView):
    """What a run was judged with, and what kind of run it is: never keys or base URLs.

    Written and read by name across the application (a shard's tag by ``judge run``, read by
    the store and the group's gate; ``rescoredFrom`` by ``judge rescore``, read by the diff).
    A field not given (None) is not written, and names this version does not know are kept
    as they are: a stored run's JSON reads back, and is copied, unchanged.
    """

    model_config = ConfigDict(frozen=True, extra="allow", validate_by_name=True,
                              validate_by_alias=True, serialize_by_alias=True)

    cache_mode: str | None = _given("cacheMode")
    concurrency: int | None = _given()
    output_mode: str | None = _given("outputMode")
    max_repairs: int | None = _given("maxRepairs")
    max_tokens: int | None = _given("maxTokens")
    cases: int | None = _given()
    """Cases the run selected."""
    llm: bool | None = _given()
    """Whether cases marked ``judged_by: llm`` went to a judge."""
    stable_schema: bool | None = _given("stableSchema")
    """Written only when on (the salts and keys of every run made without it stay)."""
    group: str | None = _given()
    """The group a shard's run belongs to (``--group``)."""
    shard: str | None = _given()
    """This run's shard, ``i/n`` (``--shard``)."""
    shards: int | None = _given()
    """On a group seen as one run: how many shards it has."""
    runs: tuple[str, ...] | None = _given()
    """On a group seen as one run: the shards' runs."""
    rescored_from: str | None = _given("rescoredFrom")
    """The stored run a re-scored run was computed from (no model call)."""
    calls: int | None = _given()
    calibration: RunCalibration | None = _given()
    kind: str | None = _given()
    """``canary`` for a drift canary's run."""
    canary_of: str | None = _given("canaryOf")
    sample: int | None = _given()
    sample_seed: int | None = _given("sampleSeed")
    canary: dict[str, Any] | None = _given()
    """A canary's verdict, as its drift summary wrote it."""
    sample_aggregate: str | None = _given("sampleAggregate")
    """How a judge's samples made its headline (``mean``, ``median``): with two or more."""
    imported: bool | None = _given()
    """A run of judgments recorded elsewhere (``judge judges import``), never served live."""
    source: str | None = _given()
    """An imported run's file name."""
    source_sha256: str | None = _given("sourceSha256")
    """An imported run's file digest."""
    scale: str | None = _given()
    """An imported run's score scale (``LOW:HIGH``, mapped onto 0..100)."""


class RunInfo(Frozen):
    """A run's identity, settings and totals: one suite, one rubric, one or more judges."""

    version: Literal[1] = 1
    id: str
    suite: str
    suite_path: str | None = Field(None, alias="suitePath")
    rubric: str
    rubric_hash: str = Field(alias="rubricHash")
    models: tuple[str, ...]
    """Judge models; several make a panel."""
    seed: int | None
    temperature: float
    samples: int = 1
    panel: str | None = None
    """With several judges: how their AI scores combine (``median``/``mean``) into the panel
    result, model ``panel:<panel>``, which is the run's headline."""
    template_id: str = Field(alias="templateId")
    template_hash: str = Field(alias="templateHash")
    created_at: str = Field(alias="createdAt")
    """ISO 8601 UTC, passed in by the caller (the core has no clock)."""
    status: Literal["running", "complete", "interrupted", "failed", "abandoned"] = "running"
    settings: RunSettings = Field(default_factory=RunSettings)
    """Cache mode, concurrency, filters, output mode...: never keys or base URLs."""
    owner: RunOwner | None = None
    """Host and pid of the process judging it, while it runs."""
    totals: RunTotals = RunTotals()
