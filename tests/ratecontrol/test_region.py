"""Seed 003, eq. (1): the TCP-friendly region, LP (HiGHS) against the polymatroid greedy."""

import numpy as np
import pytest
from pathpool.ratecontrol import allocate_greedy, friendliness_violation, friendly_region_lp
from pathpool.ratecontrol.region import subset_matrix


def _instance(rng, n):
    t = rng.uniform(1.0, 300.0, n)
    if n >= 3:  # ties in the TCP rates
        t[1] = t[0]
    c = rng.uniform(-0.3, 1.0, n)
    if n >= 4:  # ties in the objective
        c[3] = c[2]
    return t, c


@pytest.mark.parametrize("n,seed", [(n, s) for n in (1, 2, 3, 5, 8) for s in range(4)] + [(12, 0), (12, 1), (13, 2), (14, 3)])
def test_greedy_equals_subset_lp(n, seed):
    rng = np.random.default_rng(seed * 1000 + n)
    t, c = _instance(rng, n)
    g = allocate_greedy(t, c)
    lp = friendly_region_lp(t, c, constraints="subsets")
    assert g.objective == pytest.approx(lp.objective, abs=1e-6)
    assert friendliness_violation(g.rates, t, subsets=True) <= 1e-9
    assert friendliness_violation(lp.rates, t, subsets=True) <= 1e-6


def test_subset_matrix_is_all_subsets():
    a = subset_matrix(4)
    assert a.shape == (15, 4)
    assert len({tuple(r) for r in a}) == 15 and not np.any(a.sum(1) == 0)


def test_greedy_hand_example():
    # Pluntke & Rio 2011's paths: best weight on the best TCP path takes all of it, the others nothing
    g = allocate_greedy([223.6, 100.0, 47.1], [0.9, 0.7, 0.0])
    assert g.rates.tolist() == [223.6, 0.0, 0.0]
    # preferring the slow path first: it gets its TCP rate, the next only the excess over it
    g = allocate_greedy([223.6, 100.0, 47.1], [0.1, 0.7, 0.9])
    np.testing.assert_allclose(g.rates, [123.6, 52.9, 47.1])


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("phi", [0.02, 0.1, 0.3])
def test_chain_lp_equals_subset_lp_with_probing(seed, phi):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 11))
    t, c = _instance(rng, n)
    c = np.abs(c)
    a = friendly_region_lp(t, c, phi, "subsets")
    b = friendly_region_lp(t, c, phi, "chain")
    assert a.objective == pytest.approx(b.objective, abs=1e-6)
    for alloc in (a, b):
        assert friendliness_violation(alloc.rates, t) <= 1e-6
        assert np.all(alloc.rates >= phi / n * alloc.rates.sum() - 1e-7)


def test_chain_lp_many_paths_matches_greedy():
    rng = np.random.default_rng(7)
    t, c = _instance(rng, 2000)
    g = allocate_greedy(t, c)
    lp = friendly_region_lp(t, c, constraints="chain")
    assert g.objective == pytest.approx(lp.objective, rel=1e-9, abs=1e-6)
    assert friendliness_violation(g.rates, t, subsets=False) <= 1e-9


def test_violation_detects_unfriendly_rates():
    t = np.array([100.0, 50.0])
    assert friendliness_violation([60.0, 50.0], t) == pytest.approx(10.0)  # {1,2}: 110 > 100
    assert friendliness_violation([10.0, 60.0], t) == pytest.approx(10.0)  # {2}: 60 > 50


def test_bad_inputs():
    with pytest.raises(ValueError):
        friendly_region_lp([1.0, 2.0], [1.0], 0.0)
    with pytest.raises(ValueError):
        friendly_region_lp([1.0], [1.0], 1.0)
    with pytest.raises(ValueError):
        friendly_region_lp([1.0], [1.0], 0.0, "all")
