"""The rent-seeking (Tullock) game of RSF-MPTCP (seed 001, Section 3).

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

Diagonal strict concavity (seed 001 "condition C0")
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
    because (6) is undefined at ``Lambda = 0`` (seed 001 requires ``lambda_i > 0``).

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
from scipy.optimize import nnls

__all__ = ["RentSeekingGame", "GameSolution", "dsc_ratio_interval_k2", "project_capped"]


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
        A, b = self._constraints(capacity)
        B = float(b.sum())
        lb = 1e-9 * B if lb is None else float(lb)
        n = self.N * self.K
        lam = self.project(np.full(n, 0.5 * B / n) if lam0 is None else np.ravel(lam0), capacity, lb)
        F = lambda v: -self.pseudo_gradient(v, z)  # noqa: E731
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
        A, b = self._constraints(capacity)
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
    def closed_form_single(self, z, B: float) -> np.ndarray:
        """Normalized equilibrium of the one-connection subflow game under (7), in closed form.

        If ``p_hat >= (K-1)/(K B)`` the constraint is slack and the Nash equilibrium is
        symmetric, ``lambda_i = (K-1)/(K^2 p_hat)``.  Otherwise ``Lambda = B`` and
        ``lambda_i = B - B^2 (p_hat + mu / z_i)`` with
        ``mu = ((K-1)/B - K p_hat) / sum_j (1/z_j)``.

        Returns
        -------
        ndarray, shape (K,)
        """
        if self.N != 1 or self.mode != "subflow":
            raise ValueError("closed form only for one connection, subflow players")
        K = self.K
        z = np.broadcast_to(np.asarray(z, float), (K,))
        if self.p_hat >= (K - 1) / (K * B):
            return np.full(K, (K - 1) / (K**2 * self.p_hat))
        mu = ((K - 1) / B - K * self.p_hat) / np.sum(1.0 / z)
        return B - B**2 * (self.p_hat + mu / z)
