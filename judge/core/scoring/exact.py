"""Exact arithmetic for scores: decimals read as written, halves rounded up, in integers.

The reference implementation rounds with TypeScript's ``Math.round`` (76.5 → 77), and a
weight written 0.45 is the decimal 9/20, not the nearest binary float: every score is
computed over :class:`~fractions.Fraction` and rounded here, once. Python's ``round()`` is
banker's rounding (76.5 → 76) and must never be used for scores.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

__all__ = ["HALF", "exact", "round_half_up"]

HALF = Fraction(1, 2)


@functools.lru_cache(maxsize=4096)
def _exact_float(value: float) -> Fraction:
    return Fraction(repr(value))


def exact(value: float | int) -> Fraction:
    """The decimal a person wrote (0.45) as the exact fraction 9/20, never 0.45000000000000001."""
    # Cached: a run scores the same few weights and blends thousands of times.
    return _exact_float(value) if isinstance(value, float) else Fraction(value)


def round_half_up(value: Fraction | int) -> int:
    """Round to the nearest integer, halves away from zero for positives (76.5 -> 77)."""
    if type(value) is int:
        return value
    return math.floor(value + HALF)
