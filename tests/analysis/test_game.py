"""The RSF rent-seeking game (seed 001 Section 3)."""

import numpy as np
import pytest

from pathpool.analysis.game import RentSeekingGame, dsc_ratio_interval_k2, project_capped


def _fd_grad(f, x, h=1e-7):
    return np.array([(f(x + h * e) - f(x - h * e)) / (2 * h) for e in np.eye(x.size)]).T


@pytest.mark.parametrize("mode,N,K", [("subflow", 1, 3), ("subflow", 2, 2), ("connection", 2, 2)])
def test_pseudo_gradient_and_jacobian_vs_finite_differences(mode, N, K):
    game = RentSeekingGame(N, K, p_hat=0.07, mode=mode)
    lam = np.linspace(0.2, 0.9, N * K)
    z = np.arange(1.0, game.n_players + 1)
    # own-action derivative of each player's utility
    player = np.arange(N * K) if mode == "subflow" else np.arange(N * K) // K
    u_grad = _fd_grad(game.utilities, lam)  # (players, vars)
    own = np.array([u_grad[player[v], v] for v in range(N * K)])
    np.testing.assert_allclose(game.pseudo_gradient(lam, z), z[player] * own, rtol=1e-6, atol=1e-9)
    G = _fd_grad(lambda v: game.pseudo_gradient(v, z), lam)
    np.testing.assert_allclose(game.jacobian(lam, z), G, rtol=1e-5, atol=1e-8)


def test_dsc_region_k2():
    game = RentSeekingGame(1, 2)
    assert game.dsc_holds((1, 1), box=(1e-3, 1.0))
    lo, hi = dsc_ratio_interval_k2(0.5, 1.0)
    assert lo * hi == pytest.approx(1.0)
    assert game.dsc_holds((1, 0.999 * hi), box=(0.5, 1.0))
    assert not game.dsc_holds((1, 1.001 * hi), box=(0.5, 1.0))
    assert not game.dsc_holds((1, 2.0), box=(0.01, 1.0))
    # connection game with K >= 2: moving rate between paths of one connection changes nothing
    assert not RentSeekingGame(2, 2, mode="connection").dsc_holds(1.0, box=(0.1, 1.0))


def test_projection_is_exact():
    rng = np.random.default_rng(0)
    for _ in range(50):
        v = rng.normal(0, 1, 6)
        u = project_capped(v, 0.01, 1.0)
        assert u.min() >= 0.01 - 1e-15 and u.sum() <= 1.0 + 1e-12
        # optimality: <v - u, w - u> <= 0 for feasible w
        for _ in range(20):
            w = project_capped(rng.uniform(0, 1, 6), 0.01, 1.0)
            assert np.dot(v - u, w - u) <= 1e-12


@pytest.mark.parametrize("z", [(1.0, 1.0), (1.0, 2.0), (2.0, 1.0, 1.5)])
def test_extragradient_matches_closed_form(z):
    game = RentSeekingGame(1, len(z), p_hat=0.1)
    sol = game.solve(z, capacity=1.0)
    assert sol.kkt_residual < 1e-8
    np.testing.assert_allclose(sol.lam.ravel(), game.closed_form_single(z, 1.0), atol=1e-9)
    assert sol.lam.sum() == pytest.approx(1.0)


def test_slack_constraint_gives_symmetric_nash():
    game = RentSeekingGame(1, 3, p_hat=1.0)
    sol = game.solve(1.0, capacity=1.0)
    np.testing.assert_allclose(sol.lam.ravel(), np.full(3, 2 / 9), rtol=1e-8)
    assert sol.kkt_residual < 1e-8


def test_unique_under_path_capacities_from_many_starts():
    game = RentSeekingGame(3, 2, p_hat=0.05)
    res = game.uniqueness((1, 2, 1, 1, 3, 1), capacity=[1.0, 2.0], n_starts=12, seed=4)
    assert res["max_kkt"] < 1e-8
    assert res["spread"] < 1e-7
    sol = game.solve((1, 2, 1, 1, 3, 1), capacity=[1.0, 2.0])
    np.testing.assert_allclose(sol.lam.sum(axis=0), [1.0, 2.0], rtol=1e-9)  # (16) binds
