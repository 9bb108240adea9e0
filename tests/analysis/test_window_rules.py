"""The fluid model takes its window rules from pathpool-cc (``_core.window_rules``), no copy.

``pathpool.analysis.algorithms`` reads pathpool-cc's ``Controller::window_rules`` rather than a
Python copy of the rules; pathpool-cc's tests/window_rules.rs checks those are the steps
on_ack / on_congestion_event take. Here: the rules against hand computation (the standard forms
of Wischik et al. 2011, RFC 6356, the Balia rules of Peng et al. 2016, eq. (1)-(2), Khalili et
al. 2013 for OLIA), the fluid parameters of eq. 7 from them, and OLIA's
loss history in the fluid model (l_r = 1/q_r).
"""

from __future__ import annotations

import numpy as np
import pytest
from pathpool import _core
from pathpool.analysis.algorithms import ALGORITHMS, get_algorithm


def _rates(w, tau):
    return w / tau


def _hand(name, params, w, tau):
    """The rules as Wischik et al. 2011 / RFC 6356 / Peng et al. 2016 write them."""
    x = _rates(w, tau)
    total, s = w.sum(), x.sum()
    a = x.max() / x
    n = w.size
    if name == "reno":
        return 1 / w, w / 2
    if name == "ewtcp":
        return params.get("a", 1 / n**2) / w, w / 2
    if name == "coupled":
        return np.full(n, 1 / total), np.full(n, total / 2)
    if name == "semicoupled":
        return np.full(n, params.get("a", 1.0) / total), w / 2
    maxinc = np.full(n, np.max(w / tau**2) / s**2)
    if name == "max":
        return maxinc, w / 2
    if name == "lia":
        return (np.minimum(maxinc, 1 / w) if n > 1 else 1 / w), w / 2
    if name == "balia":
        return x / (tau * s**2) * (1 + a) / 2 * (4 + a) / 5, w / 2 * np.minimum(a, 1.5)
    if name == "generalized":
        eta, beta = params.get("eta", 0.5), params.get("beta", 0.2)
        return (x / (tau * s**2) * (1 + eta * (a - 1)) * (1 + beta * (a - 1)),
                w / 2 * (1 + eta * (a - 1)))
    raise AssertionError(name)


CASES = [("reno", {}, (1,)), ("ewtcp", {}, (1, 2, 3)), ("ewtcp", {"a": 1.0}, (2, 3)),
         ("coupled", {}, (1, 2, 3)), ("semicoupled", {"a": 2.0}, (2, 3)), ("max", {}, (1, 2, 3)),
         ("lia", {}, (1, 2, 3)), ("balia", {}, (1, 2, 3)), ("generalized", {}, (2, 3)),
         ("generalized", {"eta": 0.0, "beta": 1.0}, (2, 3)),
         ("generalized", {"eta": 3.0, "beta": 0.7}, (2, 3))]


def _states(counts, n_states=40, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n_states):
        n = int(rng.choice(counts))
        w = rng.uniform(0.5, 200.0, n)
        # Whole nanoseconds, as pathpool-cc sees them.
        tau = np.round(rng.uniform(0.01, 0.3, n) * 1e9) / 1e9
        yield w, tau


@pytest.mark.parametrize(("name", "params", "counts"), CASES,
                         ids=[f"{c[0]}{c[1] or ''}" for c in CASES])
def test_rules_are_pathpool_cc_and_agree_with_hand_computation(name, params, counts):
    alg = get_algorithm(name, **params)
    for w, tau in _states(counts):
        inc, dec = alg.rules(w, tau)
        hinc, hdec = _hand(name, params, w, tau)
        np.testing.assert_allclose(inc, hinc, rtol=1e-12, err_msg=f"{w} {tau}")
        # no floor: Coupled's w_total/2 and the family's decrease may exceed w_r
        np.testing.assert_allclose(dec, hdec, rtol=1e-12, err_msg=f"{w} {tau}")
        x = w / tau
        np.testing.assert_allclose(alg.gain(x, tau), x * hdec / tau, rtol=1e-12)
        np.testing.assert_allclose(alg.phi(x, tau), hinc / hdec, rtol=1e-12)


def test_catalogue_is_the_registry_minus_time_dependent_rules():
    names = {a["name"] for a in _core.algorithms()}
    assert set(ALGORITHMS) == names - {"cubic", "rsf-db", "rsf-lb"}
    with pytest.raises(ValueError, match="no fluid model"):
        get_algorithm("cubic")
    with pytest.raises(ValueError, match="is unknown"):
        get_algorithm("bogus")
    with pytest.raises(ValueError, match="a"):
        get_algorithm("ewtcp(a=-1)")
    assert [a for a in ALGORITHMS if get_algorithm(a).price_dependent] == ["olia"]


def _olia_hand(w, tau, q):
    """Khalili et al. 2013, Section V, with the fluid l_r = 1/q_r: B = argmax l_r/tau_r^2 =
    argmin q_r tau_r^2, M = paths with the largest (integer, as v0.95) window."""
    n = w.size
    quality = 1 / (q * tau**2)
    best = quality >= quality.max() * (1 - 1e-9)
    m = np.floor(w) == np.floor(w).max()
    collected = best & ~m
    alpha = np.zeros(n)
    if collected.any():
        alpha[collected] = 1 / (n * collected.sum())
        alpha[m] = -1 / (n * m.sum())
    return (w / tau**2) / np.sum(w / tau) ** 2 + alpha / w, w / 2


def test_olia_fluid_alpha_takes_l_r_as_one_over_q_r():
    olia = get_algorithm("olia")
    rng = np.random.default_rng(5)
    moved = 0
    for _ in range(60):
        n = int(rng.integers(2, 4))
        w = np.floor(rng.uniform(2, 100, n)) + 0.5
        tau = np.round(rng.uniform(0.01, 0.2, n) * 1e9) / 1e9
        q = rng.uniform(1e-4, 0.05, n)
        inc, dec = olia.rules(w, tau, q)
        hinc, hdec = _olia_hand(w, tau, q)
        np.testing.assert_allclose(inc, hinc, rtol=1e-12, err_msg=f"{w} {tau} {q}")
        np.testing.assert_allclose(dec, hdec, rtol=1e-12)
        moved += not np.allclose(inc, (w / tau**2) / np.sum(w / tau) ** 2)
    assert moved >= 10  # alpha was non-zero on some states: the history was used
    with pytest.raises(ValueError, match="pass q"):
        olia.phi(np.array([100.0, 50.0]), np.array([0.1, 0.1]))


def test_window_rules_refuses_bad_input():
    from pathpool.errors import SimulationError

    with pytest.raises(SimulationError, match="unknown algorithm"):
        _core.window_rules("nope", {}, [10.0], [0.1])
    with pytest.raises(SimulationError, match="window_rules"):
        _core.window_rules("reno", {}, [10.0], [0.1, 0.2])
    with pytest.raises(SimulationError, match="window_rules"):
        _core.window_rules("olia", {}, [10.0], [0.1], [0.0])
    with pytest.raises(SimulationError, match="no per-state window rules"):
        _core.window_rules("cubic", {}, [10.0], [0.1])
