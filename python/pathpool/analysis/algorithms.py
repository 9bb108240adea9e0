"""Fluid-model catalogue of the congestion-control algorithms of ``pathpool-cc``.

Every algorithm is given by its window rules, as one multipath source ``s`` applies them:

* per ACK on route ``r``: ``w_r += I_r(w_s, tau_s)``
* per loss on route ``r``: ``w_r -= D_r(w_s, tau_s)``

and mapped to the fluid model of Peng, Walid, Hwang & Low (seed 004, eq. (3)) through eq. (7)
of the same paper::

    k_r(x_s)   = x_r * D_r / tau_r          (gain)
    phi_r(x_s) = I_r / D_r                  (equilibrium function, a price: loss probability)

Derivation (seed 004, Section II-B, reconstructed; the extraction lost the formulas): in one
RTT route ``r`` receives ``x_r tau_r`` ACKs and ``x_r tau_r q_r`` losses, so the window changes
by ``x_r tau_r (I_r - q_r D_r)`` per RTT, i.e. ``dx_r/dt = (x_r / tau_r)(I_r - q_r D_r)``,
which is (3) with ``k_r = x_r D_r / tau_r`` and ``phi_r = I_r / D_r``.  For Reno this gives
``k = x^2 / 2``, ``phi = 2 / (tau x)^2`` and the equilibrium ``x = sqrt(2/q) / tau``.

Units: rates ``x`` in packets/s, RTTs ``tau`` in s, windows ``w = x tau`` in packets, prices
``q`` dimensionless (loss probability per packet).

Sources of the window rules
---------------------------
reno, ewtcp, coupled, semicoupled, max
    seed README (the standard forms of Wischik et al., NSDI 2011, as cited by seed 004 II-B).
lia
    RFC 6356: ``min(alpha / w_total, 1 / w_r)`` with
    ``alpha = w_total max_k(w_k/tau_k^2) / (sum_k w_k/tau_k)^2``, i.e. Max capped at Reno.
olia
    Khalili et al., IEEE/ACM ToN 21(5) 2013 (seed 001 Table 1 garbles its sets):
    ``I_r = (w_r/tau_r^2) / (sum_k w_k/tau_k)^2 + alpha_r / w_r``, ``D_r = w_r / 2``.  Its
    ``alpha_r`` depends on the inter-loss distances, which in the fluid model are
    ``l_r = 1 / q_r``, so OLIA's ``phi`` depends on the prices as well as on the rates.
balia
    seed 002 slide "Balia" (= seed 004 eq. (1)-(2), lost in extraction):
    ``I_r = x_r / (tau_r (sum x_k)^2) (1+alpha_r)/2 (4+alpha_r)/5``,
    ``D_r = (w_r / 2) min(alpha_r, 1.5)``, ``alpha_r = max_k x_k / x_r``.
generalized(eta, beta)
    seed 002 slide "Design of the tradeoff": ``k_r = x_r (x_r + eta (x_max - x_r))`` and
    ``phi_r = f_r (x_r + beta (x_max - x_r))``, ``f_r = 1 / (tau_r^2 x_r ||x_s||_1^2)``.  As
    printed, a single path gives ``k = x^2``, ``phi = 1/(tau x)^2``, i.e. twice Reno's gain and
    half its ``phi``; we normalise to Reno (``k/2`` and ``2 phi``: same product ``k phi``, so
    the same per-ACK increment).  In window form this is
    ``I_r = x_r / (tau_r S^2) (1 + eta(alpha_r-1)) (1 + beta(alpha_r-1))`` and
    ``D_r = (w_r/2)(1 + eta(alpha_r - 1))``.  With (eta, beta) = (0.5, 0.2) the increment is
    exactly Balia's; the decrement is ``w_r (1+alpha_r)/4``, not Balia's
    ``(w_r/2) min(alpha_r, 1.5)`` (see :func:`balia_vs_generalized`).  LIA is (0, 1), which is
    Max with equal RTTs and without LIA's cap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

Array = np.ndarray

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "balia_vs_generalized",
    "get_algorithm",
    "olia_alpha",
]


@dataclass(frozen=True)
class Algorithm:
    """One congestion-control algorithm in window form and in fluid form.

    Parameters
    ----------
    name : str
        Name as in ``pathpool-cc`` (``"lia"``, ``"ewtcp"``, ...).
    params : dict
        Parameter values (e.g. ``{"a": 1.0}``).
    increment : callable
        ``increment(w, tau, q) -> I`` per-ACK window increment on each route of one source;
        ``w`` and ``tau`` are arrays over the source's routes, ``q`` the route prices (used only
        by price-dependent algorithms, i.e. OLIA).
    decrement : callable
        ``decrement(w, tau, q) -> D`` per-loss window decrement on each route.
    source : str
        Where the window rules come from.
    price_dependent : bool
        True when ``phi`` depends on the prices (OLIA); conditions C0-C5 are then undefined.
    """

    name: str
    params: dict
    increment: Callable[[Array, Array, Array | None], Array]
    decrement: Callable[[Array, Array, Array | None], Array]
    source: str
    price_dependent: bool = False
    label: str = field(default="")

    @property
    def title(self) -> str:
        """Display name including parameters, e.g. ``ewtcp(a=1)``."""
        if self.label:
            return self.label
        if not self.params:
            return self.name
        inner = ",".join(f"{k}={v:g}" for k, v in self.params.items())
        return f"{self.name}({inner})"

    # --- fluid form, eq. (7) of seed 004 ---------------------------------------------------
    def gain(self, x: Array, tau: Array, q: Array | None = None) -> Array:
        """Gain ``k_r(x_s) = x_r D_r / tau_r`` (seed 004 eq. (7)).

        Parameters
        ----------
        x, tau : ndarray
            Rates (packets/s) and RTTs (s) of one source's routes.
        q : ndarray, optional
            Route prices; only used by price-dependent algorithms.

        Returns
        -------
        ndarray
            ``k_r`` for each route.
        """
        x = np.asarray(x, dtype=float)
        tau = np.asarray(tau, dtype=float)
        return x * self.decrement(x * tau, tau, q) / tau

    def phi(self, x: Array, tau: Array, q: Array | None = None) -> Array:
        """Equilibrium function ``phi_r(x_s) = I_r / D_r`` (seed 004 eq. (7)).

        Parameters
        ----------
        x, tau : ndarray
            Rates (packets/s) and RTTs (s) of one source's routes; rates must be positive for
            the algorithms whose ``phi`` blows up at zero (all but Coupled).
        q : ndarray, optional
            Route prices; only used by price-dependent algorithms.

        Returns
        -------
        ndarray
            ``phi_r``: the loss probability at which route ``r`` holds its rate.
        """
        x = np.asarray(x, dtype=float)
        tau = np.asarray(tau, dtype=float)
        w = x * tau
        return self.increment(w, tau, q) / self.decrement(w, tau, q)


# ---------------------------------------------------------------------------------------------
# window rules
# ---------------------------------------------------------------------------------------------


def _reno() -> Algorithm:
    return Algorithm(
        "reno",
        {},
        lambda w, tau, q: 1.0 / w,
        lambda w, tau, q: w / 2.0,
        "TCP NewReno: +1/w per ACK, -w/2 per loss (seed 004 II-B)",
    )


def _ewtcp(a: float = 1.0) -> Algorithm:
    return Algorithm(
        "ewtcp",
        {"a": a},
        lambda w, tau, q: a / w,
        lambda w, tau, q: w / 2.0,
        "EWTCP (Honda et al. 2009): +a/w_r per ACK, -w_r/2 per loss (seed README)",
    )


def _coupled() -> Algorithm:
    def inc(w, tau, q):
        return np.full_like(w, 1.0 / np.sum(w))

    def dec(w, tau, q):
        # The floor of the packet-level rule (window never below its minimum) has no fluid
        # counterpart; the projection at x_r = 0 in (3) plays its role.
        return np.full_like(w, np.sum(w) / 2.0)

    return Algorithm(
        "coupled",
        {},
        inc,
        dec,
        "Coupled (Kelly & Voice 2005; Han et al. 2004): +1/w_total per ACK, "
        "-w_total/2 per loss (seed README)",
    )


def _semicoupled(a: float = 1.0) -> Algorithm:
    return Algorithm(
        "semicoupled",
        {"a": a},
        lambda w, tau, q: np.full_like(w, a / np.sum(w)),
        lambda w, tau, q: w / 2.0,
        "Semicoupled (Wischik et al. 2011): +a/w_total per ACK, -w_r/2 per loss (seed README)",
    )


def _max_increment(w: Array, tau: Array) -> Array:
    return np.full_like(w, np.max(w / tau**2) / np.sum(w / tau) ** 2)


def _max() -> Algorithm:
    return Algorithm(
        "max",
        {},
        lambda w, tau, q: _max_increment(w, tau),
        lambda w, tau, q: w / 2.0,
        "Max (Wischik et al. 2011): +max_k(w_k/tau_k^2)/(sum_k w_k/tau_k)^2 per ACK, "
        "-w_r/2 per loss (seed README)",
    )


def _lia() -> Algorithm:
    return Algorithm(
        "lia",
        {},
        lambda w, tau, q: np.minimum(_max_increment(w, tau), 1.0 / w),
        lambda w, tau, q: w / 2.0,
        "LIA (RFC 6356): min(alpha/w_total, 1/w_r) per ACK, -w_r/2 per loss",
    )


def olia_alpha(w: Array, tau: Array, q: Array, rel_tol: float = 1e-9) -> Array:
    """OLIA's ``alpha_r`` (Khalili et al., ToN 2013, eq. (5)) in the fluid model.

    The best paths maximise ``l_r / tau_r^2`` where ``l_r`` is the number of packets between
    losses; in the fluid model ``l_r = 1/q_r``.  ``M`` is the set of paths with the largest
    window.  With ``n`` paths::

        alpha_r =  1 / (n |B \\ M|)   if r in B \\ M
        alpha_r = -1 / (n |M|)        if r in M and B \\ M is not empty
        alpha_r =  0                  otherwise

    Parameters
    ----------
    w, tau, q : ndarray
        Windows (packets), RTTs (s) and route prices of one source's routes.
    rel_tol : float
        Relative tolerance for membership of the arg-max sets (ties).

    Returns
    -------
    ndarray
        ``alpha_r`` per route.
    """
    w = np.asarray(w, dtype=float)
    n = w.size
    quality = 1.0 / (np.maximum(np.asarray(q, dtype=float), 1e-300) * np.asarray(tau) ** 2)
    best = quality >= quality.max() * (1 - rel_tol)
    maxw = w >= w.max() * (1 - rel_tol)
    collected = best & ~maxw
    alpha = np.zeros(n)
    if collected.any():
        alpha[collected] = 1.0 / (n * collected.sum())
        alpha[maxw] = -1.0 / (n * maxw.sum())
    return alpha


def _olia() -> Algorithm:
    def inc(w, tau, q):
        if q is None:
            raise ValueError("olia: phi depends on the route prices q; pass q")
        x = w / tau
        return (w / tau**2) / np.sum(x) ** 2 + olia_alpha(w, tau, q) / w

    return Algorithm(
        "olia",
        {},
        inc,
        lambda w, tau, q: w / 2.0,
        "OLIA (Khalili et al., ToN 2013): (w_r/tau_r^2)/(sum w_k/tau_k)^2 + alpha_r/w_r per "
        "ACK, -w_r/2 per loss; fluid inter-loss distance l_r = 1/q_r",
        price_dependent=True,
    )


def _balia() -> Algorithm:
    def alpha(w, tau):
        x = w / tau
        return x.max() / x

    def inc(w, tau, q):
        x = w / tau
        a = alpha(w, tau)
        return x / (tau * np.sum(x) ** 2) * (1 + a) / 2 * (4 + a) / 5

    def dec(w, tau, q):
        return w / 2 * np.minimum(alpha(w, tau), 1.5)

    return Algorithm(
        "balia",
        {},
        inc,
        dec,
        "Balia (seed 002 slide 'Balia'; seed 004 eq. (1)-(2)), continuous form",
    )


def _generalized(eta: float = 0.5, beta: float = 0.2) -> Algorithm:
    def alpha(w, tau):
        x = w / tau
        return x.max() / x

    def inc(w, tau, q):
        x = w / tau
        a = alpha(w, tau)
        return x / (tau * np.sum(x) ** 2) * (1 + eta * (a - 1)) * (1 + beta * (a - 1))

    def dec(w, tau, q):
        return w / 2 * (1 + eta * (alpha(w, tau) - 1))

    return Algorithm(
        "generalized",
        {"eta": eta, "beta": beta},
        inc,
        dec,
        "generalized (eta, beta) family, seed 002 'Design of the tradeoff', normalised to Reno",
    )


_FACTORIES: dict[str, Callable[..., Algorithm]] = {
    "reno": _reno,
    "ewtcp": _ewtcp,
    "coupled": _coupled,
    "semicoupled": _semicoupled,
    "max": _max,
    "lia": _lia,
    "olia": _olia,
    "balia": _balia,
    "generalized": _generalized,
}

#: Names accepted by :func:`get_algorithm`.
ALGORITHMS: tuple[str, ...] = tuple(_FACTORIES)


def get_algorithm(name: str | Algorithm, **params: float) -> Algorithm:
    """Return the fluid-model :class:`Algorithm` for a ``pathpool-cc`` algorithm name.

    Parameters
    ----------
    name : str or Algorithm
        One of :data:`ALGORITHMS`; an :class:`Algorithm` is returned unchanged.  The forms
        ``"ewtcp(a=0.25)"`` and ``"generalized(eta=0.5,beta=0.2)"`` are accepted too.
    **params : float
        Algorithm parameters (``a`` for ewtcp/semicoupled, ``eta``/``beta`` for generalized).

    Returns
    -------
    Algorithm

    Raises
    ------
    ValueError
        Unknown name or parameter; the message lists the allowed values.
    """
    if isinstance(name, Algorithm):
        return name
    text = name.strip()
    if "(" in text and text.endswith(")"):
        base, inner = text[:-1].split("(", 1)
        for item in filter(None, (s.strip() for s in inner.split(","))):
            if "=" not in item:
                raise ValueError(f"algorithm {name!r}: parameter {item!r} must be key=value")
            k, v = item.split("=", 1)
            params.setdefault(k.strip(), float(v))
        text = base.strip()
    key = text.lower()
    if key not in _FACTORIES:
        raise ValueError(f"unknown algorithm {name!r}; allowed: {', '.join(ALGORITHMS)}")
    try:
        return _FACTORIES[key](**params)
    except TypeError as exc:
        raise ValueError(f"algorithm {key!r}: bad parameters {params}: {exc}") from None


def balia_vs_generalized(x: Array, tau: Array, eta: float = 0.5, beta: float = 0.2) -> dict:
    """Compare Balia's window rules with the generalized family at (eta, beta).

    Parameters
    ----------
    x, tau : ndarray
        Rates and RTTs of one source's routes.
    eta, beta : float
        Parameters of the generalized family (seed 002 gives Balia = (0.5, 0.2)).

    Returns
    -------
    dict
        ``increment_balia``, ``increment_generalized``, ``decrement_balia``,
        ``decrement_generalized`` (arrays).
    """
    x = np.asarray(x, float)
    tau = np.asarray(tau, float)
    w = x * tau
    b = _balia()
    g = _generalized(eta, beta)
    return {
        "increment_balia": b.increment(w, tau, None),
        "increment_generalized": g.increment(w, tau, None),
        "decrement_balia": b.decrement(w, tau, None),
        "decrement_generalized": g.decrement(w, tau, None),
    }
