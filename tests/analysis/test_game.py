"""The RSF rent-seeking game (Pokhrel & Williamson 2020 Section 3)."""

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


# Dynamics converging to the normalized equilibrium (issue 4: "best-response dynamics or the
# continuous-time dynamics converging"). z = 1 everywhere: diagonal strict concavity holds on the
# whole orthant (test_dsc_region_k2), so Rosen's Theorem 9 promises global convergence.
DYNAMICS_CASES = [
    (1, 2, 1.0),                      # one connection, shared capacity (7)
    (2, 2, 1.0),                      # two connections, shared capacity (12)
    (2, 2, np.array([0.6, 0.5])),     # two connections, per-path capacities (16)
]


@pytest.mark.parametrize("N,K,cap", DYNAMICS_CASES)
def test_projected_flow_converges_and_distance_never_grows(N, K, cap):
    game = RentSeekingGame(N, K, p_hat=0.1)
    B = float(np.sum(cap))
    star = game.solve(1.0, cap).lam
    rng = np.random.default_rng(7)
    for _ in range(4):
        lam0 = rng.uniform(0.0, 1.0, N * K) * B / (N * K)
        flow = game.projected_flow(1.0, cap, lam0=lam0, t_end=100.0)
        d = flow.distance(star)
        assert d[-1] <= 1e-6 * B, (lam0, d[-1])
        # Rosen's Lyapunov function |lambda - lambda*| decreases along the flow; the ODE solver's
        # tolerance (rtol 1e-10) allows noise of that order once it sits at the equilibrium.
        assert np.all(np.diff(d) <= 1e-8 * B), np.max(np.diff(d))
        assert d[0] > 1e3 * d[-1]  # it really travelled


@pytest.mark.parametrize("N,K,cap,order", [
    (1, 2, 1.0, "sequential"), (2, 2, 1.0, "sequential"), (1, 2, 1.0, "simultaneous")])
def test_best_response_dynamics_reach_the_normalized_equilibrium(N, K, cap, order):
    game = RentSeekingGame(N, K, p_hat=0.1)
    B = float(np.sum(cap))
    sol = game.solve(1.0, cap)
    rng = np.random.default_rng(3)
    for _ in range(3):
        lam0 = rng.uniform(0.0, 1.0, N * K) * B / (N * K)
        br = game.best_response_dynamics(1.0, cap, lam0=lam0, multipliers=sol.multipliers, order=order)
        assert br.converged, (order, br.rounds)
        assert br.distance(sol.lam)[-1] <= 1e-6 * B


def test_simultaneous_best_response_oscillates_with_four_players():
    # A finding, not a defect: with all four subflows of the (2, 2) game answering the previous
    # round at once (Jacobi), the iterates overshoot alternately above and below the equilibrium
    # and the oscillation dies out only very slowly (about 0.5% per two rounds), so 200 rounds
    # leave it far from converged; in turn (Gauss-Seidel) they converge in ~13 rounds (above).
    game = RentSeekingGame(2, 2, p_hat=0.1)
    sol = game.solve(1.0, 1.0)
    star = sol.lam.ravel()
    lam0 = np.random.default_rng(3).uniform(0.0, 1.0, 4) / 4
    br = game.best_response_dynamics(1.0, 1.0, lam0=lam0, multipliers=sol.multipliers,
                                     order="simultaneous")
    assert not br.converged
    dev = br.lam[-6:] - star
    assert np.all(np.sign(dev[1:, 0]) == -np.sign(dev[:-1, 0]))       # alternates round by round
    amp = np.abs(dev[:, 0])
    assert np.all(amp[2:] < amp[:-2]) and amp[-1] > 1e-2               # shrinking, slowly
    np.testing.assert_allclose((br.lam[-1] + br.lam[-2]) / 2, star, atol=1e-3)


def test_equilibrium_is_a_best_response_fixed_point():
    game = RentSeekingGame(2, 2, p_hat=0.1)
    z = np.array([1.0, 1.5, 1.0, 1.5])
    cap = np.array([0.6, 0.5])
    sol = game.solve(z, cap)
    star = sol.lam.ravel()
    assert np.ptp(star) > 1e-3  # an asymmetric equilibrium, so the check can fail
    for player in range(4):
        best = game.best_response(star, player, z, cap, multipliers=sol.multipliers)
        assert best == pytest.approx(star[player], abs=1e-9), player


def test_cli_game_writes_dynamics(tmp_path):
    import pandas as pd
    from pathpool.cli import main

    assert main(["analyze", "game", "--paths", "2", "--p-hat", "0.1", "--dynamics-starts", "2",
                 "--t-end", "60", "-o", str(tmp_path)]) == 0
    for name in ("game_dynamics.png", "game_dynamics.svg", "game_dynamics.csv"):
        assert (tmp_path / name).stat().st_size > 0
    dyn = pd.read_csv(tmp_path / "game_dynamics.csv")
    assert set(dyn["dynamics"].str.split(" ").str[0]) == {"projected", "best"}
    assert dyn["converged"].all(), dyn


