"""Block FEC sizing: residual loss of a systematic (n, k) erasure code under independent losses.

A block carries ``k`` source and ``n - k`` repair packets; with an MDS code (e.g. Reed-Solomon) any
``k`` received packets recover the block. A source packet is lost after decoding exactly when it is
lost itself and at least ``n - k`` of the other ``n - 1`` packets are lost too, so with i.i.d. loss
probability ``q`` the residual loss rate of source packets is

    e(n, k, q) = q * P(Binomial(n - 1, q) >= n - k).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import binom

__all__ = ["choose_source_count", "fec_residual_loss"]


def _check(n: int, k: int) -> None:
    if not (isinstance(n, (int, np.integer)) and isinstance(k, (int, np.integer))) or not 1 <= k <= n:
        raise ValueError(f"need integers 1 <= k <= n; got n={n!r}, k={k!r}")


def fec_residual_loss(n: int, k: int, q) -> np.ndarray:
    """Residual loss rate of source packets after decoding a systematic MDS ``(n, k)`` block.

    Parameters
    ----------
    n : int
        Block length (source + repair packets).
    k : int
        Source packets per block.
    q : float or array_like
        Independent per-packet loss probability (drops and late arrivals together).

    Returns
    -------
    numpy.ndarray
        ``q * P(Bin(n-1, q) >= n-k)``.
    """
    _check(n, k)
    q = np.asarray(q, dtype=float)
    if np.any((q < 0) | (q > 1)):
        raise ValueError("loss probability q must lie in [0, 1]")
    return q * binom.sf(n - k - 1, n - 1, q)


def choose_source_count(n: int, q: float, target: float) -> tuple[int, bool]:
    """Largest ``k`` (least redundancy) whose residual loss meets the target.

    Parameters
    ----------
    n : int
        Block length.
    q : float
        Per-packet loss probability.
    target : float
        Target residual loss rate of source packets.

    Returns
    -------
    k : int
        Source packets per block; 1 if even ``k = 1`` misses the target.
    met : bool
        Whether ``k`` meets the target.
    """
    _check(n, 1)
    ks = np.arange(n, 0, -1)
    resid = q * binom.sf(n - ks - 1, n - 1, q)
    ok = np.nonzero(resid <= target)[0]
    if ok.size == 0:
        return 1, False
    return int(ks[ok[0]]), True
