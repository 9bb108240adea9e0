"""Pluntke & Rio 2011, Section 3: Chebyshev deadline bound, the optimising controller, FEC residual loss."""

import numpy as np
import pytest
from pathpool.ratecontrol import (
    choose_source_count,
    fec_residual_loss,
    late_bound,
    optimise,
    tcp_rate,
)


def test_chebyshev_hand_values():
    b = late_bound([0.02, 0.1, 0.3, 0.4], np.array([0.02, 0.1, 0.3, 0.4]) ** 2, 0.3)
    np.testing.assert_allclose(b, [0.0004 / 0.28**2, 0.25, 1.0, 1.0])
    assert late_bound(0.1, 0.01, 0.3, "cantelli")[0] == pytest.approx(0.01 / (0.01 + 0.04))


@pytest.mark.parametrize("kind", ["chebyshev", "cantelli"])
@pytest.mark.parametrize("dist", ["exponential", "gamma", "lognormal", "uniform", "two-point"])
def test_bound_is_above_monte_carlo_miss_rate(kind, dist):
    rng = np.random.default_rng(11)
    m = 400_000
    samples = {
        "exponential": rng.exponential(0.1, m),
        "gamma": rng.gamma(4.0, 0.025, m),
        "lognormal": rng.lognormal(np.log(0.08), 0.6, m),
        "uniform": rng.uniform(0.0, 0.25, m),
        "two-point": np.where(rng.random(m) < 0.05, 0.35, 0.05),
    }[dist]
    mean, var = samples.mean(), samples.var()
    for d in (0.15, 0.2, 0.3, 0.5):
        emp = np.mean(samples > d)
        se = np.sqrt(emp * (1 - emp) / m)
        assert late_bound(mean, var, d, kind)[0] >= emp - 4 * se


def test_optimiser_on_pluntke_rio_paths_sends_almost_all_on_path_1():
    p = np.array([0.1, 0.02, 0.01])
    rtt = np.array([0.02, 0.1, 0.3])
    phi = 0.05
    o = optimise(p, rtt, rtt**2, 0.3, probe_fraction=phi)
    x_tcp = tcp_rate(p, rtt)
    # total equals path 1's TCP rate (as with MPTCP); paths 2 and 3 carry exactly their probing share
    assert o.rates.sum() == pytest.approx(x_tcp[0], rel=1e-9)
    np.testing.assert_allclose(o.rates[1:], phi / 3 * x_tcp[0], rtol=1e-9)
    assert o.goodput_bound == pytest.approx(o.weights @ o.rates)
    g = optimise(p, rtt, rtt**2, 0.3, probe_fraction=0.0)
    assert g.method == "greedy" and g.rates.tolist() == [x_tcp[0], 0.0, 0.0]
    with pytest.raises(ValueError):
        optimise(p, rtt, rtt**2, 0.3, probe_fraction=0.05, method="greedy")


@pytest.mark.parametrize("phi", [0.01, 0.05, 0.2])
def test_probing_fraction_honoured(phi):
    rng = np.random.default_rng(3)
    for _ in range(10):
        n = int(rng.integers(2, 7))
        p = rng.uniform(0.005, 0.2, n)
        rtt = rng.uniform(0.01, 0.4, n)
        o = optimise(p, rtt, rtt**2, 0.3, probe_fraction=phi)
        assert np.all(o.rates >= phi / n * o.rates.sum() * (1 - 1e-9))


def _mc_residual(rng, n, k, q, blocks):
    lost = rng.random((blocks, n)) < q
    fail = lost.sum(axis=1) > n - k
    return (lost[:, :k] & fail[:, None]).sum() / (blocks * k)


@pytest.mark.parametrize("n,k,q", [(10, 6, 0.145), (10, 8, 0.1), (20, 15, 0.1), (5, 3, 0.3), (10, 10, 0.05)])
def test_fec_residual_loss_against_monte_carlo(n, k, q):
    rng = np.random.default_rng(n * 100 + k)
    blocks = 200_000
    emp = _mc_residual(rng, n, k, q, blocks)
    exact = float(fec_residual_loss(n, k, q))
    se = np.sqrt(exact * (1 - exact) / (blocks * k)) * 3  # losses within a block are correlated: be generous
    assert abs(emp - exact) <= 4 * se + 1e-12
    if k == n:
        assert exact == pytest.approx(q)


def test_choose_source_count_is_the_least_redundancy_meeting_target():
    for q in (0.01, 0.1, 0.145, 0.3):
        k, met = choose_source_count(10, q, 0.01)
        assert met and fec_residual_loss(10, k, q) <= 0.01
        if k < 10:
            assert fec_residual_loss(10, k + 1, q) > 0.01
    assert choose_source_count(10, 0.9, 1e-6) == (1, False)
