"""The optimisation-based rate controller of Pluntke & Rio 2011, Section 3.

Seed 003 states the controller in words; this module writes it out. What the text says, and the
math we reconstructed for it:

* "the receiver keeps track of mean loss rates as well as mean and variance of RTTs for each
  subflow": per path ``p_r``, ``mu_r``, ``sigma_r^2``.
* "Using Chebychev's inequality, we bound the timeout rate per subflow given the deadline": with
  deadline ``D``, ``P(RTT_r >= D) <= P(|RTT_r - mu_r| >= D - mu_r) <= sigma_r^2 / (D - mu_r)^2`` for
  ``D > mu_r``, and 1 otherwise (:func:`late_bound`, ``kind="chebyshev"``). The one-sided Cantelli form
  ``sigma^2 / (sigma^2 + (D - mu)^2)`` is tighter and available as ``kind="cantelli"``; the default is
  the paper's word, Chebyshev.
* "compute the worst case receiver loss assuming that timeout losses and drops are independent":
  ``l_r = 1 - (1 - p_r)(1 - b_r)`` where ``b_r`` is the bound above.
* "the objective is to maximise receiver goodput": the expected rate of packets that arrive in time,
  ``sum_r x_r (1 - p_r)(1 - b_r)`` -- linear in ``x`` as the paper says ("This optimisation problem is
  linear"), so its weights are ``c_r = 1 - l_r``.
* "The feasible region ... is the set of all TCP-friendly rates as described by (1)", with
  ``x_r^TCP = sqrt(2/p_r) / mu_r`` (Pluntke & Rio 2011's TCP formula at the mean RTT).
* "we enforce that a small fixed fraction of the total throughput is used for probing": a fraction
  ``phi`` of the total rate is spread equally over all paths, ``x_r >= (phi/n) sum_s x_s``. (The text
  does not say how the probing share is spread; equal shares are the simplest reading that keeps
  every path observed.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pathpool.ratecontrol.equations import tcp_rate
from pathpool.ratecontrol.region import Allocation, allocate_greedy, friendly_region_lp

__all__ = ["LATE_BOUNDS", "Optimised", "late_bound", "optimise", "path_weights"]

LATE_BOUNDS = ("chebyshev", "cantelli")


def late_bound(mean, var, deadline: float, kind: str = "chebyshev") -> np.ndarray:
    """Upper bound on the probability that a delay exceeds the deadline, from its mean and variance.

    Parameters
    ----------
    mean : float or array_like
        Mean delay (s).
    var : float or array_like
        Delay variance (s^2).
    deadline : float
        Deadline ``D`` (s).
    kind : {"chebyshev", "cantelli"}
        ``"chebyshev"``: ``min(1, var / (D - mean)^2)`` (two-sided Chebyshev, as Pluntke & Rio 2011 names it);
        ``"cantelli"``: ``var / (var + (D - mean)^2)`` (one-sided). Both are 1 when ``D <= mean``.

    Returns
    -------
    numpy.ndarray
        The bound per path, in ``[0, 1]``.
    """
    if kind not in LATE_BOUNDS:
        raise ValueError(f"unknown late bound {kind!r}; allowed: {list(LATE_BOUNDS)}")
    mean = np.atleast_1d(np.asarray(mean, dtype=float))
    var = np.atleast_1d(np.asarray(var, dtype=float))
    if np.any(var < 0) or not np.all(np.isfinite(mean)):
        raise ValueError("delay variance must be >= 0 and mean finite")
    gap = deadline - mean
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "chebyshev":
            b = np.where(gap > 0, var / gap**2, 1.0)
        else:
            b = np.where(gap > 0, var / (var + gap**2), 1.0)
    return np.clip(np.nan_to_num(b, nan=1.0), 0.0, 1.0)


def path_weights(p, rtt_mean, rtt_var, deadline: float, bound: str = "chebyshev") -> np.ndarray:
    """Objective weights ``c_r = (1 - p_r)(1 - b_r)``: worst-case probability of an in-time arrival.

    Parameters
    ----------
    p : array_like
        Loss rates.
    rtt_mean, rtt_var : array_like
        Mean (s) and variance (s^2) of the delay that is held against the deadline.
    deadline : float
        Deadline (s).
    bound : {"chebyshev", "cantelli"}
        See :func:`late_bound`.

    Returns
    -------
    numpy.ndarray
        One weight per path.
    """
    p = np.asarray(p, dtype=float)
    return (1.0 - p) * (1.0 - late_bound(rtt_mean, rtt_var, deadline, bound))


@dataclass(frozen=True)
class Optimised:
    """Result of :func:`optimise`.

    Attributes
    ----------
    rates : numpy.ndarray
        Optimal TCP-friendly rates (packets/s).
    x_tcp : numpy.ndarray
        Single-path TCP rates bounding the region.
    late_bound : numpy.ndarray
        Bound on each path's deadline-miss probability.
    weights : numpy.ndarray
        Objective weights ``(1 - p)(1 - b)``.
    goodput_bound : float
        Worst-case expected in-time packet rate ``weights . rates``.
    method : str
        Solver used.
    """

    rates: np.ndarray
    x_tcp: np.ndarray
    late_bound: np.ndarray
    weights: np.ndarray
    goodput_bound: float
    method: str


def optimise(
    p,
    rtt_mean,
    rtt_var,
    deadline: float,
    probe_fraction: float = 0.05,
    bound: str = "chebyshev",
    method: str = "auto",
    tcp_formula: str = "sqrt2",
    delay_mean=None,
    delay_var=None,
) -> Optimised:
    """Seed 003's optimising controller: maximise worst-case in-time goodput over region (1).

    Parameters
    ----------
    p : array_like
        Per-path loss rate estimates.
    rtt_mean, rtt_var : array_like
        Per-path RTT mean (s) and variance (s^2); the mean sets ``x^TCP``.
    deadline : float
        Deadline (s).
    probe_fraction : float, default 0.05
        Share ``phi`` of the total rate spread equally over the paths for probing.
    bound : {"chebyshev", "cantelli"}
        Deadline-miss bound, see :func:`late_bound`.
    method : {"auto", "greedy", "lp-chain", "lp-subsets"}
        ``"greedy"`` is exact only without probing (the probing rows break the polymatroid);
        ``"auto"`` uses it then, and the chain LP (at most ``2n`` rows) otherwise.
    tcp_formula : str
        See :func:`pathpool.ratecontrol.tcp_rate`.
    delay_mean, delay_var : array_like, optional
        Mean and variance of the delay held against the deadline when it is not the RTT (for example
        a one-way delay); default: the RTT's.

    Returns
    -------
    Optimised
    """
    x_tcp = tcp_rate(p, rtt_mean, tcp_formula)
    dm = rtt_mean if delay_mean is None else delay_mean
    dv = rtt_var if delay_var is None else delay_var
    b = late_bound(dm, dv, deadline, bound)
    c = (1.0 - np.asarray(p, dtype=float)) * (1.0 - b)
    if method == "auto":
        method = "greedy" if probe_fraction == 0.0 else "lp-chain"
    if method == "greedy":
        if probe_fraction != 0.0:
            raise ValueError("method='greedy' is exact only with probe_fraction=0; use 'lp-chain'")
        alloc: Allocation = allocate_greedy(x_tcp, c)
    elif method in ("lp-chain", "lp-subsets"):
        alloc = friendly_region_lp(x_tcp, c, probe_fraction, constraints=method.removeprefix("lp-"))
    else:
        raise ValueError(f"unknown method {method!r}; allowed: auto, greedy, lp-chain, lp-subsets")
    return Optimised(rates=alloc.rates, x_tcp=x_tcp, late_bound=b, weights=c,
                     goodput_bound=float(c @ alloc.rates), method=alloc.method)
