"""A judge's turns as the cache keeps them: typed views over their JSON objects, and their totals.

A turn is one completion as received (the first call, then any repair turns), stored in a
cache entry's ``turns`` as a JSON object under the wire's names (:func:`turn_json` writes
them, for :meth:`judge.llm.client.Completion.cached`). Every reader goes through
:class:`CachedTurn`, a typed view over that object.

Decisions:

- A view, not a model: validating a stored turn into a frozen model would re-write valid
  turns (``3`` as ``3.0``: another byte, another digest), refuse fields a later version adds
  that replay now, and cost ~10 µs a turn on the replay path (a tenth of a case's 100 µs at
  10,000 cases a second). The view keeps the object as it is and reads its fields by the
  names written here; what makes a turn valid (an object whose ``text`` is a string) is
  :func:`judge.cache.entry.turns_ok`, checked on every read.
- A number field holding something else reads as None (unknown), never as a score input.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

__all__ = ["CachedTurn", "TurnTotals", "turn_json", "turn_totals"]


def _number(value: Any) -> int | float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class CachedTurn:
    """One stored turn read through typed fields; ``data`` is its JSON object, as stored."""

    data: Mapping[str, Any]

    @property
    def text(self) -> str:
        """The reply as received (a string in every turn a cache read lets through)."""
        return str(self.data["text"])

    @property
    def finish_reason(self) -> str | None:
        """Why generation stopped (``stop``, ``length``…), as the provider said."""
        return _text(self.data.get("finishReason"))

    @property
    def model_reported(self) -> str | None:
        """The model id the provider reported."""
        return _text(self.data.get("modelReported"))

    @property
    def prompt_tokens(self) -> int | float | None:
        """Prompt tokens billed (None: not reported)."""
        return _number(self.data.get("promptTokens"))

    @property
    def completion_tokens(self) -> int | float | None:
        """Completion tokens billed (None: not reported)."""
        return _number(self.data.get("completionTokens"))

    @property
    def cost_usd(self) -> int | float | None:
        """The call's price (None: unknown, never a made-up zero)."""
        return _number(self.data.get("costUsd"))

    @property
    def latency_ms(self) -> int | float | None:
        """Wall time of the call."""
        return _number(self.data.get("latencyMs"))

    @property
    def output_mode(self) -> str | None:
        """The structured-output mode the call used."""
        return _text(self.data.get("outputMode"))

    @property
    def system_fingerprint(self) -> str | None:
        """The provider's ``system_fingerprint``, when it sent one."""
        return _text(self.data.get("systemFingerprint"))

    @property
    def cached_tokens(self) -> int | None:
        """Of the prompt tokens, those read from the provider's prompt cache."""
        return _count(self.data.get("cachedTokens"))

    @property
    def cache_write_tokens(self) -> int | None:
        """Of the prompt tokens, those written to the provider's prompt cache."""
        return _count(self.data.get("cacheWriteTokens"))

    @property
    def logprobs(self) -> Sequence[Mapping[str, Any]] | None:
        """The reply's tokens with their top alternatives, when they were asked for."""
        value = self.data.get("logprobs")
        return value if isinstance(value, list) else None


def turn_json(*, text: str, finish_reason: str | None, model_reported: str | None,
              prompt_tokens: int | None, completion_tokens: int | None,
              cost_usd: float | None, latency_ms: float, output_mode: str,
              system_fingerprint: str | None = None, cached_tokens: int | None = None,
              cache_write_tokens: int | None = None,
              logprobs: Sequence[Mapping[str, Any]] | None = None) -> CachedTurn:
    """A turn as the cache stores it: the optional fields only when the provider sent them."""
    out: dict[str, Any] = {
        "text": text, "finishReason": finish_reason, "modelReported": model_reported,
        "promptTokens": prompt_tokens, "completionTokens": completion_tokens,
        "costUsd": cost_usd, "latencyMs": latency_ms, "outputMode": output_mode,
    }
    optional = {"systemFingerprint": system_fingerprint, "cachedTokens": cached_tokens,
                "cacheWriteTokens": cache_write_tokens,
                "logprobs": None if logprobs is None else [dict(t) for t in logprobs]}
    out.update((k, v) for k, v in optional.items() if v is not None)
    return CachedTurn(out)


class TurnTotals(NamedTuple):
    """Tokens, cost and latency over an exchange's turns, and what its last turn said.

    A sum is None when any turn lacks its part (an unknown price is never a zero). A named
    tuple: made once per judgment on the replay path, where a frozen dataclass's
    construction measured a microsecond more.
    """

    repair_turns: int = 0
    output_mode: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None
    finish_reason: str | None = None
    model_reported: str | None = None
    system_fingerprint: str | None = None
    cached_tokens: int | None = None
    cache_write_tokens: int | None = None


def _sum(values: Sequence[int | float | None]) -> int | float | None:
    known = [v for v in values if v is not None]
    return sum(known) if values and len(known) == len(values) else None


def _rounded(value: int | float | None, digits: int) -> float | None:
    return None if value is None else round(float(value), digits)


def turn_totals(turns: Sequence[CachedTurn]) -> TurnTotals:
    """The totals of ``turns`` (all None, no repair, for no turns)."""
    if not turns:
        return TurnTotals()
    last = turns[-1]
    prompt = _sum([t.prompt_tokens for t in turns])
    completion = _sum([t.completion_tokens for t in turns])
    cached = _sum([t.cached_tokens for t in turns])
    written = _sum([t.cache_write_tokens for t in turns])
    return TurnTotals(
        repair_turns=len(turns) - 1, output_mode=last.output_mode,
        prompt_tokens=None if prompt is None else int(prompt),
        completion_tokens=None if completion is None else int(completion),
        cost_usd=_rounded(_sum([t.cost_usd for t in turns]), 10),
        latency_ms=_rounded(_sum([t.latency_ms for t in turns]), 3),
        finish_reason=last.finish_reason, model_reported=last.model_reported,
        system_fingerprint=last.system_fingerprint,
        cached_tokens=None if cached is None else int(cached),
        cache_write_tokens=None if written is None else int(written))
