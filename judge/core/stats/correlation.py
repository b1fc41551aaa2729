"""The correlation and κ kernels: one numpy implementation of each statistic.

Each kernel takes the cases' values and a matrix of samples (rows of case indices,
:func:`judge.core.stats.intervals.resample_rows`) and computes its statistic on every row at once;
the scalar function is the same kernel on the one row :func:`whole_sample`, so a point
estimate and its bootstrap are one computation. κ, ρ and τ count in integers (held exactly,
in int64 or in float64 below 2^53) and then apply the definition's float formula, operation
for operation, so they equal the definitions to the bit (tests/core/test_agreement_intervals.py,
which also checks them against scikit-learn and scipy, used nowhere else); Pearson's r works
on real values and matches scipy's ``pearsonr`` to 1e-12. What the matrix buys: a compare's
bootstrap measured ~1.55 s of CPU one resample at a time, ~0.05 s so. numpy is imported inside the
functions: importing this module stays light.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, TypeAlias

from .intervals import whole_sample

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from .intervals import Samples, Values

    IntArray: TypeAlias = NDArray[np.int64]
    Ints: TypeAlias = Sequence[int] | IntArray
    Reals: TypeAlias = Sequence[float] | NDArray[np.float64] | IntArray

__all__ = [
    "kappa_rows",
    "kendall_rows",
    "kendall_tau_b",
    "mean_rows",
    "one_value",
    "pearson_r",
    "pearson_rows",
    "quadratic_kappa",
    "spearman_rho",
    "spearman_rows",
]

_BLOCK: Final = 1 << 20
"""Entries of the (a, b)-cell sign matrix τ builds at once, at most (its memory bound)."""
_ONE_THREAD: Final = 1 << 18
"""Multiply-adds of a matrix product that OpenBLAS (numpy's) runs on one thread, about
(its GEMM_MULTITHREAD_THRESHOLD x 65536). τ's products are cut into row blocks under it
while a block keeps 16 rows or more: on small products the threads cost more than they
give (τ-b's 1,000 x 48 x 48 product measured 15 ms threaded under load, 0.15 ms not); the
results are exact
integers either way."""


def one_value(values: Values) -> float | None:
    """The single row's value as a float, None where undefined."""
    (value,) = values.tolist()
    return None if math.isnan(value) else float(value)


def _aligned(a: Ints, b: Ints) -> tuple[IntArray, IntArray]:
    import numpy as np

    x, y = np.asarray(a, dtype=np.int64).reshape(-1), np.asarray(b, dtype=np.int64).reshape(-1)
    if len(x) != len(y):
        raise ValueError(f"unaligned inputs: {len(x)} values against {len(y)}")
    return x, y


def _counts(codes: IntArray, levels: int, samples: Samples) -> IntArray:
    """Per row of ``samples``, how many of its cases have each code ``0..levels-1``."""
    import numpy as np

    rows = len(samples)
    flat = (codes[samples] + levels * np.arange(rows).reshape(-1, 1)).ravel()
    return np.bincount(flat, minlength=rows * levels).reshape(rows, levels)


def _tied_pairs(values: IntArray, samples: Samples) -> IntArray:
    """Per row, the pairs of its cases with equal values."""
    import numpy as np

    levels, codes = np.unique(values, return_inverse=True)
    counts = _counts(codes.reshape(-1), len(levels), samples)
    tied: IntArray = (counts * (counts - 1) // 2).sum(axis=1)
    return tied


def kappa_rows(idx_a: Ints, idx_b: Ints, count: int, samples: Samples) -> Values:
    """Quadratic-weighted κ over band indices ``0..count-1`` on each row of ``samples``.

    The chance term sum_ij rows_i cols_j (i - j)^2 is n(sum x^2 + sum y^2) - 2 sum x sum y:
    the same integer as the double loop over the confusion table, so the same float.
    """
    import numpy as np

    a, b = _aligned(idx_a, idx_b)
    x, y, n = a[samples], b[samples], samples.shape[1]
    if n == 0 or count < 2:
        return np.full(len(samples), math.nan)
    observed = ((x - y) ** 2).sum(axis=1)
    chance = n * ((x * x).sum(axis=1) + (y * y).sum(axis=1)) - 2 * x.sum(axis=1) * y.sum(axis=1)
    expected = chance / n
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa: Values = np.where(expected == 0, math.nan, 1 - observed / expected)
    return kappa


def quadratic_kappa(idx_a: Sequence[int], idx_b: Sequence[int], count: int) -> float | None:
    """Quadratic-weighted Cohen's κ over band indices ``0..count-1`` (sklearn's value)."""
    return one_value(kappa_rows(idx_a, idx_b, count, whole_sample(len(idx_a))))


def _rank_offsets(values: IntArray, samples: Samples) -> IntArray:
    """Per row, 2 x (average rank) - (n + 1) of each of its cases: an integer.

    scipy's ``rankdata``, doubled and centred: a value's average rank is the cases below it
    plus (its count + 1) / 2.
    """
    import numpy as np

    levels, codes = np.unique(values, return_inverse=True)
    codes = codes.reshape(-1)
    counts = _counts(codes, len(levels), samples)
    offsets = 2 * (np.cumsum(counts, axis=1) - counts) + counts - samples.shape[1]
    ranked: IntArray = np.take_along_axis(offsets, codes[samples], axis=1)
    return ranked


def pearson_rows(a: Reals, b: Reals, samples: Samples) -> Values:
    """Pearson's r on each row of ``samples`` (scipy's ``pearsonr`` to 1e-12).

    Centred on each row's mean, then sxy / sqrt(sxx * syy), clipped to [-1, 1] as scipy
    clips; NaN for fewer than two cases or a constant side (no spread: max equals min).
    Integer scores and real values (the system level's means) alike.
    """
    import numpy as np

    x = np.asarray(a, dtype=np.float64).reshape(-1)
    y = np.asarray(b, dtype=np.float64).reshape(-1)
    if len(x) != len(y):
        raise ValueError(f"unaligned inputs: {len(x)} values against {len(y)}")
    if samples.shape[1] < 2:
        return np.full(len(samples), math.nan)
    xs, ys = x[samples], y[samples]
    dx = xs - xs.mean(axis=1, keepdims=True)
    dy = ys - ys.mean(axis=1, keepdims=True)
    flat = (np.ptp(xs, axis=1) == 0) | (np.ptp(ys, axis=1) == 0)
    sxy = (dx * dy).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = sxy / np.sqrt((dx * dx).sum(axis=1) * (dy * dy).sum(axis=1))
    found: Values = np.where(flat, math.nan, np.clip(r, -1.0, 1.0))
    return found


def pearson_r(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Pearson's r (None for fewer than two values or a constant side)."""
    return one_value(pearson_rows(a, b, whole_sample(len(a))))


def spearman_rows(a: Ints, b: Ints, samples: Samples) -> Values:
    """Spearman's ρ (average ranks for ties) on each row of ``samples``.

    The Pearson correlation of the ranks: the mean rank is (n + 1) / 2, so rank - mean is
    half an integer offset and the sums of products are integers / 4, exact in a float
    (as the fsum-based kernel's were); then sxy / sqrt(sxx * syy), that kernel's formula.
    """
    import numpy as np

    x, y = _aligned(a, b)
    if samples.shape[1] < 2:
        return np.full(len(samples), math.nan)
    dx, dy = _rank_offsets(x, samples), _rank_offsets(y, samples)
    sxy = (dx * dy).sum(axis=1) / 4
    sxx, syy = (dx * dx).sum(axis=1) / 4, (dy * dy).sum(axis=1) / 4
    with np.errstate(divide="ignore", invalid="ignore"):
        rho: Values = np.where((sxx == 0) | (syy == 0), math.nan, sxy / np.sqrt(sxx * syy))
    return rho


def spearman_rho(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Spearman's ρ (average ranks for ties), scipy's ``spearmanr``."""
    return one_value(spearman_rows(a, b, whole_sample(len(a))))


def kendall_rows(a: Ints, b: Ints, samples: Samples) -> Values:
    """Kendall's τ-b on each row of ``samples``, scipy's ``kendalltau``.

    (C - D) / sqrt((pairs - ties_a)(pairs - ties_b)) from the pair counts of the pair-by-pair
    definition, so the definition's float. With w the row's count of each distinct (a, b)
    cell and s_pq = sign(a_p - a_q) sign(b_p - b_q), 2(C - D) = w S w' (a matrix product of
    integers, exact in float64): O(rows x cells^2), the sign matrix built a block of columns
    at a time (:data:`_BLOCK`), the rows in blocks (:data:`_ONE_THREAD`).
    """
    import numpy as np

    x, y = _aligned(a, b)
    cells, cell = np.unique(np.stack([x, y], axis=1), axis=0, return_inverse=True)
    weights = _counts(cell.reshape(-1), len(cells), samples).astype(np.float64)
    twice = np.zeros(len(samples))
    size = max(1, len(cells))
    columns = max(1, _BLOCK // size)
    rows = _ONE_THREAD // (size * size)
    rows = rows if rows >= 16 else max(1, len(samples))
    for start in range(0, len(cells), columns):
        block = cells[start:start + columns]
        signs = (np.sign(cells[:, :1] - block[:, 0])
                 * np.sign(cells[:, 1:] - block[:, 1])).astype(np.float64)
        for top in range(0, len(samples), rows):
            part = weights[top:top + rows]
            twice[top:top + rows] += ((part @ signs) * part[:, start:start + columns]).sum(axis=1)
    n = samples.shape[1]
    pairs = n * (n - 1) // 2
    denominator = ((pairs - _tied_pairs(x, samples)).astype(np.float64)
                   * (pairs - _tied_pairs(y, samples)))
    with np.errstate(divide="ignore", invalid="ignore"):
        tau: Values = np.where(denominator <= 0, math.nan, (twice / 2) / np.sqrt(denominator))
    return tau


def kendall_tau_b(a: Sequence[int], b: Sequence[int]) -> float | None:
    """Kendall's τ-b, scipy's ``kendalltau``, from integer pair counts."""
    return one_value(kendall_rows(a, b, whole_sample(len(a))))


def mean_rows(values: Reals, samples: Samples) -> Values:
    """Each row's mean of integer values: the exact sum over the count (fsum's, then /)."""
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        means: Values = np.asarray(values)[samples].sum(axis=1) / samples.shape[1]
    return means
