"""The fluid model's window rules (pathpool.analysis.algorithms) against the controllers the
simulator runs (pathpool-cc, through ``_core.window_rules``) on random states.

Issue 15: the rules existed in Rust, C and Python, and the Python copy was checked against
nothing. Each algorithm of the fluid catalogue is compared, per ACK and per loss, at random
windows and RTTs in congestion avoidance; an algorithm whose copies differ on purpose is listed
with the reason.

One difference is by design: a packet-level window has a floor (pathpool-cc ``set_ssthresh``:
``MIN_SSTHRESH`` = 2 segments, or ``MIN_CWND`` = 1 for Coupled with siblings), the fluid model
none (its projection at ``x_r = 0`` plays that role). Coupled's ``w_total/2`` and the (0.5, 0.2)
family's ``(w_r/2)(1 + eta(alpha_r - 1))`` exceed the subflow's own window at some states; there
pathpool-cc decreases to the floor, and the test expects exactly that.
"""

from __future__ import annotations

import numpy as np
import pytest
from pathpool import _core
from pathpool.analysis.algorithms import get_algorithm

# (fluid name, fluid params, pathpool-cc name, pathpool-cc params, path counts)
CASES = [
    ("reno", {}, "reno", {}, (1,)),
    ("ewtcp", {"a": 1.0}, "ewtcp", {"a": 1.0}, (1, 2, 3)),
    ("ewtcp", {"a": 0.5}, "ewtcp", {"a": 0.5}, (1, 2, 3)),
    ("coupled", {}, "coupled", {}, (1, 2, 3)),
    ("semicoupled", {"a": 1.0}, "semicoupled", {"a": 1.0}, (1, 2, 3)),
    ("max", {}, "max", {}, (1, 2, 3)),
    ("lia", {}, "lia", {}, (1, 2, 3)),
    ("balia", {}, "balia", {"variant": "continuous"}, (1, 2, 3)),
    ("generalized", {"eta": 0.5, "beta": 0.2}, "generalized", {"eta": 0.5, "beta": 0.2}, (1, 2, 3)),
    ("generalized", {"eta": 0.0, "beta": 1.0}, "generalized", {"eta": 0.0, "beta": 1.0}, (1, 2, 3)),
]


def _states(counts, n_states=40, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n_states):
        n = int(rng.choice(counts))
        w = rng.uniform(8.0, 200.0, n)
        tau = rng.uniform(0.01, 0.3, n)
        # Whole nanoseconds, as pathpool-cc sees them.
        tau = np.round(tau * 1e9) / 1e9
        yield w, tau, int(rng.integers(n))


@pytest.mark.parametrize(("fluid", "fparams", "cc", "cparams", "counts"), CASES,
                         ids=[f"{c[0]}{c[1] or ''}" for c in CASES])
def test_fluid_window_rules_agree_with_pathpool_cc(fluid, fparams, cc, cparams, counts):
    alg = get_algorithm(fluid, **fparams)
    unfloored = 0
    for w, tau, i in _states(counts):
        inc_rs, dec_rs = _core.window_rules(cc, cparams, w.tolist(), tau.tolist(), i)
        inc_py = float(alg.increment(w, tau, None)[i])
        dec_py = float(alg.decrement(w, tau, None)[i])
        floor = 1.0 if cc == "coupled" and w.size > 1 else 2.0
        unfloored += dec_py <= w[i] - floor
        assert inc_rs == pytest.approx(inc_py, rel=1e-9), (w, tau, i)
        assert dec_rs == pytest.approx(min(dec_py, w[i] - floor), rel=1e-9), (w, tau, i)
    assert unfloored >= 10  # the rule itself, not only the floor, was compared


def test_window_rules_refuses_bad_input():
    from pathpool.errors import SimulationError

    with pytest.raises(SimulationError, match="unknown algorithm"):
        _core.window_rules("nope", {}, [10.0], [0.1], 0)
    with pytest.raises(SimulationError, match="window_rules"):
        _core.window_rules("reno", {}, [10.0], [0.1, 0.2], 0)
    with pytest.raises(SimulationError, match="window_rules"):
        _core.window_rules("reno", {}, [10.0], [0.1], 1)
