"""Seed 003, Section 2: TCP and MPTCP equation rates."""

import numpy as np
import pytest
from pathpool.ratecontrol import lia_alpha, mptcp_rates, tcp_rate

P = [0.10, 0.02, 0.01]
RTT = [0.020, 0.100, 0.300]


def test_lia_capped_reading_reproduces_seed_003_example():
    res = mptcp_rates(P, RTT, cap=True)
    assert np.round(res.rates, 1).tolist() == [88.2, 88.2, 47.1]
    assert res.capped.tolist() == [False, False, True]
    # path 3 sits exactly at Pluntke & Rio 2011's TCP rate sqrt(2/0.01)/0.3
    assert res.rates[2] == pytest.approx(np.sqrt(200.0) / 0.3, rel=1e-12)


def test_printed_reading_gives_different_numbers():
    res = mptcp_rates(P, RTT, cap=False)
    # x_r proportional to 1/(p_r RTT_r) = 500, 500, 333.3; a is scale-free: 160 * 25000 / 1333.3^2 = 2.25
    assert res.a == pytest.approx(2.25, rel=1e-12)
    assert np.round(res.rates, 1).tolist() == [83.9, 83.9, 55.9]
    expected = np.sqrt(2 * 2.25) * (1 / np.array(P)) / (np.array(RTT) * np.sqrt(160.0))
    np.testing.assert_allclose(res.rates, expected, rtol=1e-12)


def test_tcp_formula_that_matches_the_example():
    np.testing.assert_allclose(tcp_rate(P, RTT), [np.sqrt(20) / 0.02, 100.0, np.sqrt(200) / 0.3])
    # with sqrt(3/(2p))/RTT the capped path would carry 40.8, not the published 47.1
    assert round(float(tcp_rate(0.01, 0.3, "sqrt3/2")[0]), 1) == 40.8


def _random_paths(rng, n):
    return rng.uniform(0.002, 0.2, n), rng.uniform(0.005, 0.5, n)


@pytest.mark.parametrize("seed", range(30))
def test_capped_equilibrium_balances_increase_and_decrease(seed):
    """Independently of the solver: per path min(a/W, 1/w_r) = p_r w_r / 2 (LIA fluid balance)."""
    rng = np.random.default_rng(seed)
    p, rtt = _random_paths(rng, int(rng.integers(1, 7)))
    res = mptcp_rates(p, rtt, cap=True)
    w = res.rates * rtt
    a = lia_alpha(res.rates, rtt)
    assert a == pytest.approx(res.a)
    np.testing.assert_allclose(np.minimum(a / w.sum(), 1 / w), p * w / 2, rtol=1e-8)
    # no subflow exceeds single-path TCP on its own path, and the total never exceeds the best TCP
    assert np.all(res.rates <= tcp_rate(p, rtt) * (1 + 1e-9))


@pytest.mark.parametrize("seed", range(30))
def test_printed_formula_is_a_fixed_point(seed):
    rng = np.random.default_rng(100 + seed)
    p, rtt = _random_paths(rng, int(rng.integers(1, 7)))
    x = mptcp_rates(p, rtt, cap=False).rates
    a = lia_alpha(x, rtt)
    np.testing.assert_allclose(x, np.sqrt(2 * a) * (1 / p) / (rtt * np.sqrt(np.sum(1 / p))), rtol=1e-10)
    # LIA's design goal: the total equals TCP's rate on the path maximising x_r / RTT_r
    best = np.argmax(x / rtt)
    assert x.sum() == pytest.approx(tcp_rate(p[best], rtt[best])[0], rel=1e-10)


def test_single_path_is_tcp():
    np.testing.assert_allclose(mptcp_rates([0.01], [0.1]).rates, tcp_rate(0.01, 0.1))
    np.testing.assert_allclose(mptcp_rates([0.01], [0.1], cap=False).rates, tcp_rate(0.01, 0.1))


@pytest.mark.parametrize("p,rtt", [([0.0, 0.1], [0.1, 0.1]), ([0.1, 1.0], [0.1, 0.1]), ([0.1], [0.0]), ([0.1, 0.2], [0.1])])
def test_bad_inputs_raise(p, rtt):
    with pytest.raises(ValueError):
        mptcp_rates(p, rtt)


@pytest.mark.parametrize("cap", [True, False])
@pytest.mark.parametrize(("p", "rtt"), [(0.001, 0.01), (0.1, 0.02), (0.02, 0.1), (0.5, 1.0)])
def test_single_path_mptcp_is_single_path_tcp(p, rtt, cap):
    # One path: k_unc = sqrt(2p) is the lower end of the capped bracket exactly (issue 14: brentq
    # raised on the zero-width bracket). Both readings give x = sqrt(2/p)/RTT and a = 1.
    r = mptcp_rates([p], [rtt], cap=cap)
    assert r.rates == pytest.approx(tcp_rate(p, rtt), rel=1e-12)
    assert r.a == pytest.approx(1.0, rel=1e-12)


def test_equal_paths_split_one_tcp_rate_evenly():
    # n identical paths: a = 1/n, W = sqrt(2a n/p) = sqrt(2/p): one TCP's window in total, split
    # evenly, no subflow capped.
    for n in (2, 3, 5):
        r = mptcp_rates([0.01] * n, [0.1] * n)
        assert r.rates.sum() == pytest.approx(tcp_rate(0.01, 0.1)[0], rel=1e-12)
        assert np.allclose(r.rates, r.rates[0]) and not r.capped.any()


def test_one_path_streaming_run():
    import tomllib

    from pathpool.ratecontrol.stream import default_config_path, run_stream

    with open(default_config_path(), "rb") as fh:
        doc = tomllib.load(fh)
    doc["path"] = doc["path"][1:2]
    # Seed 2 raised (the zero-width bracket) before the fix, at one of its ~100 rate updates.
    res = run_stream(doc, seed=2, duration=120.0, switch_at=60.0, settle=10.0, estimation_window=10.0)
    s = res.summary
    assert len(s["mptcp"]["rates_pps"]) == 1 and s["mptcp"]["goodput_pps"] > 0
    assert res.intervals["source_packets"].sum() > 0
