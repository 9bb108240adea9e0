"""The TCP-friendly region of Pluntke & Rio 2011, eq. (1), and linear rate allocation over it.

Pluntke & Rio 2011, eq. (1): a multipath flow over the path set ``R`` is TCP-friendly when

    for all S subset of R:  sum_{r in S} x_r <= max_{r in S} x_r^TCP.

Write ``T_r = x_r^TCP`` and ``f(S) = max_{r in S} T_r`` (``f(empty) = 0``). The region is
``F = {x >= 0 : x(S) <= f(S) for all S}``.

Why a greedy is exact (argument for :func:`allocate_greedy`)
-----------------------------------------------------------
1. ``f`` is normalised, monotone and submodular: for ``S subset S'`` and ``e`` not in ``S'``,
   ``f(S + e) - f(S) = (T_e - f(S))^+ >= (T_e - f(S'))^+ = f(S' + e) - f(S')`` because
   ``f(S) <= f(S')``. Hence ``F`` is a polymatroid, and by Edmonds (1970) the greedy algorithm
   maximises any linear objective ``c . x`` over it: visit paths in order of decreasing ``c_r``, stop at
   the first ``c_r <= 0``, and give the ``i``-th path ``f(A_i) - f(A_{i-1})`` where ``A_i`` holds the
   first ``i`` visited paths. Here that increment is ``(T_{e_i} - max_{j<i} T_{e_j})^+``: a path gets
   the excess of its TCP rate over the best TCP rate among the paths preferred to it.
2. Only nested constraints bind. For ``t`` a value of ``T``, let ``L(t) = {r : T_r <= t}``. Any ``S``
   whose best path has TCP rate ``t`` satisfies ``S subset L(t)`` and ``f(S) = f(L(t)) = t``, so with
   ``x >= 0`` the constraint of ``L(t)`` implies that of ``S``. ``F`` is therefore described by one
   constraint per distinct value of ``T`` (at most ``n``), on the chain of sets ``L(t)`` ordered by
   ``t``: this is the ``"chain"`` form of :func:`friendly_region_lp`. Tied TCP rates share one set
   ``L(t)`` holding all of them, so ties need no special handling in either method.
3. Ties in ``c`` may be visited in any order; the greedy value is the same (Edmonds), only the
   allocation may differ. We break them by larger ``T`` first, then by index, to be deterministic.

The greedy runs in ``O(n log n)``; the LP over all ``2^n - 1`` subsets (``"subsets"``) is kept as the
literal statement of eq. (1) to check it against.
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass

import highspy
import numpy as np

__all__ = [
    "Allocation",
    "allocate_greedy",
    "friendliness_violation",
    "friendly_region_lp",
    "subset_matrix",
]


@dataclass(frozen=True)
class Allocation:
    """A rate allocation and its objective value.

    Attributes
    ----------
    rates : numpy.ndarray
        Per-path rates (packets/s).
    objective : float
        ``c . rates``.
    method : str
        ``"greedy"``, ``"lp-subsets"`` or ``"lp-chain"``.
    """

    rates: np.ndarray
    objective: float
    method: str


def _check_inputs(x_tcp, c) -> tuple[np.ndarray, np.ndarray]:
    t = np.atleast_1d(np.asarray(x_tcp, dtype=float))
    c = np.atleast_1d(np.asarray(c, dtype=float))
    if t.ndim != 1 or t.size == 0 or t.shape != c.shape:
        raise ValueError(f"x_tcp and c must be 1-D with equal non-zero length; got {t.shape} and {c.shape}")
    if not np.all(np.isfinite(t) & (t >= 0)):
        raise ValueError(f"x_tcp must be finite and >= 0; got {t.tolist()}")
    if not np.all(np.isfinite(c)):
        raise ValueError(f"objective weights c must be finite; got {c.tolist()}")
    return t, c


def allocate_greedy(x_tcp, c) -> Allocation:
    """Maximise ``c . x`` over the TCP-friendly region exactly, by the polymatroid greedy.

    Parameters
    ----------
    x_tcp : array_like
        Single-path TCP rate ``x_r^TCP`` of each path (packets/s).
    c : array_like
        Objective weight per path (e.g. expected on-time delivery probability).

    Returns
    -------
    Allocation
        Optimal rates. See the module docstring for the optimality argument.
    """
    t, c = _check_inputs(x_tcp, c)
    order = np.lexsort((np.arange(t.size), -t, -c))  # c descending, then T descending, then index
    x = np.zeros_like(t)
    best = 0.0
    for r in order:
        if c[r] <= 0.0:
            break
        x[r] = max(t[r] - best, 0.0)
        best = max(best, t[r])
    return Allocation(rates=x, objective=float(c @ x), method="greedy")


def subset_matrix(n: int) -> np.ndarray:
    """Incidence matrix of all non-empty subsets of ``n`` paths, one row per subset.

    Parameters
    ----------
    n : int
        Number of paths (at most 20: the matrix has ``2^n - 1`` rows).

    Returns
    -------
    numpy.ndarray
        Boolean array of shape ``(2^n - 1, n)``.
    """
    if not 1 <= n <= 20:
        raise ValueError(f"subset enumeration needs 1 <= n <= 20 paths; got {n}")
    codes = np.arange(1, 2**n, dtype=np.int64)
    return ((codes[:, None] >> np.arange(n)) & 1).astype(bool)


def _chain_matrix(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    levels = np.unique(t)
    return t[None, :] <= levels[:, None], levels


def friendly_region_lp(x_tcp, c, probe_fraction: float = 0.0, constraints: str = "subsets") -> Allocation:
    """Maximise ``c . x`` over the TCP-friendly region (1) with HiGHS, optionally with probing.

    Parameters
    ----------
    x_tcp : array_like
        Single-path TCP rate of each path (packets/s).
    c : array_like
        Objective weight per path.
    probe_fraction : float, default 0
        Fraction ``phi`` of the total rate reserved for probing, spread equally over the ``n`` paths:
        ``x_r >= (phi / n) sum_s x_s`` for every path (Pluntke & Rio 2011, Section 3: "a small fixed fraction of
        the total throughput is used for probing"). Must lie in ``[0, 1)``.
    constraints : {"subsets", "chain"}
        ``"subsets"`` writes eq. (1) literally, one row per non-empty subset (``2^n - 1`` rows, so for
        up to about 16 paths); ``"chain"`` uses the equivalent nested sets ``L(t) = {r : T_r <= t}``
        (module docstring, point 2), each as an auxiliary variable ``y_t = y_{t'} + sum_{T_r = t} x_r``
        bounded by ``t``: O(n) rows and non-zeros, for any number of paths.

    Returns
    -------
    Allocation
        Optimal rates from HiGHS.

    Raises
    ------
    RuntimeError
        If HiGHS does not report an optimal solution.
    """
    t, c = _check_inputs(x_tcp, c)
    if not 0.0 <= probe_fraction < 1.0:
        raise ValueError(f"probe_fraction must lie in [0, 1); got {probe_fraction}")
    if constraints not in ("subsets", "chain"):
        raise ValueError(f"constraints must be 'subsets' or 'chain'; got {constraints!r}")
    n = t.size
    inf = highspy.kHighsInf
    # Columns: x_0..x_{n-1}, then auxiliaries. Rows are built as sparse triplets so that the chain form
    # stays O(n) in size: y_j = sum over {r : T_r <= t_j} is written as y_j = y_{j-1} + (paths at t_j).
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    lo: list[float] = []
    hi: list[float] = []
    col_ub = [inf] * n
    n_row = 0

    def add_row(idx, coef, lb, ub):
        nonlocal n_row
        rows.append(np.full(len(idx), n_row))
        cols.append(np.asarray(idx, dtype=np.int64))
        vals.append(np.asarray(coef, dtype=float))
        lo.append(lb)
        hi.append(ub)
        n_row += 1

    if constraints == "subsets":
        a = subset_matrix(n)
        ub = np.where(a, t[None, :], -np.inf).max(axis=1)
        r_idx, c_idx = np.nonzero(a)
        rows.append(r_idx)
        cols.append(c_idx)
        vals.append(np.ones(r_idx.size))
        lo.extend([-inf] * a.shape[0])
        hi.extend(ub.tolist())
        n_row = a.shape[0]
        total_col = n  # auxiliary X = sum x, used only by the probing rows
        col_ub.append(inf)
        add_row(list(range(n)) + [total_col], [1.0] * n + [-1.0], 0.0, 0.0)
    else:
        levels, inverse = np.unique(t, return_inverse=True)
        m = levels.size
        col_ub.extend(levels.tolist())  # y_j <= t_j: eq. (1) for the chain set L(t_j)
        for j in range(m):
            members = np.nonzero(inverse == j)[0]
            idx = [n + j] + members.tolist() + ([n + j - 1] if j else [])
            coef = [1.0] + [-1.0] * members.size + ([-1.0] if j else [])
            add_row(idx, coef, 0.0, 0.0)
        total_col = n + m - 1  # L(t_max) holds every path
    if probe_fraction > 0.0:
        for r in range(n):  # x_r >= (phi/n) X
            add_row([r, total_col], [1.0, -probe_fraction / n], 0.0, inf)
    n_col = len(col_ub)
    r_all = np.concatenate(rows)
    c_all = np.concatenate(cols)
    v_all = np.concatenate(vals)
    order = np.lexsort((c_all, r_all))
    r_all, c_all, v_all = r_all[order], c_all[order], v_all[order]
    starts = np.searchsorted(r_all, np.arange(n_row)).astype(np.int32)
    cost = np.concatenate([c, np.zeros(n_col - n)])
    h = _quiet_highs()
    empty_i = np.array([], dtype=np.int32)
    h.addCols(n_col, cost, np.zeros(n_col), np.asarray(col_ub, dtype=float), 0, empty_i, empty_i,
              np.array([], dtype=float))
    h.addRows(n_row, np.asarray(lo, dtype=float), np.asarray(hi, dtype=float), r_all.size, starts,
              c_all.astype(np.int32), v_all)
    h.changeObjectiveSense(highspy.ObjSense.kMaximize)
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        raise RuntimeError(f"HiGHS did not solve the rate allocation LP: {h.modelStatusToString(status)}")
    x = np.maximum(np.asarray(h.getSolution().col_value, dtype=float)[:n], 0.0)
    return Allocation(rates=x, objective=float(c @ x), method=f"lp-{constraints}")


_HIGHS_LOCK = threading.Lock()


def _quiet_highs() -> highspy.Highs:
    """A solver that writes nothing on stdout.

    HiGHS prints its banner from C, on file descriptor 1, when the first solver of the process is
    made, before any option can turn output off; under ``--json`` stdout must hold the document
    alone. So fd 1 points at /dev/null while the solver is made (flushed first, so that nothing of
    ours is lost), then output is switched off for good.
    """
    with _HIGHS_LOCK:
        sys.stdout.flush()
        saved = os.dup(1)
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, 1)
            h = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            os.close(null)
    h.setOptionValue("output_flag", False)
    return h


def friendliness_violation(x, x_tcp, subsets: bool = True) -> float:
    """Largest violation of eq. (1), ``max_S (x(S) - max_{r in S} x_r^TCP)``, and of ``x >= 0``.

    Parameters
    ----------
    x : array_like
        Rates to check.
    x_tcp : array_like
        Single-path TCP rates.
    subsets : bool, default True
        Check every non-empty subset literally (up to 20 paths); otherwise the nested chain sets,
        which is equivalent (module docstring, point 2).

    Returns
    -------
    float
        The largest violation; ``<= 0`` (up to rounding) means ``x`` is TCP-friendly.
    """
    x = np.asarray(x, dtype=float)
    t = np.asarray(x_tcp, dtype=float)
    if subsets:
        a = subset_matrix(t.size)
        ub = np.where(a, t[None, :], -np.inf).max(axis=1)
    else:
        a, ub = _chain_matrix(t)
    return float(max(np.max(a.astype(float) @ x - ub), np.max(-x)))