def _rise(d):
    """Largest rise of a distance sequence above its running minimum."""
    return float(np.max(d - np.minimum.accumulate(d)))


@pytest.mark.parametrize("N,K,p_hat,z,cap,lb", [
    (1, 2, 0.1, (1.0, 1.5), 1.0, 0.2),    # unequal weights; DSC on X = {lambda >= 0.2, sum <= 1}
    (1, 3, 1.0, 1.0, 1.0, None),          # slack capacity: interior (Nash) equilibrium 2/9 each
    (1, 3, 0.1, 1.0, 1.0, None),
])
def test_projected_flow_more_cases(N, K, p_hat, z, cap, lb):
    game = RentSeekingGame(N, K, p_hat=p_hat)
    B = float(np.sum(cap))
    if lb is not None:
        # the feasible set lies in [lb, B - lb]^K, where DSC must hold for Rosen's theorem
        assert game.dsc_holds(z, box=(lb, B - lb))
    star = game.solve(z, cap, lb=lb).lam
    rng = np.random.default_rng(11)
    # the third start of the (1, 3) cases is projected onto a corner (one rate at lb, capacity
    # full) where an earlier version switched faces forever without advancing
    starts = [rng.uniform(0.0, 1.0, N * K) * B for _ in range(5)] + [np.array([0.935, 0.816, 0.0027])[:K]]
    for lam0 in starts:
        flow = game.projected_flow(z, cap, lam0=lam0, t_end=200.0, lb=lb)
        lo = 1e-9 * B if lb is None else lb
        assert flow.lam.min() >= lo - 1e-10 * B and flow.lam.sum(axis=1).max() <= B * (1 + 1e-10)
        d = flow.distance(star)
        assert d[-1] <= 1e-6 * B, (lam0, d[-1])
        assert _rise(d) <= 1e-8 * B
        assert flow.segments < 10


def test_projected_flow_without_dsc_converges_but_distance_grows():
    # z = (1, 100) violates DSC near the slack (Nash) equilibrium (1/4, 1/4) of p_hat = 1
    # (16 z1 z2 l1 l2 > (z1 - z2)^2 (l1 - l2)^2 fails once l1/l2 leaves ~(0.67, 1.5)); the flow
    # still reaches the unique equilibrium, but |lambda - lambda*| is no longer a Lyapunov
    # function: it grows along some trajectories.
    game = RentSeekingGame(1, 2, p_hat=1.0)
    z = (1.0, 100.0)
    star = game.solve(z, 1.0).lam
    np.testing.assert_allclose(star.ravel(), [0.25, 0.25], atol=1e-9)
    rng = np.random.default_rng(1)
    rises = []
    for _ in range(12):
        # stiff (rates ~ z_a): LSODA instead of the default explicit DOP853
        flow = game.projected_flow(z, 1.0, lam0=rng.uniform(0.0, 1.0, 2), t_end=200.0, method="LSODA")
        d = flow.distance(star)
        assert d[-1] <= 1e-6
        rises.append(_rise(d))
    assert max(rises) > 1e-3


def test_projected_flow_in_connection_game_ends_on_different_equilibria():
    # Connection game (15) with K = 2: DSC never holds, the equilibria form a continuum (only each
    # connection's total is determined), and the flow's limit depends on where it starts.
    game = RentSeekingGame(2, 2, p_hat=0.1, mode="connection")
    rng = np.random.default_rng(1)
    ends = []
    for _ in range(4):
        flow = game.projected_flow(1.0, 1.0, lam0=rng.uniform(0.0, 0.5, 4), t_end=200.0)
        lam = flow.lam[-1]
        assert game.kkt_residual(lam, 1.0, 1.0, 1e-9)[0] < 1e-8
        np.testing.assert_allclose(lam.reshape(2, 2).sum(axis=1), [0.5, 0.5], atol=1e-8)
        ends.append(lam)
    ends = np.array(ends)
    assert np.ptp(ends[:, 0]) > 0.1


def test_tangent_cone_projection_is_a_projection():
    rng = np.random.default_rng(5)
    for _ in range(200):
        v = rng.normal(size=5)
        at_lb = rng.uniform(size=5) < 0.4
        cap_active = bool(rng.uniform() < 0.7)
        if cap_active and at_lb.all():
            continue
        u, nu, t = RentSeekingGame._cone_project(v, at_lb, cap_active)
        assert np.all(u[at_lb] >= -1e-15) and (not cap_active or u.sum() <= 1e-12)
        assert t >= 0 and np.all(nu >= -1e-15) and np.all(nu[~at_lb] == 0)
        np.testing.assert_allclose(u, v - t + nu, atol=1e-12)
        # optimality: <v - u, w - u> <= 0 for every w in the cone
        for _ in range(20):
            w = rng.normal(size=5)
            w[at_lb] = np.abs(w[at_lb])
            if cap_active and w.sum() > 0:
                free = ~at_lb
                w[free] -= w.sum() / free.sum() + 0.01
                w[at_lb & (w < 0)] = 0.0
                if w.sum() > 0:
                    continue
            assert np.dot(v - u, w - u) <= 1e-10


