"""The multipath TCP/AQM fluid model of Peng, Walid, Hwang & Low (2016), eq. (3)-(4).

For every route ``r`` of source ``s`` and every link ``l``::

    dx_r/dt = k_r(x_s) (phi_r(x_s) - q_r)^+_{x_r}                       (3)
    dp_l/dt = gamma_l (y_l - c_l)^+_{p_l}                                (4)
    q_r = sum_l R_lr p_l,   y_l = sum_r R_lr x_r

where ``(a)^+_b = a`` if ``b > 0`` and ``max(a, 0)`` if ``b <= 0`` (the projection that keeps
rates and prices non-negative).  An equilibrium satisfies the complementarity conditions

    (8)  x_r >= 0,  q_r - phi_r(x_s) >= 0,  x_r (q_r - phi_r(x_s)) = 0
    (9)  p_l >= 0,  c_l - y_l >= 0,         p_l (c_l - y_l) = 0

(Peng et al. 2016 Section III; reconstructed from the text, which says the equilibrium "does not
depend on k and gamma, only on phi" and that "any finite equilibrium must have x_r > 0").

Besides congestion-priced links (finite capacity, price from (4)) a link may carry a fixed
random-loss probability ``loss_l`` (Bernoulli loss as netem does it); it adds to the route
price like an exogenous link price.  A link with ``capacity = inf`` has only its fixed loss.
Route prices add link prices (the paper's ``q_r = sum_l R_lr p_l``, i.e. the small-loss
approximation of ``1 - prod(1 - p_l)``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import least_squares, minimize

from pathpool.analysis.algorithms import Algorithm, get_algorithm

__all__ = ["Equilibrium", "Network", "Trajectory", "fb", "simulate", "solve_equilibrium"]


@dataclass
class Network:
    """A network for the fluid model.

    Parameters
    ----------
    routing : array_like, shape (L, R)
        Routing matrix ``R_lr = 1`` when link ``l`` is on route ``r``.
    capacity : array_like, shape (L,)
        Link capacities in packets/s; ``inf`` for links that only drop at random.
    tau : array_like, shape (R,)
        Round-trip times of the routes in seconds (constant, as in Peng et al. 2016).
    owner : array_like of int, shape (R,)
        Index of the source that owns each route.
    algorithms : sequence
        One algorithm per source (names or :class:`Algorithm`).
    loss : array_like, shape (L,), optional
        Fixed random-loss probability of each link (default 0).
    gamma : array_like, shape (L,), optional
        Price gains of (4); default ``10 p0_l / c_l`` with ``p0_l = 2 / (tau_l c_l)^2`` so that
        a 10 % overload moves the price by its own scale in about a second.
    route_names, source_names : list of str, optional
        Labels for tables.
    """

    routing: np.ndarray
    capacity: np.ndarray
    tau: np.ndarray
    owner: np.ndarray
    algorithms: Sequence[Algorithm | str]
    loss: np.ndarray | None = None
    gamma: np.ndarray | None = None
    route_names: list[str] | None = None
    source_names: list[str] | None = None
    link_names: list[str] | None = None
    _groups: list[np.ndarray] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.routing = np.atleast_2d(np.asarray(self.routing, dtype=float))
        L, R = self.routing.shape
        self.capacity = np.broadcast_to(np.asarray(self.capacity, float), (L,)).copy()
        self.tau = np.broadcast_to(np.asarray(self.tau, float), (R,)).copy()
        self.owner = np.asarray(self.owner, dtype=int).reshape(R)
        self.algorithms = [get_algorithm(a) for a in self.algorithms]
        S = int(self.owner.max()) + 1
        if len(self.algorithms) != S:
            raise ValueError(
                f"network: {S} sources (owner indices 0..{S - 1}) but "
                f"{len(self.algorithms)} algorithms given"
            )
        if np.any(self.tau <= 0):
            raise ValueError("network: tau must be > 0 for every route")
        if np.any(self.capacity <= 0):
            raise ValueError("network: capacity must be > 0 (use inf for uncongested links)")
        self.loss = (
            np.zeros(L) if self.loss is None else np.broadcast_to(np.asarray(self.loss, float), (L,)).copy()
        )
        if np.any((self.loss < 0) | (self.loss >= 1)):
            raise ValueError("network: loss must be in [0, 1)")
        if np.any(self.routing.sum(axis=0) == 0):
            raise ValueError("network: every route must use at least one link")
        for r in range(R):
            links = self.routing[:, r] > 0
            if not np.any(np.isfinite(self.capacity[links]) | (self.loss[links] > 0)):
                raise ValueError(
                    f"network: route {r} has neither a finite-capacity link nor random loss; "
                    "its rate would be unbounded"
                )
        self._groups = [np.flatnonzero(self.owner == s) for s in range(S)]
        if self.gamma is None:
            self.gamma = np.where(
                self.dynamic, 10.0 * self.price_scale / np.where(self.dynamic, self.capacity, 1.0), 0.0
            )
        else:
            self.gamma = np.broadcast_to(np.asarray(self.gamma, float), (L,)).copy()

    # --- shapes and scales -------------------------------------------------------------------
    @property
    def n_links(self) -> int:
        """Number of links ``L``."""
        return self.routing.shape[0]

    @property
    def n_routes(self) -> int:
        """Number of routes ``R``."""
        return self.routing.shape[1]

    @property
    def n_sources(self) -> int:
        """Number of sources."""
        return len(self._groups)

    @property
    def groups(self) -> list[np.ndarray]:
        """Route indices of each source."""
        return self._groups

    @property
    def dynamic(self) -> np.ndarray:
        """Boolean mask of links whose price follows (4) (finite capacity)."""
        return np.isfinite(self.capacity)

    @property
    def price_scale(self) -> np.ndarray:
        """Typical price of each link, ``2 / (tau_l c_l)^2`` (Reno filling the link)."""
        tau_l = np.array(
            [
                self.tau[self.routing[l] > 0].mean() if np.any(self.routing[l] > 0) else 1.0
                for l in range(self.n_links)
            ]
        )
        c = np.where(self.dynamic, self.capacity, 1.0)
        return np.where(self.dynamic, 2.0 / (tau_l * c) ** 2, 1.0)

    @property
    def rate_scale(self) -> np.ndarray:
        """Typical rate of each route: the smallest finite capacity on it, else Reno's rate at
        the route's fixed loss."""
        out = np.empty(self.n_routes)
        for r in range(self.n_routes):
            links = self.routing[:, r] > 0
            caps = self.capacity[links]
            fin = caps[np.isfinite(caps)]
            if fin.size:
                out[r] = fin.min()
            else:
                out[r] = np.sqrt(2.0 / self.loss[links].sum()) / self.tau[r]
        return out

    # --- model maps ----------------------------------------------------------------------------
    def route_price(self, p: np.ndarray) -> np.ndarray:
        """Route prices ``q = R^T (p + loss)`` for link prices ``p`` (length L)."""
        return self.routing.T @ (np.asarray(p, float) + self.loss)

    def link_rate(self, x: np.ndarray) -> np.ndarray:
        """Aggregate link rates ``y = R x``."""
        return self.routing @ np.asarray(x, float)

    def phi(self, x: np.ndarray, q: np.ndarray | None = None) -> np.ndarray:
        """``phi_r(x_s)`` for every route (rates floored at a tiny positive value)."""
        x = np.maximum(np.asarray(x, float), 1e-12 * self.rate_scale)
        out = np.empty(self.n_routes)
        for s, idx in enumerate(self._groups):
            qs = None if q is None else q[idx]
            out[idx] = self.algorithms[s].phi(x[idx], self.tau[idx], qs)
        return out

    def gain(self, x: np.ndarray, q: np.ndarray | None = None) -> np.ndarray:
        """Gains ``k_r(x_s)`` for every route."""
        x = np.maximum(np.asarray(x, float), 1e-12 * self.rate_scale)
        out = np.empty(self.n_routes)
        for s, idx in enumerate(self._groups):
            qs = None if q is None else q[idx]
            out[idx] = self.algorithms[s].gain(x[idx], self.tau[idx], qs)
        return out

    def rhs(self, x: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Right-hand side of (3)-(4), with the projections ``(.)^+``.

        Parameters
        ----------
        x : ndarray, shape (R,)
            Route rates.
        p : ndarray, shape (L,)
            Link prices (only the dynamic links' entries are used).

        Returns
        -------
        (xdot, pdot) : tuple of ndarray
        """
        p = np.where(self.dynamic, np.asarray(p, float), 0.0)
        q = self.route_price(p)
        drift = self.gain(x, q) * (self.phi(x, q) - q)
        xdot = np.where((x > 0) | (drift > 0), drift, 0.0)
        excess = np.where(self.dynamic, self.link_rate(x) - np.where(self.dynamic, self.capacity, 0), 0)
        pdot = self.gamma * excess
        pdot = np.where((p > 0) | (pdot > 0), pdot, 0.0)
        return xdot, np.where(self.dynamic, pdot, 0.0)

    def with_algorithms(self, algorithms: Sequence[Algorithm | str]) -> Network:
        """A copy of this network with other algorithms."""
        return Network(
            self.routing.copy(), self.capacity.copy(), self.tau.copy(), self.owner.copy(),
            list(algorithms), self.loss.copy(), self.gamma.copy(),
            self.route_names, self.source_names, self.link_names,
        )


# -------------------------------------------------------------------------------------------
# integration
# -------------------------------------------------------------------------------------------


@dataclass
class Trajectory:
    """A solution of (3)-(4) over time.

    Attributes
    ----------
    t : ndarray, shape (T,)
    x : ndarray, shape (R, T)
        Route rates (packets/s).
    p : ndarray, shape (L, T)
        Link prices.
    """

    t: np.ndarray
    x: np.ndarray
    p: np.ndarray


def simulate(
    net: Network,
    t_end: float,
    x0: np.ndarray | None = None,
    p0: np.ndarray | None = None,
    n_points: int = 400,
    rtol: float = 1e-6,
    method: str = "RK45",
) -> Trajectory:
    """Integrate the fluid model (3)-(4) with :func:`scipy.integrate.solve_ivp`.

    Parameters
    ----------
    net : Network
    t_end : float
        Final time in seconds.
    x0, p0 : ndarray, optional
        Initial rates (default: a tenth of each route's rate scale) and link prices
        (default: zero).
    n_points : int
        Number of output samples.
    rtol : float
        Relative tolerance of the integrator.
    method : str
        ``solve_ivp`` method.  The right-hand side is only piecewise smooth (projections at
        zero, ``max``/``min`` in the window rules), so an explicit method with a moderate
        tolerance is the robust default; tight tolerances make steps collapse at the kinks.

    Returns
    -------
    Trajectory
    """
    R, L = net.n_routes, net.n_links
    x0 = 0.1 * net.rate_scale if x0 is None else np.asarray(x0, float)
    p0 = np.zeros(L) if p0 is None else np.asarray(p0, float)
    xs, ps = net.rate_scale, net.price_scale

    def f(t, z):
        x = np.maximum(z[:R], 0.0) * xs
        p = np.maximum(z[R:], 0.0) * ps
        xdot, pdot = net.rhs(x, p)
        # keep the state inside the orthant despite integrator overshoot
        xdot = np.where((z[:R] <= 0) & (xdot < 0), 0.0, xdot)
        pdot = np.where((z[R:] <= 0) & (pdot < 0), 0.0, pdot)
        return np.concatenate([xdot / xs, pdot / ps])

    z0 = np.concatenate([x0 / xs, p0 / ps])
    t_eval = np.linspace(0.0, t_end, n_points)
    sol = solve_ivp(f, (0.0, t_end), z0, method=method, t_eval=t_eval, rtol=rtol, atol=1e-10)
    if not sol.success:
        raise RuntimeError(f"fluid model integration failed: {sol.message}")
    return Trajectory(sol.t, np.maximum(sol.y[:R], 0) * xs[:, None], np.maximum(sol.y[R:], 0) * ps[:, None])


# -------------------------------------------------------------------------------------------
# equilibrium as a nonlinear complementarity problem
# -------------------------------------------------------------------------------------------


def fb(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Fischer-Burmeister function ``a + b - sqrt(a^2 + b^2)``: zero iff ``a, b >= 0, ab = 0``."""
    return a + b - np.sqrt(a * a + b * b)


@dataclass
class Equilibrium:
    """An equilibrium of (3)-(4), i.e. a solution of (8)-(9).

    Attributes
    ----------
    x : ndarray, shape (R,)
        Route rates (packets/s).
    p : ndarray, shape (L,)
        Congestion prices of the links (zero on random-loss-only links).
    q : ndarray, shape (R,)
        Route prices including fixed random loss.
    y : ndarray, shape (L,)
        Link rates.
    residual : float
        Largest Fischer-Burmeister residual of (8)-(9) in scaled units (``(q-phi)/(q+phi)``
        for routes, ``(c-y)/c`` for links, rates and prices divided by their scales).
    network : Network
    """

    x: np.ndarray
    p: np.ndarray
    q: np.ndarray
    y: np.ndarray
    residual: float
    network: Network

    def source_rates(self) -> np.ndarray:
        """Aggregate rate ``||x_s||_1`` of each source."""
        return np.array([self.x[idx].sum() for idx in self.network.groups])

    def table(self):
        """Per-route table (pandas DataFrame): source, algorithm, rate, window, price, phi."""
        import pandas as pd

        net = self.network
        rows = []
        phi = net.phi(self.x, self.q)
        for s, idx in enumerate(net.groups):
            for r in idx:
                rows.append(
                    {
                        "source": net.source_names[s] if net.source_names else s,
                        "route": net.route_names[r] if net.route_names else r,
                        "algorithm": net.algorithms[s].title,
                        "rate_pps": self.x[r],
                        "rtt_s": net.tau[r],
                        "window_pkts": self.x[r] * net.tau[r],
                        "price": self.q[r],
                        "phi": phi[r],
                    }
                )
        return pd.DataFrame(rows)


def _residuals(net: Network, z: np.ndarray) -> np.ndarray:
    R = net.n_routes
    dyn = net.dynamic
    xs, ps = net.rate_scale, net.price_scale
    xh = z[:R]
    ph = z[R:]
    x = np.maximum(xh, 0.0) * xs
    p = np.zeros(net.n_links)
    p[dyn] = np.maximum(ph, 0.0) * ps[dyn]
    q = net.route_price(p)
    phi = net.phi(x, q)
    fx = (q - phi) / (q + phi)
    y = net.link_rate(x)
    fp = (net.capacity[dyn] - y[dyn]) / net.capacity[dyn]
    return np.concatenate([fb(xh, fx), fb(ph, fp)])


def _as_equilibrium(net: Network, z: np.ndarray) -> Equilibrium:
    R = net.n_routes
    dyn = net.dynamic
    x = np.maximum(z[:R], 0.0) * net.rate_scale
    p = np.zeros(net.n_links)
    p[dyn] = np.maximum(z[R:], 0.0) * net.price_scale[dyn]
    res = float(np.max(np.abs(_residuals(net, z))))
    return Equilibrium(x, p, net.route_price(p), net.link_rate(x), res, net)


def _best_paths_have_max_windows(w: np.ndarray, tau: np.ndarray, q: np.ndarray | None) -> np.ndarray:
    """A loss history in which ``l_r / tau_r^2`` is proportional to ``w_r``: OLIA's best paths
    are then its largest-window paths, inside ``M``, so every ``alpha_r = 0``."""
    score = np.asarray(tau, float) ** 2 * np.asarray(w, float)
    return np.maximum(score / score.max() * 1e6, 1e-9)


def _olia_surrogate(net: Network) -> Network:
    """OLIA with alpha = 0 (its equilibrium conditions, see :func:`solve_equilibrium`):
    pathpool-cc's OLIA at a loss history whose best paths are its max-window paths."""
    algs = [dataclasses.replace(a, history=_best_paths_have_max_windows) if a.name == "olia" else a
            for a in net.algorithms]
    return net.with_algorithms(algs)


def solve_equilibrium(
    net: Network,
    x0: np.ndarray | None = None,
    tol: float = 1e-10,
    starts: Sequence[float] = (0.5, 0.1, 1.0, 0.02),
) -> Equilibrium:
    """Solve (8)-(9) directly as a nonlinear complementarity problem.

    Each complementarity pair is written with the Fischer-Burmeister function and the square
    system is solved by :func:`scipy.optimize.least_squares` (trust-region reflective) in
    scaled variables (rates over their route scale, prices over ``2/(tau c)^2``); the route
    condition uses ``(q - phi)/(q + phi)``, which has the sign and zero set of ``q - phi`` but
    stays bounded where ``phi`` blows up.  Several starting points are tried and, if none
    reaches ``tol``, the fluid ODE is integrated and its end point used as a start.

    OLIA's ``phi`` is discontinuous in the prices (its ``alpha_r`` switches with the best-path
    set).  At an equilibrium every best path must already be a max-window path (else
    ``alpha != 0`` keeps windows moving), so ``alpha = 0`` and OLIA satisfies the Coupled-type
    conditions ``phi_r = 2/(tau_r^2 ||x_s||^2)`` (Khalili et al. 2013, Thm. 3); where those
    leave the split between paths free, OLIA's drift selects equal windows on the best paths,
    which we impose by minimising the window spread subject to (8)-(9).

    Parameters
    ----------
    net : Network
    x0 : ndarray, optional
        Initial rates.
    tol : float
        Accept a solution whose largest scaled residual is below this.
    starts : sequence of float
        Initial scaled rates tried when ``x0`` is not given.

    Returns
    -------
    Equilibrium
    """
    has_olia = any(a.name == "olia" for a in net.algorithms)
    work = _olia_surrogate(net) if has_olia else net
    R = work.n_routes
    nd = int(work.dynamic.sum())
    best: np.ndarray | None = None
    best_res = np.inf
    guesses = []
    if x0 is not None:
        guesses.append(np.concatenate([np.asarray(x0, float) / work.rate_scale, np.ones(nd)]))
    guesses += [np.concatenate([np.full(R, s), np.ones(nd)]) for s in starts]

    def attempt(z0):
        nonlocal best, best_res
        sol = least_squares(
            lambda z: _residuals(work, z), z0, method="trf",
            xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=4000,
        )
        res = float(np.max(np.abs(sol.fun)))
        if res < best_res:
            best, best_res = sol.x, res

    for z0 in guesses:
        attempt(z0)
        if best_res < tol:
            break
    if best_res >= tol:
        traj = simulate(work, t_end=200.0 * float(work.tau.max()) + 60.0, n_points=2)
        z0 = np.concatenate(
            [traj.x[:, -1] / work.rate_scale, traj.p[work.dynamic, -1] / work.price_scale[work.dynamic]]
        )
        attempt(z0)
    eq = _as_equilibrium(work, best)
    if has_olia:
        eq = _olia_equal_windows(work, eq)
    eq.network = net
    return eq


def _olia_equal_windows(work: Network, eq: Equilibrium) -> Equilibrium:
    """Among solutions of OLIA's (alpha = 0) equilibrium conditions, pick equal windows on the
    best paths of each OLIA source (see :func:`solve_equilibrium`)."""
    R = work.n_routes
    dyn = work.dynamic
    xs, ps = work.rate_scale, work.price_scale
    z_star = np.concatenate([eq.x / xs, eq.p[dyn] / ps[dyn]])
    groups = []
    for s, idx in enumerate(work.groups):
        if work.algorithms[s].name != "olia" or idx.size < 2:
            continue
        quality = work.tau[idx] ** 2 * eq.q[idx]
        best = idx[quality <= quality.min() * (1 + 1e-6)]
        if best.size >= 2:
            groups.append(best)
    if not groups:
        return eq

    def spread(z):
        w = np.maximum(z[:R], 0) * xs * work.tau
        return sum(float(np.sum((w[g] - w[g].mean()) ** 2)) for g in groups) / float(np.sum(w**2))

    cons = {"type": "eq", "fun": lambda z: _residuals(work, z)}
    sol = minimize(spread, z_star, constraints=[cons], method="SLSQP",
                   options={"ftol": 1e-14, "maxiter": 500})
    z = sol.x
    # polish: exact solution of the conditions starting from the tie-broken point
    pol = least_squares(lambda zz: _residuals(work, zz), z, method="trf",
                        xtol=1e-15, ftol=1e-15, gtol=1e-15)
    cand = _as_equilibrium(work, pol.x)
    if cand.residual <= max(eq.residual, 1e-9) * 10:
        return cand
    return eq
