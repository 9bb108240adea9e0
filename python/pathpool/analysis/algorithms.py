"""Fluid-model form of the congestion-control algorithms of ``pathpool-cc``.

Every algorithm is given by its window rules, as one multipath source ``s`` applies them:

* per ACK on route ``r``: ``w_r += I_r(w_s, tau_s)``
* per loss on route ``r``: ``w_r -= D_r(w_s, tau_s)``

and mapped to the fluid model of Peng, Walid, Hwang & Low (2016, eq. (3)) through eq. (7)
of the same paper::

    k_r(x_s)   = x_r * D_r / tau_r          (gain)
    phi_r(x_s) = I_r / D_r                  (equilibrium function, a price: loss probability)

Derivation (Peng et al. 2016, Section II-B, reconstructed; the extraction lost the formulas): in one
RTT route ``r`` receives ``x_r tau_r`` ACKs and ``x_r tau_r q_r`` losses, so the window changes
by ``x_r tau_r (I_r - q_r D_r)`` per RTT, i.e. ``dx_r/dt = (x_r / tau_r)(I_r - q_r D_r)``,
which is (3) with ``k_r = x_r D_r / tau_r`` and ``phi_r = I_r / D_r``.  For Reno this gives
``k = x^2 / 2``, ``phi = 2 / (tau x)^2`` and the equilibrium ``x = sqrt(2/q) / tau``.

The rules are not copied here: ``I_r`` and ``D_r`` are pathpool-cc's own
(``Controller::window_rules``, the per-segment increase and the per-loss decrease before the
window floors, through :func:`pathpool._core.window_rules`), so every registry algorithm that
has per-state rules has a fluid model, with the registry's parameters and defaults (EWTCP's
``a`` defaults to ``1/n^2``; pass ``ewtcp(a=1)`` for uncoupled Reno increases). CUBIC and RSF,
whose steps depend on time or on delay and loss estimates, have none.  LIA is evaluated with
alpha computed from the state (``alpha_every_ack``); the packet-level floors (``ssthresh >= 2``,
or 1) have no fluid counterpart: the projection at ``x_r = 0`` in (3) plays their role.

OLIA's loss history in the fluid model
--------------------------------------
OLIA (Khalili et al., IEEE/ACM ToN 21(5) 2013, Section V) picks its best paths by
``l_r / tau_r^2``, where ``l_r`` is the number of packets transmitted between the last two
losses (or since the last one) on path ``r``.  In the fluid model losses on route ``r`` arrive
once per ``1/q_r`` packets, so the fluid ``l_r`` is ``1/q_r``: the route prices are passed to
pathpool-cc as a loss history of ``1/q_r`` segments per route (a loss-free route: 1e12), and
OLIA's ``phi`` depends on the prices as well as on the rates (``price_dependent``).  Which
algorithms are price dependent is measured, not listed: one whose rules change with the loss
history on a probe state.  OLIA's max-window set ``M`` compares integer windows (Linux v0.95
``mptcp_olia.c``, as in the simulator), so in the fluid model paths whose windows have the same
integer part all belong to ``M``.

Units: rates ``x`` in packets/s, RTTs ``tau`` in s, windows ``w = x tau`` in packets, prices
``q`` dimensionless (loss probability per packet).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, lru_cache

import numpy as np

Array = np.ndarray

__all__ = [
    "ALGORITHMS",
    "Algorithm",
    "balia_vs_generalized",
    "get_algorithm",
]

#: Longest loss interval pathpool-cc accepts (segments); stands for a loss-free route.
_MAX_INTERVAL = 1e12


def _price_history(w: Array, tau: Array, q: Array | None) -> Array | None:
    """Loss intervals ``l_r = 1/q_r`` (segments), the fluid model's loss history."""
    if q is None:
        return None
    q = np.asarray(q, dtype=float)
    with np.errstate(divide="ignore"):
        return np.minimum(1.0 / np.maximum(q, 0.0), _MAX_INTERVAL)


