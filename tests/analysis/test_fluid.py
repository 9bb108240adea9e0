"""Fluid model (Peng et al. 2016 eq. (3)-(4), (7)-(9)): closed forms, ODE vs direct equilibrium."""

import numpy as np
import pytest
from pathpool.analysis import Network, get_algorithm, simulate, solve_equilibrium
from pathpool.analysis.algorithms import balia_vs_generalized
from pathpool.analysis.friendliness import fig1_network, fig2_network, friendliness


def test_reno_fluid_parameters_from_eq7():
    # Reno: I = 1/w, D = w/2  =>  k = x^2/2, phi = 2/(tau x)^2
    reno = get_algorithm("reno")
    x, tau = np.array([250.0]), np.array([0.08])
    assert reno.gain(x, tau)[0] == pytest.approx(250.0**2 / 2)
    assert reno.phi(x, tau)[0] == pytest.approx(2 / (0.08 * 250.0) ** 2)


def test_single_reno_equilibrium_matches_closed_form():
    net = Network([[1.0]], [1000.0], [0.1], [0], ["reno"])
    eq = solve_equilibrium(net)
    assert eq.x[0] == pytest.approx(1000.0, rel=1e-9)
    # price is the loss probability at which sqrt(2/p)/tau = c
    assert eq.p[0] == pytest.approx(2 / (0.1 * 1000.0) ** 2, rel=1e-9)
    assert eq.residual < 1e-10


def test_reno_flows_with_different_rtts_share_inversely_to_rtt():
    taus = np.array([0.05, 0.1, 0.2])
    net = Network([[1, 1, 1]], [1200.0], taus, [0, 1, 2], ["reno"] * 3)
    eq = solve_equilibrium(net)
    expected = 1200.0 * (1 / taus) / np.sum(1 / taus)
    np.testing.assert_allclose(eq.x, expected, rtol=1e-9)
    np.testing.assert_allclose(eq.x, np.sqrt(2 / eq.p[0]) / taus, rtol=1e-9)


def test_random_loss_route_is_closed_form():
    net = Network(np.eye(2), [np.inf, np.inf], [0.04, 0.08], [0, 1], ["reno", "reno"], loss=[0.01, 0.02])
    eq = solve_equilibrium(net)
    np.testing.assert_allclose(eq.x, np.sqrt(2 / np.array([0.01, 0.02])) / np.array([0.04, 0.08]), rtol=1e-9)


@pytest.mark.parametrize("alg", ["ewtcp(a=1)", "semicoupled", "max", "lia", "balia", "generalized"])
def test_ode_converges_to_direct_equilibrium(alg):
    net = fig2_network(alg)
    eq = solve_equilibrium(net)
    traj = simulate(net, t_end=300.0)
    assert eq.residual < 1e-10
    np.testing.assert_allclose(traj.x[:, -1], eq.x, rtol=1e-4)
    # capacity conservation at the bottlenecks with positive price
    busy = eq.p > 0
    np.testing.assert_allclose(eq.y[busy], net.capacity[busy], rtol=1e-9)


def test_balia_increment_equals_generalized_but_decrement_does_not():
    cmp = balia_vs_generalized(np.array([400.0, 100.0, 250.0]), np.array([0.05, 0.1, 0.07]))
    np.testing.assert_allclose(cmp["increment_balia"], cmp["increment_generalized"], rtol=1e-12)
    # Balia: (w/2) min(alpha, 1.5); family at eta = 0.5: (w/2)(1 + alpha)/2; equal only at alpha = 1
    d_b, d_g = cmp["decrement_balia"], cmp["decrement_generalized"]
    assert d_b[0] == pytest.approx(d_g[0])  # the max-rate path, alpha = 1
    assert not np.allclose(d_b[1:], d_g[1:])


def test_every_algorithm_reduces_to_reno_on_one_path():
    x, tau = np.array([321.0]), np.array([0.07])
    reno = get_algorithm("reno")
    for name in ["ewtcp", "coupled", "semicoupled", "max", "lia", "balia", "generalized"]:
        a = get_algorithm(name)
        assert a.phi(x, tau)[0] == pytest.approx(reno.phi(x, tau)[0], rel=1e-12), name
        assert a.gain(x, tau)[0] == pytest.approx(reno.gain(x, tau)[0], rel=1e-12), name
    olia = get_algorithm("olia")
    assert olia.phi(x, tau, np.array([0.01]))[0] == pytest.approx(reno.phi(x, tau)[0], rel=1e-12)


def test_friendliness_ordering_fig2():
    df = friendliness(["coupled", "max", "ewtcp(a=1)", "semicoupled(a=1)"], network="fig2")
    assert list(df.algorithm) == ["ewtcp(a=1)", "semicoupled(a=1)", "max", "coupled"]
    assert np.all(np.diff(df.mp_rate) < 0)


def test_friendliness_fig1_closed_forms():
    # one bottleneck, equal RTTs, n = 2: EWTCP takes 2x the SP flow, Semicoupled sqrt(2)x,
    # Max and Coupled 1x (a tie in the fluid model)
    ratios = {}
    for alg in ["ewtcp", "semicoupled", "max", "coupled"]:
        eq = solve_equilibrium(fig1_network(alg + "(a=1)" if alg == "ewtcp" else alg))
        mp, sp = eq.source_rates()
        ratios[alg] = mp / sp
    assert ratios["ewtcp"] == pytest.approx(2.0, rel=1e-8)
    assert ratios["semicoupled"] == pytest.approx(np.sqrt(2.0), rel=1e-8)
    assert ratios["max"] == pytest.approx(1.0, rel=1e-8)
    assert ratios["coupled"] == pytest.approx(1.0, rel=1e-8)


def test_olia_equilibrium_picks_equal_windows_on_equal_paths():
    net = Network(np.eye(2), [np.inf, np.inf], [0.05, 0.05], [0, 0], ["olia"], loss=[0.01, 0.01])
    eq = solve_equilibrium(net)
    assert eq.x[0] == pytest.approx(eq.x[1], rel=1e-6)
    # total equals one Reno flow at that loss (fully coupled)
    assert eq.x.sum() == pytest.approx(np.sqrt(2 / 0.01) / 0.05, rel=1e-8)


def test_bad_input_names_the_field():
    with pytest.raises(ValueError, match="allowed"):
        get_algorithm("bogus")
    with pytest.raises(ValueError, match="tau"):
        Network([[1.0]], [100.0], [0.0], [0], ["reno"])
    with pytest.raises(ValueError, match="algorithms"):
        Network([[1.0, 1.0]], [100.0], [0.1, 0.1], [0, 1], ["reno"])
