"""The rent-seeking (Tullock) game of RSF-MPTCP (Pokhrel & Williamson 2020, Section 3).

Players and utilities
---------------------
``mode="subflow"`` (default): every subflow is a player with a scalar action ``lambda_a > 0``
(``a = (n, i)``: connection ``n``, path ``i``), and utility::

    U_a(lambda) = lambda_a / Lambda - p_hat * lambda_a,      Lambda = sum of all actions

which is (6) for one connection and the summand of (15) for ``N`` connections.

``mode="connection"``: connection ``n`` is a player with the vector action ``lambda^n`` and
utility (15), ``U^n = sum_i (lambda_i^n / Lambda - p_hat lambda_i^n)``.

Pseudo-gradient (10) and its Jacobian ``G``
-------------------------------------------
``g_a(lambda, z) = z_a dU_a / d lambda_a``.  (Seed 001 prints every row as a derivative by
``lambda_1``; the surrounding text, Rosen 1965, makes the own-action derivative meant.)  For the
subflow game::

    g_a = z_a ((Lambda - lambda_a) / Lambda^2 - p_hat)
    G_ab = z_a ((1 - delta_ab) / Lambda^2 - 2 (Lambda - lambda_a) / Lambda^3)

and for the connection game the same with ``lambda_a`` replaced by the connection's total
``Lambda^n`` and ``delta_ab`` by "same connection".  ``G`` does not depend on ``p_hat``.

Diagonal strict concavity (Pokhrel & Williamson 2020 "condition C0")
    ``G + G^T`` negative definite.  For ``K = 2`` subflows::

        G + G^T = Lambda^{-3} [[-4 z1 l2, (z1 - z2)(l1 - l2)], [(z1 - z2)(l1 - l2), -4 z2 l1]]

    which is negative definite iff ``16 z1 z2 l1 l2 > (z1 - z2)^2 (l1 - l2)^2``; on the box
    ``[a, b]^2`` this holds for all points iff ``z2/z1`` lies strictly between
    ``r_pm = (m + 8 -+ 4 sqrt(m + 4)) / m`` with ``m = (b - a)^2 / (a b)``.  For ``z`` proportional
    to ``1`` it holds in the whole open orthant, for any ``K`` (then
    ``G + G^T = -2 Lambda^{-3} (Lambda (I + 1 1^T) - lambda 1^T - 1 lambda^T)``, positive
    definite inside).  In the connection game with ``K >= 2`` paths it never holds strictly:
    moving rate between two paths of one connection leaves every utility unchanged.

Constraints
    (7)/(12): ``sum of all lambda <= B``;  (16): ``sum_n lambda_i^n <= C_i`` for every path
    (then ``B = sum_i C_i`` and (12) is implied).  Actions are bounded below by ``lb > 0``
    because (6) is undefined at ``Lambda = 0`` (Pokhrel & Williamson 2020 requires ``lambda_i > 0``).

Normalized (Rosen) equilibrium
    For weights ``z`` the normalized equilibrium solves the variational inequality
    ``VI(F, X)`` with ``F = -g(., z)`` on the feasible set ``X``; the shared constraint's
    multipliers are then ``mu / z_a`` for player ``a``.  Solved by the projected extragradient
    method (Korpelevich) with a backtracking step (Khobotov), which converges for monotone
    ``F``; DSC makes ``F`` strictly monotone, hence the equilibrium unique (Rosen 1965, Thm 2).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import nnls

__all__ = [
    "BestResponsePath",
    "FlowTrajectory",
    "GameSolution",
    "RentSeekingGame",
    "dsc_ratio_interval_k2",
    "project_capped",
]


def project_capped(v: np.ndarray, lb: float, cap: float) -> np.ndarray:
    """Euclidean projection of ``v`` onto ``{u : u >= lb, sum(u) <= cap}``.

    Parameters
    ----------
    v : ndarray
    lb : float
        Lower bound of every component.
    cap : float
        Upper bound of the sum (must be ``>= lb * v.size``).

    Returns
    -------
    ndarray
    """
    u = np.maximum(v, lb)
    if u.sum() <= cap:
        return u
    # Otherwise the sum constraint is active: u = max(v - t, lb) with t chosen so that the sum
    # is cap, i.e. the projection of v - lb onto the simplex of size cap - n lb (sort-based,
    # Held-Wolfe-Crowder / Duchi et al. 2008).
    w = np.asarray(v, float) - lb
    radius = cap - lb * w.size
    srt = np.sort(w)[::-1]
    css = np.cumsum(srt) - radius
    k = np.arange(1, w.size + 1)
    rho = np.flatnonzero(srt - css / k > 0)[-1]
    t = css[rho] / (rho + 1)
    return np.maximum(w - t, 0.0) + lb


def dsc_ratio_interval_k2(a: float, b: float) -> tuple[float, float]:
    """Open interval of ``z2/z1`` for which DSC holds on the whole box ``[a, b]^2`` (K = 2).

    Parameters
    ----------
    a, b : float
        ``0 < a < b``: bounds of each subflow's rate.

    Returns
    -------
    (r_minus, r_plus) : tuple of float
        ``r_minus * r_plus = 1``; the interval shrinks to ``{1}`` as ``a / b -> 0``.
    """
    if not 0 < a < b:
        raise ValueError("dsc_ratio_interval_k2: need 0 < a < b")
    m = (b - a) ** 2 / (a * b)
    root = 4.0 * np.sqrt(m + 4.0)
    return (m + 8.0 - root) / m, (m + 8.0 + root) / m


@dataclass
class GameSolution:
    """A normalized equilibrium found by the extragradient method.

    Attributes
    ----------
    lam : ndarray, shape (N, K)
        Equilibrium actions.
    iterations : int
    natural_residual : float
        ``max |lambda - P_X(lambda - F(lambda))|`` relative to the scale ``B``.
    kkt_residual : float
        Largest violation of stationarity, sign and complementarity with multipliers fitted by
        non-negative least squares, relative to ``max |F|``.
    multipliers : ndarray
        Multipliers of the shared capacity constraint(s).
    path : ndarray, shape (iterations+1, N*K)
        Iterates (for plots).
    """

    lam: np.ndarray
    iterations: int
    natural_residual: float
    kkt_residual: float
    multipliers: np.ndarray
    path: np.ndarray


@dataclass
class FlowTrajectory:
    """A trajectory of the projected pseudo-gradient flow (Rosen's dynamics).

    Attributes
    ----------
    t : ndarray, shape (m,)
        Times (continuous-time units: ``g`` has units of rate per time).
    lam : ndarray, shape (m, N*K)
        States.
    segments : int
        Number of smooth pieces (active-set changes + 1).
    speed : float
        ``|d lambda / dt|`` at the end, relative to ``B`` (0 only at an equilibrium).
    """

    t: np.ndarray
    lam: np.ndarray
    segments: int
    speed: float

    def distance(self, lam_star: np.ndarray) -> np.ndarray:
        """Euclidean distance of every state to ``lam_star`` (Rosen's Lyapunov function is
        half its square)."""
        return np.linalg.norm(self.lam - np.ravel(lam_star)[None, :], axis=1)


@dataclass
class BestResponsePath:
    """Iterates of best-response dynamics.

    Attributes
    ----------
    lam : ndarray, shape (rounds+1, N*K)
        State after every round (a round updates every player once).
    rounds : int
    converged : bool
        ``max |lambda_{k+1} - lambda_k| <= tol * B`` reached.
    """

    lam: np.ndarray
    rounds: int
    converged: bool

    def distance(self, lam_star: np.ndarray) -> np.ndarray:
        """Euclidean distance of every round's state to ``lam_star``."""
        return np.linalg.norm(self.lam - np.ravel(lam_star)[None, :], axis=1)


class RentSeekingGame:
    """Seed 001's rent-seeking game among MPTCP subflows (or connections).

    Parameters
    ----------
    n_connections : int
        ``N``.
    n_paths : int
        ``K``.
    p_hat : float
        Unit cost ``p_hat`` of rate in (6)/(15).
    mode : {"subflow", "connection"}
        Who the players are (see module docstring).
    """

    def __init__(self, n_connections: int = 1, n_paths: int = 2, p_hat: float = 0.0,
                 mode: str = "subflow") -> None:
        if mode not in ("subflow", "connection"):
            raise ValueError(f"game: mode={mode!r}; allowed: 'subflow', 'connection'")
        if n_connections < 1 or n_paths < 1 or n_connections * n_paths < 2:
            raise ValueError("game: need N >= 1, K >= 1 and at least two subflows")
        if p_hat < 0:
            raise ValueError("game: p_hat must be >= 0")
        self.N, self.K, self.p_hat, self.mode = n_connections, n_paths, float(p_hat), mode

    # --- players ---------------------------------------------------------------------------
    @property
    def n_players(self) -> int:
        """Number of players (subflows or connections)."""
        return self.N * self.K if self.mode == "subflow" else self.N

    def _player_of_var(self) -> np.ndarray:
        idx = np.arange(self.N * self.K)
        return idx if self.mode == "subflow" else idx // self.K

    def _own(self, lam: np.ndarray) -> np.ndarray:
        """Per variable: the action quantity its player's share is computed from."""
        lam = np.asarray(lam, float).reshape(self.N, self.K)
        if self.mode == "subflow":
            return lam.ravel()
        return np.repeat(lam.sum(axis=1), self.K)

    def utilities(self, lam: np.ndarray) -> np.ndarray:
        """Utility of every player, (6)/(15)."""
        lam = np.asarray(lam, float).reshape(self.N, self.K)
        total = lam.sum()
        per_sub = lam / total - self.p_hat * lam
        return per_sub.ravel() if self.mode == "subflow" else per_sub.sum(axis=1)

    def _weights(self, z) -> np.ndarray:
        z = np.broadcast_to(np.asarray(z, float), (self.n_players,))
        if np.any(z < 0) or not np.any(z > 0):
            raise ValueError("game: weights z must be non-negative and not all zero")
        return z[self._player_of_var()]

    def pseudo_gradient(self, lam: np.ndarray, z=1.0) -> np.ndarray:
        """``g(lambda, z)`` of (10): weighted derivative of each player's utility by its own
        action(s), one entry per subflow variable."""
        lam = np.asarray(lam, float).ravel()
        total = lam.sum()
        return self._weights(z) * ((total - self._own(lam)) / total**2 - self.p_hat)

    def jacobian(self, lam: np.ndarray, z=1.0) -> np.ndarray:
        """Jacobian ``G = d g / d lambda`` (analytic)."""
        lam = np.asarray(lam, float).ravel()
        total = lam.sum()
        pv = self._player_of_var()
        same = (pv[:, None] == pv[None, :]).astype(float)
        zz = self._weights(z)
        return zz[:, None] * ((1.0 - same) / total**2 - 2.0 * (total - self._own(lam))[:, None] / total**3)

    def dsc_margin(self, lam: np.ndarray, z=1.0) -> float:
        """Largest eigenvalue of ``(G + G^T)/2`` times ``Lambda^3`` (scale-free); DSC at this
        point iff negative."""
        lam = np.asarray(lam, float).ravel()
        G = self.jacobian(lam, z)
        return float(np.linalg.eigvalsh((G + G.T) / 2).max() * lam.sum() ** 3)

    def dsc_holds(self, z=1.0, box: tuple[float, float] = (0.01, 1.0), n_samples: int = 2000,
                  seed: int = 0, tol: float = 1e-12) -> bool:
        """Check DSC for weights ``z`` on random points of the box ``[a, b]^(N K)``, its corners
        included.

        Returns
        -------
        bool
            True if ``G + G^T`` is negative definite at every sampled point.
        """
        a, b = box
        rng = np.random.default_rng(seed)
        n = self.N * self.K
        pts = [rng.uniform(a, b, n) for _ in range(n_samples)]
        if n <= 12:
            corners = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
            pts += [np.where(c, b, a).astype(float) for c in corners]
        return all(self.dsc_margin(p, z) < -tol * (b / a) ** 3 for p in pts)

    # --- feasible set ------------------------------------------------------------------------
    def project(self, lam: np.ndarray, capacity, lb: float) -> np.ndarray:
        """Projection onto (7)/(12) (``capacity`` a scalar ``B``) or (16) (a length-``K``
        vector of path capacities ``C_i``), with ``lambda >= lb``."""
        lam = np.asarray(lam, float).reshape(self.N, self.K)
        cap = np.asarray(capacity, float)
        if cap.ndim == 0:
            return project_capped(lam.ravel(), lb, float(cap))
        out = np.empty_like(lam)
        for i in range(self.K):
            out[:, i] = project_capped(lam[:, i], lb, float(cap[i]))
        return out.ravel()

    def _constraints(self, capacity) -> tuple[np.ndarray, np.ndarray]:
        cap = np.asarray(capacity, float)
        n = self.N * self.K
        if cap.ndim == 0:
            return np.ones((1, n)), cap.reshape(1)
        if cap.shape != (self.K,):
            raise ValueError(f"game: capacity must be a scalar B or {self.K} path capacities")
        A = np.zeros((self.K, n))
        for i in range(self.K):
            A[i, i::self.K] = 1.0
        return A, cap

    # --- equilibrium -------------------------------------------------------------------------
    def solve(self, z=1.0, capacity=1.0, lam0: np.ndarray | None = None, lb: float | None = None,
              tol: float = 1e-13, max_iter: int = 200_000, keep_path: bool = False) -> GameSolution:
        """Normalized equilibrium by the projected extragradient method.

        Parameters
        ----------
        z : float or ndarray
            Player weights (Rosen's ``r``).
        capacity : float or ndarray
            ``B`` for (7)/(12), or the ``K`` path capacities of (16).
        lam0 : ndarray, optional
            Starting point (default: equal split of half the capacity).
        lb : float, optional
            Lower bound on every action (default ``1e-9 * B``).
        tol : float
            Stop when the natural residual (relative to ``B``) is below this.
        max_iter : int
        keep_path : bool
            Record the iterates.

        Returns
        -------
        GameSolution
        """
        _A, b = self._constraints(capacity)
        B = float(b.sum())
        lb = 1e-9 * B if lb is None else float(lb)
        n = self.N * self.K
        lam = self.project(np.full(n, 0.5 * B / n) if lam0 is None else np.ravel(lam0), capacity, lb)
        F = lambda v: -self.pseudo_gradient(v, z)
        step = 0.5 * B**2 / n
        path = [lam.copy()] if keep_path else []
        it = 0
        for it in range(1, max_iter + 1):
            f = F(lam)
            while True:
                y = self.project(lam - step * f, capacity, lb)
                fy = F(y)
                # Khobotov's rule: the step must not exceed ~1/Lipschitz along this move
                if step * np.linalg.norm(fy - f) <= 0.9 * np.linalg.norm(y - lam) or np.allclose(y, lam, rtol=0, atol=1e-300):
                    break
                step *= 0.5
            lam = self.project(lam - step * fy, capacity, lb)
            if keep_path:
                path.append(lam.copy())
            res = np.max(np.abs(lam - self.project(lam - step * F(lam), capacity, lb))) / B
            if res < tol:
                break
            step *= 1.2  # let the step grow back after backtracking
        nat = float(np.max(np.abs(lam - self.project(lam - B**2 * F(lam), capacity, lb))) / B)
        kkt, mu = self.kkt_residual(lam, z, capacity, lb)
        return GameSolution(lam.reshape(self.N, self.K), it, nat, kkt, mu,
                            np.array(path) if keep_path else np.empty((0, n)))

    def kkt_residual(self, lam: np.ndarray, z, capacity, lb: float, act_tol: float = 1e-9) -> tuple[float, np.ndarray]:
        """KKT residual of the VI at ``lam``.

        Stationarity ``F + A^T mu - nu = 0`` with ``mu, nu >= 0`` fitted by NNLS on the
        constraints active within ``act_tol`` (relative); complementarity of the inactive ones
        holds by construction (their multipliers are zero), primal feasibility is measured.

        Returns
        -------
        (residual, mu) : tuple
            Residual relative to ``max |F|``; multipliers of the capacity constraint(s).
        """
        lam = np.asarray(lam, float).ravel()
        A, b = self._constraints(capacity)
        F = -self.pseudo_gradient(lam, z)
        # size of the terms that cancel in F (1/Lambda and p_hat), so a slack equilibrium with
        # F = 0 is measured against something meaningful
        scale = float(np.max(self._weights(z))) * (1.0 / lam.sum() + self.p_hat)
        act_cap = np.flatnonzero(A @ lam >= b * (1 - act_tol))
        act_lb = np.flatnonzero(lam <= lb * (1 + act_tol) + act_tol * b.sum() * 1e-3)
        cols = [A[j] for j in act_cap] + [-np.eye(lam.size)[j] for j in act_lb]
        if cols:
            M = np.array(cols).T
            coef, _ = nnls(M, -F)
            stat = F + M @ coef
        else:
            coef = np.zeros(0)
            stat = F
        mu = np.zeros(b.size)
        mu[act_cap] = coef[: act_cap.size]
        feas = max(0.0, float(np.max(A @ lam - b)) / b.sum(), float(np.max(lb - lam)) / b.sum())
        return float(max(np.max(np.abs(stat)) / scale, feas)), mu

    def uniqueness(self, z=1.0, capacity=1.0, n_starts: int = 20, seed: int = 0, **kw) -> dict:
        """Solve from ``n_starts`` random feasible points and measure the spread of solutions.

        Returns
        -------
        dict
            ``spread`` (max distance to the first solution, relative to ``B``), ``solutions``
            (array), ``max_kkt``.
        """
        _A, b = self._constraints(capacity)
        B = float(b.sum())
        rng = np.random.default_rng(seed)
        sols = []
        kkts = []
        for _ in range(n_starts):
            start = rng.uniform(0.0, 1.0, self.N * self.K) * B
            s = self.solve(z, capacity, lam0=start, **kw)
            sols.append(s.lam.ravel())
            kkts.append(s.kkt_residual)
        sols = np.array(sols)
        spread = float(np.max(np.abs(sols - sols[0])) / B)
        return {"spread": spread, "solutions": sols, "max_kkt": float(max(kkts))}

    # --- closed forms ------------------------------------------------------------------------
    def closed_form_single(self, z, B: float, lb: float | None = None) -> np.ndarray:
        """Normalized equilibrium of the one-connection subflow game under (7), in closed form.

        If ``p_hat >= (K-1)/(K B)`` the constraint is slack and the Nash equilibrium is
        symmetric, ``lambda_i = max((K-1)/(K^2 p_hat), lb)`` (below ``lb`` every player's
        gradient is negative at ``lb``, so all sit there).  Otherwise ``Lambda = B``; with
        the players ``S`` above their bound, ``lambda_i = B - B^2 (p_hat + mu / z_i)`` for ``i`` in
        ``S``, ``lambda_i = lb`` elsewhere, and, from ``sum lambda = B``,
        ``mu = ((|S|-1) B + (K-|S|) lb - |S| p_hat B^2) / (B^2 sum_{j in S} 1/z_j)``.
        ``lambda_i`` grows with ``z_i``, so ``S`` is the ``|S|`` largest weights: players are
        moved to the bound, smallest weight first, until every free one is at or above it (KKT
        of the VI with the bound's multiplier ``nu_i = z_i (p_hat + mu/z_i) - (B - lb)/B^2 >= 0``).

        Parameters
        ----------
        z : float or array_like
            Player weights.
        B : float
            Capacity of (7).
        lb : float, optional
            Lower bound on every action, as in :meth:`solve` (default ``1e-9 * B``).

        Returns
        -------
        ndarray, shape (K,)

        Raises
        ------
        ValueError
            Not a one-connection subflow game, or no closed form: the shared constraint's
            multiplier would be negative with some players at their bound (then use
            :meth:`solve`).

        Examples
        --------
        >>> RentSeekingGame(1, 4, p_hat=0.0).closed_form_single((1, 2, 3, 4), 1.0).round(4)
        array([0.    , 0.0769, 0.3846, 0.5385])
        """
        if self.N != 1 or self.mode != "subflow":
            raise ValueError("closed form only for one connection, subflow players")
        K = self.K
        lb = 1e-9 * B if lb is None else float(lb)
        z = np.broadcast_to(np.asarray(z, float), (K,))
        p = self.p_hat
        if p >= (K - 1) / (K * B):
            return np.full(K, max((K - 1) / (K**2 * p), lb))
        free = np.ones(K, bool)
        while True:
            m = int(free.sum())
            mu = ((m - 1) * B + (K - m) * lb - m * p * B**2) / (B**2 * np.sum(1.0 / z[free]))
            lam = np.where(free, B - B**2 * (p + mu / z), lb)
            low = free & (lam < lb)
            if not low.any():
                break
            # The smallest weight among the free players goes to its bound (lambda_i grows with z_i).
            free[np.flatnonzero(free)[np.argmin(z[free])]] = False
        if mu < 0:
            raise ValueError(f"no closed form for z = {z.tolist()}, p_hat = {p}, B = {B}: use solve()")
        return lam

    # --- dynamics ----------------------------------------------------------------------------
    def _groups(self, capacity) -> list[tuple[np.ndarray, float]]:
        """Variables coupled by one capacity row: all of them for (7)/(12), path ``i``'s
        column for (16).  Every variable is in exactly one group, which is what makes the
        tangent-cone projection separable."""
        A, b = self._constraints(capacity)
        return [(np.flatnonzero(A[k]), float(b[k])) for k in range(b.size)]

    @staticmethod
    def _cone_project(v: np.ndarray, at_lb: np.ndarray, cap_active: bool) -> tuple[np.ndarray, np.ndarray, float]:
        """Project ``v`` (one group) onto the tangent cone ``{u_j >= 0 (j at its bound),
        sum(u) <= 0 (if the capacity is active)}``.

        Returns ``(u, nu, t)``: the projection, the multipliers of the lower bounds and the
        multiplier of the capacity row (``u = v - t 1 + nu``).
        """
        u = v.copy()
        u[at_lb] = np.maximum(v[at_lb], 0.0)
        if not cap_active or u.sum() <= 0.0:
            return u, np.where(at_lb, u - v, 0.0), 0.0
        # u_j = max(v_j - t, 0) on the bounds, v_j - t elsewhere, with sum(u) = 0.  Dropping
        # bound variables with v_j <= t raises the mean, so the set only shrinks.
        keep = np.ones(v.size, bool)
        while True:
            t = float(v[keep].mean())
            drop = keep & at_lb & (v <= t)
            if not drop.any():
                break
            keep &= ~drop
        u = np.where(keep, v - t, 0.0)
        return u, np.where(keep, 0.0, t - v), t

    def _binding(self, lam, g, groups, lb, tol):
        """Constraints whose multipliers in the tangent-cone projection of ``g`` are positive."""
        W_lb = np.zeros(lam.size, bool)
        W_cap = np.zeros(len(groups), bool)
        vel = np.empty_like(g)
        for k, (idx, cap) in enumerate(groups):
            u, nu, t = self._cone_project(g[idx], lam[idx] <= lb + tol, lam[idx].sum() >= cap - tol)
            vel[idx] = u
            W_lb[idx] = nu > 0.0
            W_cap[k] = t > 0.0
        return W_lb, W_cap, vel

    @staticmethod
    def _face_velocity(g, groups, W_lb, W_cap):
        """Projection of ``g`` onto the face's subspace, with the face's multipliers."""
        vel = np.where(W_lb, 0.0, g)
        nu = np.where(W_lb, -g, 0.0)
        ts = np.zeros(len(groups))
        for k, (idx, _) in enumerate(groups):
            if W_cap[k]:
                free = idx[~W_lb[idx]]
                ts[k] = g[free].mean()
                vel[free] -= ts[k]
                nu[idx[W_lb[idx]]] += ts[k]
        return vel, nu, ts

    def projected_flow(self, z=1.0, capacity=1.0, lam0: np.ndarray | None = None, t_end: float = 50.0,
                       lb: float | None = None, rtol: float = 1e-10, atol: float | None = None,
                       max_segments: int = 1000, method: str = "DOP853") -> FlowTrajectory:
        """Rosen's continuous-time dynamics (Rosen 1965, Section 5) of the weighted game.

        ``d lambda / dt = Proj_{T_X(lambda)}( g(lambda, z) )``: the pseudo-gradient (10) with
        Rosen's weights ``r = z``, projected onto the tangent cone of the feasible set ``X``
        ((7)/(12) or (16), and ``lambda >= lb``).  The projection is Rosen's
        ``r_i grad_i U_i + sum_j u_j grad h_j`` with *common* constraint multipliers ``u``, so the
        rest points are exactly the normalized equilibria for ``z``.  Under diagonal strict
        concavity ``|lambda - lambda*|^2`` decreases strictly along every trajectory (Rosen's
        Theorem 9): ``d/dt |lambda - lambda*|^2 / 2 <= -(lambda - lambda*)'(g(lambda*) - g(lambda))
        < 0``, the normal-cone part of the projection only helping.

        Integration: the projected field is discontinuous where the trajectory meets a face of
        ``X``, so ``solve_ivp`` (DOP853 by default) is run piecewise: on each piece the binding set is fixed
        and the field is its smooth projection onto that face; terminal events stop a piece
        when a free variable reaches ``lb``, a free capacity row fills, or a binding row's
        multiplier reaches zero (the trajectory leaves the face).  No step crosses a
        discontinuity (beyond the ``1e-11 B`` by which an event is located past its surface),
        so the error is the integrator's, not a smoothing's.

        Parameters
        ----------
        z : float or ndarray
            Player weights.
        capacity : float or ndarray
            ``B`` or the ``K`` path capacities.
        lam0 : ndarray, optional
            Start (projected onto ``X``); default the equal split of half the capacity.
        t_end : float
            Integration horizon.
        lb : float, optional
            Lower bound of every action (default ``1e-9 B``, as in :meth:`solve`).
        rtol, atol : float
            Integrator tolerances (``atol`` default ``1e-13 B``).
        max_segments : int
            Guard against chattering between faces.
        method : str
            ``solve_ivp`` method; with very unequal weights ``z`` the flow is stiff (rates
            ``~ z_a / Lambda^2``) and an implicit method (``"Radau"``, ``"LSODA"``) is faster.

        Returns
        -------
        FlowTrajectory
        """
        groups = self._groups(capacity)
        B = sum(c for _, c in groups)
        lb = 1e-9 * B if lb is None else float(lb)
        if any(c <= lb * idx.size for idx, c in groups):
            raise ValueError("game: every capacity must exceed lb times its number of subflows")
        atol = 1e-13 * B if atol is None else float(atol)
        # Events fire slightly *past* each switching surface (a state tol beyond a face, a
        # multiplier mtol below zero) and the state is snapped back onto X, so the next piece
        # starts strictly on the correct side and a switch can never re-fire at once.
        tol = 1e-11 * B
        mtol = 1e-12 * float(np.max(self._weights(z))) * (1.0 / B + self.p_hat)
        n = self.N * self.K
        lam = self.project(np.full(n, 0.5 * B / n) if lam0 is None else np.ravel(lam0), capacity, lb)
        ts, xs = [np.array([0.0])], [lam[None, :]]
        t0, seg = 0.0, 0
        while t0 < t_end and seg < max_segments:
            seg += 1
            W_lb, W_cap, _ = self._binding(lam, self.pseudo_gradient(lam, z), groups, lb, tol)

            def rhs(_t, x, W_lb=W_lb, W_cap=W_cap):
                return self._face_velocity(self.pseudo_gradient(x, z), groups, W_lb, W_cap)[0]

            events = []
            for j in range(n):
                if W_lb[j]:
                    events.append(lambda _t, x, j=j, W_lb=W_lb, W_cap=W_cap:
                                  self._face_velocity(self.pseudo_gradient(x, z), groups, W_lb, W_cap)[1][j] + mtol)
                else:
                    events.append(lambda _t, x, j=j: x[j] - lb + tol)
            for k, (idx, cap) in enumerate(groups):
                if W_cap[k]:
                    events.append(lambda _t, x, k=k, W_lb=W_lb, W_cap=W_cap:
                                  self._face_velocity(self.pseudo_gradient(x, z), groups, W_lb, W_cap)[2][k] + mtol)
                else:
                    events.append(lambda _t, x, idx=idx, cap=cap: cap - x[idx].sum() + tol)
            for e in events:
                e.terminal, e.direction = True, -1
            sol = solve_ivp(rhs, (t0, t_end), lam, method=method, rtol=rtol, atol=atol,
                            events=events, dense_output=False)
            if sol.status == -1:
                raise RuntimeError(f"game: projected flow integration failed: {sol.message}")
            lam = self.project(sol.y[:, -1], capacity, lb)  # snap onto the face just reached
            ts.append(sol.t[1:])
            xs.append(np.vstack([sol.y[:, 1:-1].T, lam[None, :]]) if sol.t.size > 1 else np.empty((0, n)))
            t0 = float(sol.t[-1])
        g = self.pseudo_gradient(lam, z)
        speed = float(np.linalg.norm(self._binding(lam, g, groups, lb, tol)[2]) / B)
        return FlowTrajectory(np.concatenate(ts), np.vstack(xs), seg, speed)

    def best_response(self, lam: np.ndarray, player: int, z=1.0, capacity=1.0, lb: float | None = None,
                      multipliers: np.ndarray | None = None) -> float:
        """Best response of subflow ``player`` to the others' current rates.

        With ``multipliers`` ``mu`` (one per capacity row, e.g. :attr:`GameSolution.multipliers`)
        the shared constraint is priced as in the normalized equilibrium: player ``a`` on path
        ``i`` pays ``mu_i / z_a`` per unit of rate on top of ``p_hat`` and solves
        ``max_{x >= lb} x / (x + s) - c_a x``, ``c_a = p_hat + mu_i / z_a``, ``s`` the others'
        total, whose solution is ``x = max(sqrt(s / c_a) - s, lb)`` (the objective is concave
        in ``x``; the stationary point is where ``s / (x + s)^2 = c_a``).

        With ``multipliers=None`` the constraint is split instead: the player maximises
        ``x / (x + s) - p_hat x`` over ``lb <= x <= the capacity the others leave`` (the
        generalized-Nash best response): ``min(max(sqrt(s / p_hat) - s, lb), room)``.

        Returns
        -------
        float
        """
        if self.mode != "subflow":
            raise ValueError("best response is defined for subflow players (mode='subflow'); in the "
                             "connection game (15) only each connection's total is determined")
        lam = np.asarray(lam, float).ravel()
        groups = self._groups(capacity)
        B = sum(c for _, c in groups)
        lb = 1e-9 * B if lb is None else float(lb)
        s = lam.sum() - lam[player]
        row = next(k for k, (idx, _) in enumerate(groups) if player in idx)
        zz = self._weights(z)[player]
        if multipliers is not None:
            c = self.p_hat + float(np.ravel(multipliers)[row]) / zz
            if c <= 0:
                raise ValueError("best response: zero marginal cost (p_hat = 0 and mu = 0); pass the "
                                 "equilibrium multipliers of a binding capacity")
            return max(np.sqrt(s / c) - s, lb)
        idx, cap = groups[row]
        room = cap - (lam[idx].sum() - lam[player])
        x = np.inf if self.p_hat == 0 else np.sqrt(s / self.p_hat) - s
        return float(min(max(x, lb), max(room, lb)))

    def best_response_dynamics(self, z=1.0, capacity=1.0, lam0: np.ndarray | None = None,
                               multipliers: np.ndarray | None = None, order: str = "sequential",
                               lb: float | None = None, max_rounds: int = 200,
                               tol: float = 1e-13) -> BestResponsePath:
        """Best-response dynamics of the subflow game (6)/(15).

        ``order="sequential"`` (Gauss-Seidel): players ``0, 1, ..., N K - 1`` in turn replace
        their rate by :meth:`best_response` to the *current* rates of the others.
        ``order="simultaneous"`` (Jacobi): all players respond to the previous round at once.
        The shared constraint is handled by :meth:`best_response`: priced with fixed
        ``multipliers`` (normalized-equilibrium pricing; the fixed points are then exactly the
        normalized equilibria, but the capacity can be exceeded on the way), or split
        (``multipliers=None``; every iterate is feasible, the fixed points are generalized Nash
        equilibria, in general not the normalized one).

        Returns
        -------
        BestResponsePath
        """
        if order not in ("sequential", "simultaneous"):
            raise ValueError(f"best_response_dynamics: order={order!r}; allowed: 'sequential', 'simultaneous'")
        groups = self._groups(capacity)
        B = sum(c for _, c in groups)
        lb = 1e-9 * B if lb is None else float(lb)
        n = self.N * self.K
        lam = self.project(np.full(n, 0.5 * B / n) if lam0 is None else np.ravel(lam0), capacity, lb)
        path = [lam.copy()]
        converged = False
        for _ in range(max_rounds):
            new = lam.copy()
            for a in range(n):
                new[a] = self.best_response(new if order == "sequential" else lam, a, z, capacity, lb,
                                            multipliers)
            step = float(np.max(np.abs(new - lam)))
            lam = new
            path.append(lam.copy())
            if not np.all(np.isfinite(lam)):
                break
            if step <= tol * B:
                converged = True
                break
        return BestResponsePath(np.array(path), len(path) - 1, converged)
