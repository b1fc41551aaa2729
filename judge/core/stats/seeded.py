"""The one seeded random source: SplitMix64, its uniform draws, shuffles and samples.

Every seeded choice judgeflow makes draws from :class:`SplitMix64`: the bootstrap's resamples
(:mod:`judge.core.stats.intervals`), the noise probe's cases, a canary's sample of cached judgments,
the fixture generator's choices. A generator of our own, not ``random`` (which the core may not
import) nor numpy's: the same seed gives the same draws on every platform and Python or numpy
version, so a seeded interval, probe or fixture is the same everywhere.
(``tests/core/test_seeded.py`` fails when a second generator or shuffle appears.)
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Final, TypeVar

__all__ = ["SplitMix64", "seed_of"]

T = TypeVar("T")
_MASK: Final = (1 << 64) - 1


def seed_of(text: str) -> int:
    """A 64-bit seed from a text (the first 8 bytes of its sha256): a name as a seed."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


class SplitMix64:
    """A tiny, seeded, platform-independent generator (Steele, Lea and Flood 2014)."""

    def __init__(self, seed: int) -> None:
        self._state = seed & _MASK

    def next64(self) -> int:
        """The next 64-bit output."""
        self._state = (self._state + 0x9E3779B97F4A7C15) & _MASK
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """A uniform integer in ``0..n-1`` (rejection sampling: no modulo bias)."""
        if n <= 0:
            raise ValueError("below() needs a positive bound")
        limit = (1 << 64) - ((1 << 64) % n)
        while True:
            value = self.next64()
            if value < limit:
                return value % n

    def draws(self, n: int) -> list[int]:
        """``n`` draws of :meth:`below` ``(n)``, the bound computed once (a bootstrap row)."""
        limit = (1 << 64) - ((1 << 64) % n)
        out: list[int] = []
        draw = self.next64
        while len(out) < n:
            value = draw()
            if value < limit:
                out.append(value % n)
        return out

    def shuffled(self, items: Sequence[T]) -> list[T]:
        """A permutation of ``items`` (Fisher-Yates, from the last position down)."""
        out = list(items)
        for i in range(len(out) - 1, 0, -1):
            j = self.below(i + 1)
            out[i], out[j] = out[j], out[i]
        return out

    def sample(self, items: Sequence[T], k: int) -> list[T]:
        """``k`` distinct elements of ``items`` in drawn order."""
        return self.shuffled(items)[:k]

    def choice(self, items: Sequence[T]) -> T:
        """One element of ``items``."""
        return items[self.below(len(items))]
