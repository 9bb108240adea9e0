"""Confidence intervals used across pathpool: one t-interval for means over runs, one binomial
interval for shares of sampled points.

Examples
--------
>>> [round(v, 4) for v in t_interval([1.0, 2.0, 3.0])[:3]]
[2.0, -0.4841, 4.4841]
>>> [round(v, 4) for v in binomial_interval(45, 500)]
[0.0679, 0.1183]
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["binomial_interval", "t_half_width", "t_interval"]


def t_half_width(x: np.ndarray, confidence: float = 0.95) -> float:
    """Half-width ``t_{n-1} s / sqrt(n)`` of the Student-t interval of the mean of ``x``
    (NaN with fewer than two values).

    Examples
    --------
    >>> round(t_half_width(np.array([1.0, 2.0, 3.0])), 4)
    2.4841
    """
    from scipy import stats

    x = np.asarray(x, dtype=float)
    if x.size < 2:
        return math.nan
    return float(stats.t.ppf(0.5 + confidence / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))


def t_interval(values: Sequence[float | None], confidence: float = 0.95) -> tuple[float, float, float, int]:
    """Mean and Student-t confidence interval of the mean: ``(mean, lo, hi, n)``.

    ``None`` and NaN are dropped first. ``lo`` and ``hi`` are NaN with fewer than two values;
    everything is NaN (and ``n`` 0) with none.

    Examples
    --------
    >>> t_interval([5.0])
    (5.0, nan, nan, 1)
    """
    x = np.asarray([v for v in values if not (v is None or math.isnan(v))], dtype=float)
    n = x.size
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    m = float(x.mean())
    if n == 1:
        return m, math.nan, math.nan, 1
    half = t_half_width(x, confidence)
    return m, m - half, m + half, n


def binomial_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a share ``k / n`` (Wilson 1927, JASA 22:209, eq. for the
    "probable limits"): good coverage also near 0 and 1, unlike the normal approximation.

    Raises
    ------
    ValueError
        ``n < 1`` or ``k`` outside ``0..n``.

    Examples
    --------
    >>> binomial_interval(0, 10)[0]
    0.0
    """
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"binomial_interval: need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    from scipy import stats

    z = float(stats.norm.ppf(0.5 + confidence / 2))
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)