@pytest.mark.parametrize("w,converges", [(10.0, True), (20.0, False)])
def test_two_player_best_response_stability_threshold(w, converges):
    # At the equilibrium the best response x = sqrt(s/c) - s has slope (lambda_a - s)/(2 s), so
    # the round map of two players is locally contracting iff
    # (l1 - l2)^2 / (4 l1 l2) < 1, i.e. l2/l1 in (3 - 2 sqrt 2, 3 + 2 sqrt 2) = (0.17, 5.83).
    # z = (1, 10) gives l2/l1 = 4.8, z = (1, 20) gives 6.2.
    game = RentSeekingGame(1, 2, p_hat=0.1)
    z = (1.0, w)
    sol = game.solve(z, 1.0)
    l1, l2 = sol.lam.ravel()
    np.testing.assert_allclose(sol.lam.ravel(), game.closed_form_single(z, 1.0), atol=1e-9)
    assert ((l1 - l2) ** 2 / (4 * l1 * l2) < 1) == converges
    for lam0 in ([0.25, 0.25], [l1 * 1.001, l2]):
        br = game.best_response_dynamics(z, 1.0, lam0=lam0, multipliers=sol.multipliers, max_rounds=300)
        assert br.converged == converges
        if converges:
            assert br.distance(sol.lam)[-1] <= 1e-9


@pytest.mark.parametrize("K,converges", [(3, True), (5, False)])
def test_simultaneous_best_response_with_many_symmetric_subflows(K, converges):
    # Symmetric K players: best-response slope (2 - K)/(2 (K - 1)) per opponent, so the Jacobi
    # round map has eigenvalue (K - 2)/2 on the all-equal direction: stable for K <= 3,
    # unstable for K >= 5; sequential (Gauss-Seidel) converges for both.
    game = RentSeekingGame(1, K, p_hat=0.1)
    sol = game.solve(1.0, 1.0)
    lam0 = np.linspace(0.05, 0.2, K)
    sim = game.best_response_dynamics(1.0, 1.0, lam0=lam0, multipliers=sol.multipliers, order="simultaneous")
    seq = game.best_response_dynamics(1.0, 1.0, lam0=lam0, multipliers=sol.multipliers, order="sequential")
    assert seq.converged and seq.distance(sol.lam)[-1] <= 1e-9
    assert sim.converged == converges


def test_split_capacity_best_response_stops_at_a_non_normalized_equilibrium():
    # Without the normalized-equilibrium price, each player may take what capacity the others
    # leave: every iterate is feasible, but the first mover grabs the rest and the dynamics stop
    # at a generalized Nash equilibrium that is not the normalized one.
    game = RentSeekingGame(1, 2, p_hat=0.1)
    br = game.best_response_dynamics((1.0, 2.0), 1.0, lam0=[0.2, 0.3])
    assert br.converged
    assert np.all(br.lam.sum(axis=1) <= 1.0 + 1e-12)
    np.testing.assert_allclose(br.lam[-1], [0.7, 0.3], atol=1e-12)
    np.testing.assert_allclose(game.solve((1.0, 2.0), 1.0).lam.ravel(), [11 / 30, 19 / 30], atol=1e-9)


def test_closed_form_with_a_binding_lower_bound():
    # Issue 14: z = (1, 2, 3, 4), p_hat = 0, B = 1 gave lambda_1 = -0.44. Player 1 sits at the
    # bound; the others share B - lb with mu = (2 B + lb) / (B^2 (1/2 + 1/3 + 1/4)):
    # lambda_i = 1 - mu / z_i = 1 - (2 + lb) / (13/12 z_i).
    game = RentSeekingGame(1, 4, p_hat=0.0)
    lb = 1e-9
    lam = game.closed_form_single((1, 2, 3, 4), 1.0)
    mu = (2 + lb) * 12 / 13
    np.testing.assert_allclose(lam, [lb, 1 - mu / 2, 1 - mu / 3, 1 - mu / 4], rtol=1e-12)
    assert lam.min() >= lb and lam.sum() == pytest.approx(1.0)
    sol = game.solve((1, 2, 3, 4), 1.0)
    np.testing.assert_allclose(sol.lam.ravel(), lam, atol=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_closed_form_agrees_with_extragradient_on_random_weights(seed):
    rng = np.random.default_rng(seed)
    K = int(rng.integers(2, 6))
    z = rng.uniform(0.2, 5.0, K)
    p_hat = float(rng.choice([0.0, 0.05]))
    game = RentSeekingGame(1, K, p_hat=p_hat)
    lb = 1e-3
    lam = game.closed_form_single(z, 1.0, lb=lb)
    sol = game.solve(z, 1.0, lb=lb)
    assert sol.kkt_residual < 1e-8
    assert lam.min() >= lb - 1e-15
    np.testing.assert_allclose(sol.lam.ravel(), lam, atol=1e-8)
