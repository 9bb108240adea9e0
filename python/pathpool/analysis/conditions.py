"""Conditions C0-C5, responsiveness (Theorem III.5) and window oscillation (eq. (13)) of Peng et al. 2016.

The extraction of Peng et al. 2016 lost the formulas of the conditions; the statements used here are
reconstructed from the surviving prose (Section III-A) and the proofs (Appendices A-F):

C0  the Jacobian ``d phi_s / d x_s`` is symmetric (then a utility function exists, Thm III.1).
C1  for any finite prices a non-negative solution ``x_s(q)`` of (8) exists, and the traffic a
    source sends through a link does not increase when that link's price rises (checked here on
    the source alone, each route over its own link: ``x_r`` non-increasing in ``q_r`` and
    ``||x_s(t q)||_1`` non-increasing in ``t``).
C2  the symmetric part of ``d phi_s / d x_s`` is negative definite.
C3  ``x_r = 0`` only at infinite price, i.e. ``phi_r -> inf`` as ``x_r -> 0`` (the second half,
    full row rank of R, is a property of the network, see :func:`full_row_rank`).
C4  the aggregate equilibrium rate does not increase with the prices:
    ``1^T (d phi_s/d x_s)^{-1} <= 0`` componentwise (``dx_s/dq_s = (d phi_s/d x_s)^{-1}`` by the
    implicit function theorem, as the text after C4 explains).
C5  ``phi_r(x_s) -> 0`` as ``x_r -> inf`` with the other rates fixed ("the sending rate on a
    route grows unbounded when the congestion price is zero"; used so in Appendix F).

Jacobians are central finite differences (relative step 1e-6), so points where ``max`` or
``min`` switch branches (measure zero under random sampling) are not differentiable there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from pathpool.analysis.algorithms import Algorithm, get_algorithm
from pathpool.analysis.fluid import Equilibrium, Network, solve_equilibrium

__all__ = [
    "PAPER_TABLE_ONE",
    "ConditionReport",
    "check_conditions",
    "full_row_rank",
    "linearization",
    "phi_jacobian",
    "responsiveness",
    "table_one",
    "window_oscillation",
]

#: Table I of Peng et al. 2016 as extracted (columns C0, C1, C2/C3, C4, C5).
PAPER_TABLE_ONE = pd.DataFrame(
    {
        "C0": [True, True, False, False, False],
        "C1": [True] * 5,
        "C2C3": [True, False, True, True, True],
        "C4": [True] * 5,
        "C5": [True] * 5,
    },
    index=["ewtcp", "coupled", "semicoupled", "max", "generalized"],
)


def phi_jacobian(alg: Algorithm | str, x: np.ndarray, tau: np.ndarray, rel_step: float = 1e-6) -> np.ndarray:
    """Jacobian ``d phi_s / d x_s`` of one source by central differences.

    Parameters
    ----------
    alg : Algorithm or str
    x, tau : ndarray
        Rates (packets/s) and RTTs (s) of the source's routes.
    rel_step : float
        Relative finite-difference step.

    Returns
    -------
    ndarray, shape (n, n)
        ``J[r, k] = d phi_r / d x_k``.
    """
    alg = get_algorithm(alg)
    x = np.asarray(x, float)
    tau = np.asarray(tau, float)
    n = x.size
    J = np.empty((n, n))
    for k in range(n):
        h = rel_step * x[k]
        xp, xm = x.copy(), x.copy()
        xp[k] += h
        xm[k] -= h
        J[:, k] = (alg.phi(xp, tau) - alg.phi(xm, tau)) / (2 * h)
    return J


@dataclass
class ConditionReport:
    """Verdicts of C0-C5 for one algorithm at one operating point.

    Attributes
    ----------
    C0, C1, C2, C3, C4, C5 : bool or None
        ``None`` where the condition is not defined (price-dependent ``phi``) or not checked.
    asymmetry : float
        ``||J - J^T|| / ||J||`` (Frobenius).
    max_sym_eig : float
        Largest eigenvalue of the symmetric part of ``J``, relative to ``||J||``.
    c4_max : float
        Largest component of ``1^T J^{-1}`` relative to ``||J^{-1}||``.
    """

    C0: bool | None
    C1: bool | None
    C2: bool | None
    C3: bool | None
    C4: bool | None
    C5: bool | None
    asymmetry: float
    max_sym_eig: float
    c4_max: float


def _c1_check(alg: Algorithm, x: np.ndarray, tau: np.ndarray, rng: np.random.Generator) -> bool:
    """C1 on the source alone: route r over its own random-loss link with price q_r."""
    n = x.size
    phi = alg.phi(x, tau)
    q = phi * np.exp(rng.uniform(-1.0, 1.0, n))
    q = np.clip(q, 1e-7, 0.5)

    def solve(qq):
        net = Network(np.eye(n), np.full(n, np.inf), tau, np.zeros(n, int), [alg], loss=qq)
        return solve_equilibrium(net)

    base = solve(q)
    if base.residual > 1e-8:
        return False
    total = base.x.sum()
    up = solve(q * 1.2)
    if up.residual > 1e-8 or up.x.sum() > total * (1 + 1e-6):
        return False
    for r in range(n):
        qq = q.copy()
        qq[r] *= 1.2
        e = solve(qq)
        if e.residual > 1e-8 or e.x[r] > base.x[r] * (1 + 1e-6) + 1e-9 * total:
            return False
    return True


def check_conditions(
    alg: Algorithm | str,
    x: np.ndarray,
    tau: np.ndarray,
    tol: float = 1e-6,
    check_c1: bool = False,
    rng: np.random.Generator | None = None,
) -> ConditionReport:
    """Check C0-C5 of Peng et al. 2016 for one source at the operating point ``x``.

    Parameters
    ----------
    alg : Algorithm or str
    x, tau : ndarray
        Positive rates and RTTs of the source's routes.
    tol : float
        Relative tolerance (finite-difference noise is about 1e-9).
    check_c1 : bool
        Also check C1 (solves three or more small equilibria; slower).
    rng : numpy.random.Generator, optional
        Random prices for the C1 check.

    Returns
    -------
    ConditionReport
    """
    alg = get_algorithm(alg)
    x = np.asarray(x, float)
    tau = np.asarray(tau, float)
    if alg.price_dependent:
        return ConditionReport(None, None, None, None, None, None, np.nan, np.nan, np.nan)
    J = phi_jacobian(alg, x, tau)
    norm = np.linalg.norm(J)
    asym = np.linalg.norm(J - J.T) / norm
    # Definiteness is invariant under congruence, so test the diagonally scaled symmetric part:
    # rates spanning decades make the raw eigenvalues span many decades too.
    H = (J + J.T) / 2
    d = np.sqrt(np.abs(np.diag(H)))
    d = np.where(d > 0, d, 1.0)
    sym_eig = float(np.linalg.eigvalsh(H / d[:, None] / d[None, :]).max())
    c2 = bool(sym_eig < -tol)
    # C4 uses dx_s/dq_s = J^{-1}; where J is singular (Coupled) the pseudo-inverse gives the
    # response of the aggregate along the directions where it is defined.
    _U, sv, _Vt = np.linalg.svd(J)
    Jinv = np.linalg.pinv(J, rcond=1e-10) if sv.min() < 1e-10 * sv.max() else np.linalg.inv(J)
    row = np.ones(x.size) @ Jinv
    scale = np.abs(Jinv).sum(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    c4_max = float((row / scale).max())
    c4 = bool(c4_max <= tol)
    phi0 = alg.phi(x, tau)
    c3 = True
    c5 = True
    for r in range(x.size):
        small, big = x.copy(), x.copy()
        small[r] *= 1e-6
        big[r] *= 1e6
        c3 &= bool(alg.phi(small, tau)[r] > 1e3 * phi0[r])
        c5 &= bool(alg.phi(big, tau)[r] < 1e-3 * phi0[r])
    c1 = None
    if check_c1:
        c1 = _c1_check(alg, x, tau, rng or np.random.default_rng(0))
    return ConditionReport(bool(asym < tol), c1, c2, c3, c4, c5, float(asym), float(sym_eig), c4_max)


def full_row_rank(net: Network, active: np.ndarray | None = None) -> bool:
    """Second half of C3: the (active part of the) routing matrix has full row rank."""
    Rm = net.routing if active is None else net.routing[active]
    return bool(np.linalg.matrix_rank(Rm) == Rm.shape[0])


# -------------------------------------------------------------------------------------------
# responsiveness (Section III-E)
# -------------------------------------------------------------------------------------------


def linearization(eq: Equilibrium) -> dict:
    """Jacobian of (3)-(4) at an equilibrium (Peng et al. 2016 eq. (12)).

    Links with zero price and routes with zero rate are removed, as the paper does ("assume all
    links are active ... otherwise remove"); random-loss prices are constants and drop out.
    With ``K = diag(k_r)``, ``Phi' = d phi / d x`` (block diagonal over sources),
    ``Gamma = diag(gamma_l)`` and ``R`` the active routing matrix::

        J = [[K Phi',  -K R^T],
             [Gamma R,   0   ]]

    Parameters
    ----------
    eq : Equilibrium

    Returns
    -------
    dict
        ``J``, ``K`` (vector), ``Phi`` (matrix), ``Gamma`` (vector), ``R`` (active routing),
        ``routes`` and ``links`` (indices kept).
    """
    net = eq.network
    routes = np.flatnonzero(eq.x > 1e-9 * net.rate_scale)
    links = np.flatnonzero(net.dynamic & (eq.p > 1e-12 * net.price_scale))
    Phi = np.zeros((routes.size, routes.size))
    pos = {r: i for i, r in enumerate(routes)}
    for s, idx in enumerate(net.groups):
        used = [r for r in idx if r in pos]
        if not used:
            continue
        alg = net.algorithms[s]
        if alg.price_dependent:
            raise ValueError(f"{alg.title}: phi depends on prices; linearization undefined")
        Js = phi_jacobian(alg, eq.x[used], net.tau[used])
        ii = [pos[r] for r in used]
        Phi[np.ix_(ii, ii)] = Js
    K = net.gain(eq.x, eq.q)[routes]
    G = net.gamma[links]
    Ra = net.routing[np.ix_(links, routes)]
    top = np.hstack([K[:, None] * Phi, -K[:, None] * Ra.T])
    bottom = np.hstack([G[:, None] * Ra, np.zeros((links.size, links.size))])
    return {"J": np.vstack([top, bottom]), "K": K, "Phi": Phi, "Gamma": G, "R": Ra,
            "routes": routes, "links": links}


def responsiveness(eq: Equilibrium) -> dict:
    """Responsiveness of the equilibrium (Peng et al. 2016 Theorem III.5).

    The proof of Theorem III.5 (Appendix E) rests on the identity, for an eigenpair
    ``J (v, w) = lambda (v, w)``::

        Re(lambda) = v* H v / (v* K^{-1} v + w* Gamma^{-1} w),   H = (Phi' + Phi'^T) / 2,

    so C2 (``H`` negative definite) gives ``Re(lambda) < 0``.  The closed form of the bound
    ``rho`` in the theorem did not survive extraction; we report the exact spectral abscissa,
    the identity's largest violation (a correctness check), and the bounds that follow from the
    identity: ``lambda_min(K^{1/2} H K^{1/2}) <= Re(lambda) < 0``.

    Parameters
    ----------
    eq : Equilibrium

    Returns
    -------
    dict
        ``abscissa`` (max real part of the eigenvalues), ``lower_bound``,
        ``identity_error`` (largest relative error of the identity over eigenpairs),
        ``eigenvalues``.
    """
    lin = linearization(eq)
    J, K, Phi, G = lin["J"], lin["K"], lin["Phi"], lin["Gamma"]
    n = K.size
    lam, V = np.linalg.eig(J)
    H = (Phi + Phi.T) / 2
    err = 0.0
    for i in range(lam.size):
        v, w = V[:n, i], V[n:, i]
        num = np.real(np.conj(v) @ H @ v)
        den = np.real(np.conj(v) @ (v / K)) + np.real(np.conj(w) @ (w / G)) if G.size else np.real(np.conj(v) @ (v / K))
        if den > 0:
            err = max(err, abs(num / den - lam[i].real) / max(abs(lam[i]), 1e-300))
    sk = np.sqrt(K)
    lower = float(np.linalg.eigvalsh(sk[:, None] * H * sk[None, :]).min())
    return {"abscissa": float(lam.real.max()), "lower_bound": lower,
            "identity_error": float(err), "eigenvalues": lam}


# -------------------------------------------------------------------------------------------
# window oscillation (Section III-F)
# -------------------------------------------------------------------------------------------


def window_oscillation(alg: Algorithm | str, x: np.ndarray, tau: np.ndarray, q: np.ndarray | None = None,
                       first_order: bool = True) -> float:
    """Expected relative drop of the aggregate window per loss, Peng et al. 2016 eq. (13).

    With ``1_r`` the indicator of a loss on route ``r`` within an RTT
    (``P(1_r = 1) = rho_r ~= q_r w_r``) the measure is
    ``S = E[sum_r 1_r D_r / sum_r w_r | sum_r 1_r >= 1]``; by Lemma III.1
    ``E[1_r | at least one] = rho_r / (1 - prod_k (1 - rho_k))``, and to first order in the
    loss probabilities, with ``D_r = k_r tau_r / x_r`` from (7) and ``q_r = phi_r``::

        S = sum_r k_r phi_r tau_r^2 / ( (sum_r tau_r x_r) (sum_r phi_r tau_r x_r) )    (13)

    Reno gives 1/2.

    Parameters
    ----------
    alg : Algorithm or str
    x, tau : ndarray
        Rates and RTTs of one source's routes.
    q : ndarray, optional
        Route loss probabilities; default ``phi(x)`` (equilibrium).
    first_order : bool
        True for (13); False for Lemma III.1 with ``rho_r = min(1, q_r w_r)``.

    Returns
    -------
    float
    """
    alg = get_algorithm(alg)
    x = np.asarray(x, float)
    tau = np.asarray(tau, float)
    q = alg.phi(x, tau) if q is None else np.asarray(q, float)
    w = x * tau
    D = alg.decrement(w, tau, q)
    if first_order:
        return float(np.sum(q * w * D) / (w.sum() * np.sum(q * w)))
    rho = np.minimum(1.0, q * w)
    return float(np.sum(rho * D) / w.sum() / (1 - np.prod(1 - rho)))


# -------------------------------------------------------------------------------------------
# Table I
# -------------------------------------------------------------------------------------------


def table_one(
    algorithms: list[str] | None = None,
    n_points: int = 200,
    n_routes: tuple[int, ...] = (2, 3),
    rtt: str = "equal",
    seed: int = 0,
    check_c1: bool = False,
) -> pd.DataFrame:
    """Regenerate Table I of Peng et al. 2016 over random operating points.

    Parameters
    ----------
    algorithms : list of str, optional
        Default: the paper's rows (ewtcp, coupled, semicoupled, max, generalized = Balia's
        (0.5, 0.2)) plus lia and balia.
    n_points : int
        Random operating points per algorithm.
    n_routes : tuple of int
        Numbers of routes per source to draw from.
    rtt : {"equal", "different"}
        Equal RTTs on all routes of the source (the setting of Theorem IV.1) or independent.
    seed : int
        Seed of the random generator (results are deterministic).
    check_c1 : bool
        Include the (slower) C1 check.

    Returns
    -------
    pandas.DataFrame
        One row per algorithm; for each condition the fraction of points where it holds, and
        ``paper_*`` columns with Table I's entry where the paper has the row.
    """
    if rtt not in ("equal", "different"):
        raise ValueError(f"table_one: rtt={rtt!r}; allowed: 'equal', 'different'")
    algorithms = algorithms or ["ewtcp(a=1)", "coupled", "semicoupled(a=1)", "max",
                                "generalized(eta=0.5,beta=0.2)", "lia", "balia"]
    rng = np.random.default_rng(seed)
    rows = []
    for name in algorithms:
        alg = get_algorithm(name)
        counts = {c: 0 for c in ("C0", "C1", "C2", "C3", "C2C3", "C4", "C5")}
        for _ in range(n_points):
            n = int(rng.choice(n_routes))
            x = np.exp(rng.uniform(np.log(10.0), np.log(2000.0), n))
            if rtt == "equal":
                tau = np.full(n, rng.uniform(0.01, 0.3))
            else:
                tau = rng.uniform(0.01, 0.3, n)
            rep = check_conditions(alg, x, tau, check_c1=check_c1, rng=rng)
            for c in counts:
                counts[c] += bool(rep.C2 and rep.C3) if c == "C2C3" else bool(getattr(rep, c))
        row = {"algorithm": alg.title, "points": n_points}
        row.update({c: counts[c] / n_points for c in counts})
        if not check_c1:
            row["C1"] = np.nan
        key = alg.name
        if key in PAPER_TABLE_ONE.index:
            paper = PAPER_TABLE_ONE.loc[key]
            row.update({"paper_C0": paper.C0, "paper_C1": paper.C1, "paper_C2C3": paper.C2C3,
                        "paper_C4": paper.C4, "paper_C5": paper.C5})
        rows.append(row)
    return pd.DataFrame(rows)
