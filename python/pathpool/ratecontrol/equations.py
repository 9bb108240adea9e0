"""Equation-based rates: single-path TCP and the MPTCP (LIA) equilibrium of Pluntke & Rio 2011, Section 2.

Seed 003 (Pluntke & Rio, CoNEXT student workshop 2011) gives, for path ``r`` with loss rate
``p_r`` and round-trip time ``RTT_r``,

* single-path TCP:  ``x_r^TCP = sqrt(2) / (RTT_r sqrt(p_r))``                       (Section 2)
* MPTCP:            ``x_r = sqrt(2a) (1/p_r) / (RTT_r sqrt(sum_s 1/p_s))``           (Section 2)
  with ``a = sum_r x_r RTT_r * max_r (x_r / RTT_r) / (sum_r x_r)^2``.

The MPTCP line is the fluid equilibrium of the uncapped "Max"/LIA increase ``a / w_total`` per ACK
and ``w_r / 2`` per loss (Wischik et al., NSDI 2011), with ``a`` written in rates (``w_r = x_r RTT_r``):
balancing ``a / W = p_r w_r / 2`` gives ``w_r = 2a / (p_r W)`` and ``W = sqrt(2a sum_s 1/p_s)``.

Two readings are implemented (``cap`` argument of :func:`mptcp_rates`):

``cap=False`` ("printed")
    the formula exactly as printed. The fixed point in ``a`` has a closed form because ``a`` is
    invariant to scaling all ``x_r`` by one factor. Seed 003's example gives 83.9, 83.9, 55.9 packets/s.
``cap=True`` ("lia", default)
    RFC 6356 LIA, whose per-ACK increase is ``min(a / W, 1 / w_r)``: no subflow is more aggressive
    than single-path TCP on its own path. The equilibrium window is then
    ``w_r = min(k / p_r, sqrt(2 / p_r))`` with the scalar ``k = 2a / W``, and ``a`` is the same
    expression evaluated at these windows. This reproduces Pluntke & Rio 2011's example exactly:
    88.2, 88.2, 47.1 packets/s (path 3 sits at its TCP rate ``sqrt(200)/0.3 = 47.14``).

Both readings drop the ``(1 - p)`` factor of the ACK rate, as Pluntke & Rio 2011's TCP formula does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

__all__ = ["TCP_FORMULAS", "MptcpRates", "lia_alpha", "mptcp_rates", "tcp_rate"]

#: Constant ``C`` of ``x = sqrt(C / p) / RTT`` for each single-path formula. ``"sqrt2"`` is Pluntke & Rio 2011's
#: ``sqrt(2)/(RTT sqrt(p))`` (Reno with a per-packet loss model); ``"sqrt3/2"`` is the Mathis et al.
#: constant with delayed-ACK-free periodic loss, ``sqrt(3/(2p))/RTT``, kept for comparison only.
TCP_FORMULAS: dict[str, float] = {"sqrt2": 2.0, "sqrt3/2": 1.5}


def _as_paths(p, rtt) -> tuple[np.ndarray, np.ndarray]:
    p = np.atleast_1d(np.asarray(p, dtype=float))
    rtt = np.atleast_1d(np.asarray(rtt, dtype=float))
    if p.shape != rtt.shape or p.ndim != 1 or p.size == 0:
        raise ValueError(f"p and rtt must be 1-D arrays of equal, non-zero length; got {p.shape} and {rtt.shape}")
    if not np.all((p > 0) & (p < 1)):
        raise ValueError(f"loss rates p must lie in (0, 1); got {p.tolist()}")
    if not np.all(np.isfinite(rtt) & (rtt > 0)):
        raise ValueError(f"RTTs must be positive and finite (seconds); got {rtt.tolist()}")
    return p, rtt


def tcp_rate(p, rtt, formula: str = "sqrt2") -> np.ndarray:
    """Single-path TCP rate in packets per second.

    Parameters
    ----------
    p : float or array_like
        Loss rate(s) in (0, 1).
    rtt : float or array_like
        Round-trip time(s) in seconds.
    formula : {"sqrt2", "sqrt3/2"}
        ``"sqrt2"`` is Pluntke & Rio 2011, Section 2: ``x = sqrt(2) / (RTT sqrt(p))``; it is the one that
        reproduces Pluntke & Rio 2011's example. ``"sqrt3/2"`` is ``sqrt(3/(2p)) / RTT`` (Mathis et al. 1997).

    Returns
    -------
    numpy.ndarray
        Rates, one per path.
    """
    if formula not in TCP_FORMULAS:
        raise ValueError(f"unknown TCP formula {formula!r}; allowed: {sorted(TCP_FORMULAS)}")
    p, rtt = _as_paths(p, rtt)
    return np.sqrt(TCP_FORMULAS[formula] / p) / rtt


def lia_alpha(x, rtt) -> float:
    """LIA's coupling term of Pluntke & Rio 2011 in rates: ``a = sum x_r RTT_r * max(x_r/RTT_r) / (sum x_r)^2``.

    Parameters
    ----------
    x : array_like
        Subflow rates (packets/s).
    rtt : array_like
        Round-trip times (s).

    Returns
    -------
    float
        The coupling term ``a`` (RFC 6356's alpha with ``w_r = x_r RTT_r``).
    """
    x = np.asarray(x, dtype=float)
    rtt = np.asarray(rtt, dtype=float)
    return float(np.sum(x * rtt) * np.max(x / rtt) / np.sum(x) ** 2)


@dataclass(frozen=True)
class MptcpRates:
    """Result of :func:`mptcp_rates`.

    Attributes
    ----------
    rates : numpy.ndarray
        Equilibrium subflow rates ``x_r`` (packets/s).
    a : float
        The coupling term at the equilibrium.
    capped : numpy.ndarray
        Boolean mask of subflows held at their single-path TCP rate (always False when ``cap=False``).
    """

    rates: np.ndarray
    a: float
    capped: np.ndarray


def mptcp_rates(p, rtt, cap: bool = True) -> MptcpRates:
    """Equation-based MPTCP subflow rates of Pluntke & Rio 2011, Section 2.

    Parameters
    ----------
    p : array_like
        Per-path loss rates in (0, 1).
    rtt : array_like
        Per-path mean round-trip times in seconds.
    cap : bool, default True
        Apply LIA's cap at single-path TCP per subflow (RFC 6356's ``min(., 1/w_r)``). ``False`` is the
        formula as printed in Pluntke & Rio 2011. See the module docstring for both readings.

    Returns
    -------
    MptcpRates
        Rates, the coupling term ``a`` and which subflows are capped.

    Notes
    -----
    With the cap, the equilibrium is ``w_r(k) = min(k / p_r, sqrt(2/p_r))`` where ``k = 2a/W`` must
    satisfy ``k = 2 max_r(x_r/RTT_r) / (sum_r x_r)^2`` (substitute ``a`` into ``k = 2a/W``). Let
    ``g(k)`` be the difference. For ``k <= min_r sqrt(2 p_r)`` no path is capped and ``g = k - C/k``
    with ``C = 2 max(1/(p RTT^2)) / (sum 1/(p RTT))^2``, so the uncapped root ``sqrt(C)`` is the answer
    when it lies in that range; otherwise ``g < 0`` there, and at ``k = max_r sqrt(2 p_r)`` (all paths
    capped) ``g >= 0`` because ``(sum x)^2 >= x_{r*}^2`` for the path ``r*`` attaining the max. A root is
    bracketed and found with Brent's method on ``log k``.
    """
    p, rtt = _as_paths(p, rtt)
    inv = 1.0 / (p * rtt)
    c_unc = 2.0 * np.max(inv / rtt) / np.sum(inv) ** 2
    k_unc = np.sqrt(c_unc)
    if not cap:
        # k = 2a/W in the uncapped equilibrium; x_r = k / (p_r RTT_r), identical to the printed form.
        x = k_unc * inv
        return MptcpRates(rates=x, a=lia_alpha(x, rtt), capped=np.zeros(p.size, dtype=bool))
    w_tcp = np.sqrt(2.0 / p)

    def windows(k: float) -> np.ndarray:
        return np.minimum(k / p, w_tcp)

    def g(logk: float) -> float:
        k = np.exp(logk)
        x = windows(k) / rtt
        return k - 2.0 * np.max(x / rtt) / np.sum(x) ** 2

    k_lo = float(np.min(np.sqrt(2.0 * p)))
    k_hi = float(np.max(np.sqrt(2.0 * p)))
    if k_unc <= k_lo:
        k = k_unc
    elif g(np.log(k_hi)) <= 0.0:
        k = k_hi
    elif g(np.log(k_lo)) >= 0.0:
        # The root is the lower end itself: one path (k_unc = sqrt(2p) = k_lo exactly, the path
        # at its TCP rate), or k_unc above k_lo by rounding only. brentq needs a sign change.
        k = k_lo
    else:
        k = float(np.exp(brentq(g, np.log(k_lo), np.log(k_hi), xtol=1e-14, rtol=1e-14)))
    w = windows(k)
    capped = k / p >= w_tcp
    x = w / rtt
    return MptcpRates(rates=x, a=lia_alpha(x, rtt), capped=capped)
