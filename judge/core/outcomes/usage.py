"""Usage of judgments: tokens and cost as one value summed with ``+``.

Every count of what judgments used — a run's progress and totals, each judge's ledger, the
judgments a provider batch answered, pairwise runs, the pytest plugin's session — is a
:class:`Usage`, so the rules live here once: costs are summed exactly (each reported cost is
the decimal the provider gave, read as a :class:`~fractions.Fraction`), and one unknown cost
makes the sum unknown (``None``), never a silent undercount.

Which judgments count is the caller's decision (what this run *spent* skips cache hits; what
a summary's verdicts *cost* includes the original cost of cached ones); how they add up is not.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Protocol

__all__ = ["SMALLEST_COST", "ZERO", "Metered", "Usage", "cost_fraction", "cost_text"]


class Metered(Protocol):
    """What a judgment's metadata reports about its call (``JudgeMeta``, a pairwise verdict)."""

    @property
    def prompt_tokens(self) -> int | None:
        """Prompt tokens of the call, if reported."""

    @property
    def completion_tokens(self) -> int | None:
        """Completion tokens of the call, if reported."""

    @property
    def cost_usd(self) -> float | None:
        """The call's cost in USD, if known."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Judgments counted, their tokens, and their cost (``None``: some cost is unknown)."""

    judgments: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    """Of ``prompt_tokens``, those the provider read from its prompt cache."""
    cache_write_tokens: int = 0
    """Of ``prompt_tokens``, those written to the provider's prompt cache (Anthropic)."""
    cost: Fraction | None = Fraction(0)

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost is None or other.cost is None else self.cost + other.cost
        return Usage(self.judgments + other.judgments,
                     self.prompt_tokens + other.prompt_tokens,
                     self.completion_tokens + other.completion_tokens,
                     self.cached_tokens + other.cached_tokens,
                     self.cache_write_tokens + other.cache_write_tokens, cost)

    @classmethod
    def of(cls, meta: Metered, *, cached: int | None = None,
           written: int | None = None) -> Usage:
        """One judgment's usage as its metadata reports it (missing counts are 0)."""
        cost = meta.cost_usd
        return cls(1, meta.prompt_tokens or 0, meta.completion_tokens or 0, cached or 0,
                   written or 0, None if cost is None else cost_fraction(cost))

    @classmethod
    def from_cost(cls, cost_usd: float | None) -> Usage:
        """A cost alone (a stored total), as a usage of no judgment."""
        return cls(cost=None if cost_usd is None else cost_fraction(cost_usd))

    @property
    def tokens(self) -> int:
        """Prompt and completion tokens together."""
        return self.prompt_tokens + self.completion_tokens

    def cost_usd(self, digits: int | None = 10) -> float | None:
        """The cost as the wire's float (rounded to ``digits`` decimals), or None if unknown."""
        if self.cost is None:
            return None
        return float(self.cost) if digits is None else round(float(self.cost), digits)


SMALLEST_COST = 0.00005
"""Below this a cost rounds to ``$0.0000`` at four decimals."""


def cost_text(cost_usd: float | None, calls: int) -> str:
    """A cost for people, in words where a figure would mislead; every door words it so.

    ``no paid calls`` when no call was made or every call's price is known to be zero;
    ``cost unknown`` when a call's price is unknown (a self-hosted or unpriced model); else
    dollars, ``under $0.0001`` rather than a ``$0.0000`` that reads as free.
    """
    if calls == 0 or cost_usd == 0:
        return "no paid calls"
    if cost_usd is None:
        return "cost unknown"
    return "under $0.0001" if cost_usd < SMALLEST_COST else f"${cost_usd:.4f}"


def cost_fraction(cost_usd: float) -> Fraction:
    """A reported cost as the decimal it was written as (0.0018 is 18/10000, not a binary float)."""
    return Fraction(repr(cost_usd))


ZERO = Usage()
"""Nothing used: the start of every sum."""