@dataclass(frozen=True)
class Algorithm:
    """One ``pathpool-cc`` congestion-control algorithm in window form and in fluid form.

    Parameters
    ----------
    name : str
        Registry name (``"lia"``, ``"ewtcp"``, ...; ``pathpool algorithms`` lists them).
    params : dict
        Parameter values as in a scenario (e.g. ``{"a": 1.0}``); absent ones take the
        registry's defaults.
    source : str
        Where the window rules come from (the registry's catalogue entry).
    price_dependent : bool
        True when the rules depend on the loss history, so ``phi`` on the prices (OLIA);
        conditions C0-C5 are then undefined.
    label : str
        Display name overriding :attr:`title`.
    history : callable, optional
        ``history(w, tau, q) -> loss intervals (segments) or None``: the loss history the
        controller is given before its rules are read; default ``1/q_r``.

    Examples
    --------
    >>> import numpy as np
    >>> reno = get_algorithm("reno")
    >>> float(reno.phi(np.array([250.0]), np.array([0.08]))[0])  # 2 / (tau x)^2
    0.005
    """

    name: str
    params: dict
    source: str = ""
    price_dependent: bool = False
    label: str = field(default="")
    history: Callable[[Array, Array, Array | None], Array | None] = field(
        default=_price_history, repr=False, compare=False)

    @property
    def title(self) -> str:
        """Display name including parameters, e.g. ``ewtcp(a=1)``."""
        if self.label:
            return self.label
        if not self.params:
            return self.name
        inner = ",".join(f"{k}={v:g}" for k, v in self.params.items())
        return f"{self.name}({inner})"

    # --- window form: pathpool-cc's rules ----------------------------------------------------
    def rules(self, w: Array, tau: Array, q: Array | None = None) -> tuple[Array, Array]:
        """Per-ACK increments ``I_r`` and per-loss decrements ``D_r`` of one source's routes.

        Parameters
        ----------
        w, tau : ndarray
            Windows (packets) and RTTs (s) of one source's routes.
        q : ndarray, optional
            Route prices; required by price-dependent algorithms (OLIA's loss history).

        Returns
        -------
        (ndarray, ndarray)
            ``I_r`` and ``D_r`` (packets) per route, before the packet-level window floors.

        Examples
        --------
        >>> import numpy as np
        >>> inc, dec = get_algorithm("coupled").rules(np.array([10.0, 30.0]), np.array([0.1, 0.1]))
        >>> inc.tolist(), dec.tolist()  # 1/w_total, w_total/2
        ([0.025, 0.025], [20.0, 20.0])
        """
        from pathpool import _core

        if self.price_dependent and q is None:
            raise ValueError(f"{self.name}: phi depends on the route prices q; pass q")
        w = np.asarray(w, dtype=float)
        tau = np.asarray(tau, dtype=float)
        hist = self.history(w, tau, q) if self.price_dependent else None
        inc, dec = _core.window_rules(self.name, self.params, w.tolist(), tau.tolist(),
                                      None if hist is None else np.asarray(hist, float).tolist())
        return np.asarray(inc), np.asarray(dec)

    def increment(self, w: Array, tau: Array, q: Array | None = None) -> Array:
        """Per-ACK window increment ``I_r`` on each route (see :meth:`rules`).

        Examples
        --------
        >>> import numpy as np
        >>> get_algorithm("reno").increment(np.array([20.0]), np.array([0.1])).tolist()
        [0.05]
        """
        return self.rules(w, tau, q)[0]

    def decrement(self, w: Array, tau: Array, q: Array | None = None) -> Array:
        """Per-loss window decrement ``D_r`` on each route (see :meth:`rules`).

        Examples
        --------
        >>> import numpy as np
        >>> get_algorithm("reno").decrement(np.array([20.0]), np.array([0.1])).tolist()
        [10.0]
        """
        return self.rules(w, tau, q)[1]

    # --- fluid form, eq. (7) of Peng et al. 2016 ---------------------------------------------------
    def gain(self, x: Array, tau: Array, q: Array | None = None) -> Array:
        """Gain ``k_r(x_s) = x_r D_r / tau_r`` (Peng et al. 2016 eq. (7)).

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

        Examples
        --------
        >>> import numpy as np
        >>> float(get_algorithm("reno").gain(np.array([250.0]), np.array([0.08]))[0])  # x^2/2
        31250.0
        """
        x = np.asarray(x, dtype=float)
        tau = np.asarray(tau, dtype=float)
        return x * self.decrement(x * tau, tau, q) / tau

    def phi(self, x: Array, tau: Array, q: Array | None = None) -> Array:
        """Equilibrium function ``phi_r(x_s) = I_r / D_r`` (Peng et al. 2016 eq. (7)).

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

        Examples
        --------
        >>> import numpy as np
        >>> float(get_algorithm("reno").phi(np.array([250.0]), np.array([0.08]))[0])
        0.005
        """
        x = np.asarray(x, dtype=float)
        tau = np.asarray(tau, dtype=float)
        inc, dec = self.rules(x * tau, tau, q)
        return inc / dec


