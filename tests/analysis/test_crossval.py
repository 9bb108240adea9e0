"""Fluid model vs the packet-level simulator.

Tolerance, stated up front: on random-loss links (price = configured loss probability) each
flow's long-run rate is within 20 % of the fluid prediction times sqrt(3)/2 (the mean of an
AIMD sawtooth relative to the fluid equilibrium), for all five algorithms; each subflow's share
of its connection is within 0.06 for the algorithms whose phi -> inf at zero rate (LIA, Balia,
EWTCP).  Coupled and OLIA, whose fluid equilibria put zero rate on the worse path, are compared
on flow totals only (the simulator keeps 10-15 % on that path).  On the Khalili network the
single-path users' aggregate is within 25 % of the fluid prediction for EWTCP.

Known disagreements (findings, asserted as such so that a change is noticed): Coupled on
``two_paths`` (the packet-level rule cuts w_total/2 from the small subflow, floored, which the
fluid model cannot see) falls more than 20 % below; on the Khalili network LIA's single-path
users get more than 20 % less than the fluid model predicts (OLIA, Balia, Coupled even less).
"""

import numpy as np
import pytest

pathpool = pytest.importorskip("pathpool")
if not hasattr(pathpool, "run"):
    pytest.skip("pathpool.run (the simulator) is not available", allow_module_level=True)

from pathpool.analysis.crossval import CROSSVAL_ALGORITHMS, compare, fluid_prediction, scenario
from pathpool.sim.scenario import load_scenario


@pytest.mark.parametrize("net", ["two_paths", "shared", "khalili"])
def test_scenarios_validate(net):
    for alg in CROSSVAL_ALGORITHMS:
        load_scenario(scenario(net, alg))


@pytest.mark.parametrize("net", ["two_paths", "shared"])
@pytest.mark.parametrize("alg", CROSSVAL_ALGORITHMS)
def test_random_loss_networks(net, alg):
    # Ten seeds: at three, seed-to-seed noise in the subflow shares (about +-0.03) is the size
    # of the tolerance below, so the check would measure the seeds rather than the model.
    df = compare(net, alg, duration=100.0, seeds=tuple(range(1, 11)))
    flows = df[df.subflow == -1]
    if (net, alg) == ("two_paths", "coupled"):
        # known disagreement: see the module docstring
        assert flows.err_calibrated.iloc[0] < -0.20
        assert df[(df.subflow == 1)].sim_pps.iloc[0] > 0.1 * flows.sim_pps.iloc[0]
        return
    assert np.all(np.abs(flows.err_calibrated) < 0.20), flows[["flow", "calibrated_pps", "sim_pps"]]
    if alg in ("lia", "balia", "ewtcp(a=1)"):
        sub = df[(df.subflow >= 0) & (df.flow == "mptcp")]
        conn_fluid = sub.fluid_pps / sub.fluid_pps.sum()
        conn_sim = sub.sim_pps / sub.sim_pps.sum()
        assert np.all(np.abs(conn_sim - conn_fluid) < 0.06), sub


def test_khalili_single_path_users():
    ratio = {}
    for alg in ("ewtcp(a=1)", "lia"):
        df = compare("khalili", alg, duration=100.0, seeds=(1, 2, 3))
        flows = df[df.subflow == -1]
        sp = flows[flows.flow.str.startswith("sp")]
        ratio[alg] = sp.sim_pps.sum() / sp.fluid_pps.sum()
    assert abs(ratio["ewtcp(a=1)"] - 1) < 0.25
    assert ratio["lia"] < 0.8  # known disagreement: packet-level LIA is less friendly


def test_fluid_prediction_khalili_fills_both_links():
    df = fluid_prediction("khalili", "balia")
    flows = df[df.subflow == -1]
    assert flows.fluid_pps.sum() == pytest.approx(2 * 10e6 / (8 * 1500), rel=1e-9)
