"""The call ledger: per judge, what a run asked of the model and what the cache spared.

The counts come from two places that each know one half: the results (judgments, cache
hits, tokens — of the prompt tokens, those the provider's prompt cache served or stored —
and cost) and the model client (requests, repair turns, retries by reason, mode
fallbacks — what went on the wire). :func:`build_ledger` joins them into
:class:`~judge.core.formats.models.JudgeLedger` values whose ``calls`` is the sum of its parts, so
the summary's "model calls" is always explained.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..formats.models import CaseResult, JudgeLedger
from .usage import ZERO, Usage

__all__ = ["RETRY_REASONS", "CallCounts", "JudgeTally", "build_ledger", "retry_reason",
           "tally"]

RETRY_REASONS = ("429", "5xx", "timeout", "connection", "other")
"""Why a request was sent again, in the order a summary lists them."""


@dataclass
class CallCounts:
    """What a model client sent: kept by the client, read once when the run ends."""

    requests: int = 0
    repair_turns: int = 0
    fallbacks: int = 0
    retries: dict[str, int] = field(default_factory=dict)

    def retried(self, reason: str) -> None:
        """Count one request sent again for ``reason`` (one of :data:`RETRY_REASONS`)."""
        self.retries[reason] = self.retries.get(reason, 0) + 1


@dataclass
class JudgeTally:
    """What one judge's results say, counted as they arrive."""

    cache_hits: int = 0
    usage: Usage = ZERO
    """The judgments and what the ones asked of a model used (cache hits add no usage)."""


def retry_reason(status: int | None, error_name: str) -> str:
    """The ledger's reason for a retried fault: its HTTP status, else the error's kind."""
    lowered = error_name.lower()
    if "timeout" in lowered or status == 408:
        return "timeout"
    if "connect" in lowered:  # litellm's APIConnectionError carries a made-up 500
        return "connection"
    if status == 429:
        return "429"
    if status is not None and status >= 500:
        return "5xx"
    return "other"


def tally(tallies: dict[str, JudgeTally], result: CaseResult) -> None:
    """Count one finished judgment under its judge; aggregates (panel, median) are not calls."""
    meta = result.judge
    if meta is None or meta.aggregate is not None or result.judged_by != "llm":
        return
    t = tallies.setdefault(meta.model, JudgeTally())
    if meta.cached:
        t.cache_hits += 1
        t.usage += Usage(judgments=1)
    elif result.status == "cache_miss":  # nothing was asked: no usage, and no unknown cost
        t.usage += Usage(judgments=1)
    else:
        t.usage += Usage.of(meta, cached=meta.cached_tokens, written=meta.cache_write_tokens)


def build_ledger(tallies: Mapping[str, JudgeTally],
                 clients: Mapping[str, Any] | None) -> dict[str, JudgeLedger]:
    """One :class:`JudgeLedger` per judge that had a judgment or a client."""
    ledger: dict[str, JudgeLedger] = {}
    for model in sorted({*tallies, *(clients or {})}):
        t = tallies.get(model, JudgeTally())
        counts = getattr((clients or {}).get(model), "ledger", None)
        if not isinstance(counts, CallCounts):
            counts = CallCounts()
        retries = {r: counts.retries[r] for r in RETRY_REASONS if counts.retries.get(r)}
        calls = counts.requests + counts.repair_turns + sum(retries.values()) + counts.fallbacks
        u = t.usage
        cost = u.cost_usd() if u.cost is not None or calls else 0.0
        ledger[model] = JudgeLedger(
            model=model, judgments=u.judgments, cache_hits=t.cache_hits,
            requests=counts.requests, repair_turns=counts.repair_turns, retries=retries,
            fallbacks=counts.fallbacks, calls=calls, prompt_tokens=u.prompt_tokens,
            completion_tokens=u.completion_tokens, cached_tokens=u.cached_tokens,
            cache_write_tokens=u.cache_write_tokens, cost_usd=cost)
    return ledger