@lru_cache(maxsize=1)
def _catalogue() -> dict[str, dict]:
    from pathpool import _core

    return {a["name"]: a for a in _core.algorithms()}


@cache
def _probe(name: str, frozen_params: tuple) -> tuple[bool, bool]:
    """(has per-state rules, rules depend on the loss history), measured on a probe state."""
    from pathpool import _core
    from pathpool.errors import SimulationError

    params = dict(frozen_params)
    w, tau = [10.0, 30.0, 20.0], [0.1, 0.1, 0.05]
    try:
        base = _core.window_rules(name, params, w, tau)
    except SimulationError as exc:
        if "no per-state window rules" in str(exc):
            return False, False
        raise ValueError(f"algorithm {name!r}: {exc}") from None
    histories = ([100.0, 50.0, 10.0], [50.0, 100.0, 10.0], [10.0, 10.0, 100.0])
    depends = any(_core.window_rules(name, params, w, tau, h) != base for h in histories)
    return True, depends


def _fluid_names() -> tuple[str, ...]:
    return tuple(n for n in _catalogue() if _probe(n, ())[0])


#: Registry algorithms that have a fluid model (all with per-state window rules).
ALGORITHMS: tuple[str, ...] = _fluid_names()


def get_algorithm(name: str | Algorithm, **params) -> Algorithm:
    """Return the fluid-model :class:`Algorithm` of a ``pathpool-cc`` registry algorithm.

    Parameters
    ----------
    name : str or Algorithm
        A registry algorithm with per-state rules (:data:`ALGORITHMS`); an :class:`Algorithm`
        is returned unchanged.  The forms ``"ewtcp(a=0.25)"`` and
        ``"generalized(eta=0.5,beta=0.2)"`` are accepted too.
    **params
        Algorithm parameters as in a scenario (``a`` for ewtcp/semicoupled, ``eta``/``beta``
        for generalized, ``variant`` for balia); pathpool-cc checks them.

    Returns
    -------
    Algorithm

    Raises
    ------
    ValueError
        Unknown name or parameter, or an algorithm without a fluid model; the message lists
        the allowed values.

    Examples
    --------
    >>> get_algorithm("ewtcp(a=1)").title
    'ewtcp(a=1)'
    >>> get_algorithm("olia").price_dependent
    True
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
            v = v.strip()
            try:
                value: object = float(v)
            except ValueError:
                value = v.strip("\"'")
            params.setdefault(k.strip(), value)
        text = base.strip()
    key = text.lower()
    allowed = _fluid_names()
    if key not in allowed:
        why = "has no fluid model (its steps depend on time or estimates)" if key in _catalogue() \
            else "is unknown"
        raise ValueError(f"algorithm {name!r} {why}; allowed: {', '.join(allowed)}")
    frozen = tuple(sorted(params.items()))
    _, depends = _probe(key, frozen)
    return Algorithm(key, dict(params), source=_catalogue()[key]["source"], price_dependent=depends)


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

    Examples
    --------
    >>> import numpy as np
    >>> c = balia_vs_generalized(np.array([200.0, 100.0]), np.array([0.1, 0.1]))
    >>> bool(np.all(c["increment_balia"] == c["increment_generalized"]))
    True
    """
    x = np.asarray(x, float)
    tau = np.asarray(tau, float)
    w = x * tau
    b = get_algorithm("balia")
    g = get_algorithm("generalized", eta=eta, beta=beta)
    return {
        "increment_balia": b.increment(w, tau, None),
        "increment_generalized": g.increment(w, tau, None),
        "decrement_balia": b.decrement(w, tau, None),
        "decrement_generalized": g.decrement(w, tau, None),
    }
