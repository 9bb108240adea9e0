"""Seed 003's controllers driving the simulator's paced multipath sender (kind = "rate")."""

from __future__ import annotations

import copy
import json
import tomllib

import numpy as np
import pandas as pd
import pytest
from pathpool import _core
from pathpool.errors import ScenarioError, SimulationError
from pathpool.ratecontrol import mptcp_rates
from pathpool.ratecontrol.packetsim import friendliness, run_rate_flow

# Two disjoint lossy paths, no competing traffic: the controller's inputs are the paths' loss
# and delay alone.
SHORT = {
    "name": "rate_short",
    "duration": "30s",
    "links": [
        {"name": "a", "rate": "50Mbps", "delay": "20ms", "loss": "2%"},
        {"name": "b", "rate": "50Mbps", "delay": "50ms", "loss": "1%", "buffer": "1000pkt"},
    ],
    "paths": [{"name": "pa", "links": ["a"]}, {"name": "pb", "links": ["b"], "ack_delay": "10ms"}],
    "flows": [{"name": "s", "kind": "rate", "paths": ["pa", "pb"], "rates": [100, 100],
               "controller": "mptcp", "block_length": 10, "send_jitter": 0}],
}


@pytest.fixture(scope="module")
def short_run():
    return run_rate_flow(SHORT, seed=4, estimation_window=5.0)


def test_rates_follow_the_controllers_decisions(short_run):
    res = short_run
    p = res.paths.pivot(index="t", columns="path_index")
    decided = res.intervals.decided.to_numpy()
    assert decided.sum() >= 20, "the controller must take decisions once its 5 s window is full"
    steps = 0
    for m in np.flatnonzero(decided[:-1]):
        # The rates in force in the next step are the LIA-capped equation rates (Pluntke & Rio 2011
        # Section 2) of the estimates after this step ...
        expected = mptcp_rates(p.p_hat.iloc[m].to_numpy(), p.rtt_mean_hat.iloc[m].to_numpy(), cap=True).rates
        np.testing.assert_allclose(p.rate_pps.iloc[m + 1].to_numpy(), expected, rtol=1e-12)
        # ... and the simulator's pacers sent at those rates: one interval (1 s) at rate x
        # sends x packets within one (plus one for the packet in flight at the change).
        sent = p.sender_sent.iloc[m + 1].to_numpy()
        assert np.all(np.abs(sent - expected) <= 2.0), (m, sent, expected)
        steps += 1
    assert steps >= 20


def test_estimates_see_the_configured_paths(short_run):
    p = short_run.paths
    last = p[p.t == p.t.max()].set_index("path_index")
    # 2% and 1% Bernoulli loss; RTT = 2 x 20 ms and 50 + 10 ms (+ serialisation, no queueing).
    assert last.p_hat[0] == pytest.approx(0.02, abs=0.01)
    assert last.p_hat[1] == pytest.approx(0.01, abs=0.006)
    assert last.rtt_mean_hat[0] == pytest.approx(0.040, abs=0.001)
    assert last.rtt_mean_hat[1] == pytest.approx(0.060, abs=0.001)
    assert (last.late_hat == 0).all()


def test_feedback_is_conserved(short_run):
    res = short_run
    agg = res.paths.groupby("path_index")[["sent", "lost", "arrived", "sender_sent"]].sum()
    np.testing.assert_array_equal(agg.sent, agg.arrived + agg.lost)
    sub = res.results.subflows.set_index("subflow")
    # What the reports carried never exceeds what the sender sent, and the losses the
    # receiver counted by the end include every loss reported.
    assert (agg.sent <= sub.sent_packets).all()
    assert (agg.lost <= sub.lost_packets).all()
    assert (agg.sender_sent <= sub.sent_packets).all()
    f = res.results.flows.iloc[0]
    assert f.kind == "rate" and f.algorithm == "mptcp" and f.integrity_errors == 0
    assert f.sent_packets == f.received_packets + f.dropped_packets + f.in_flight_packets


def test_same_seed_same_run_and_seeds_differ(short_run):
    again = run_rate_flow(SHORT, seed=4, estimation_window=5.0)
    pd.testing.assert_frame_equal(again.paths, short_run.paths)
    pd.testing.assert_frame_equal(again.intervals, short_run.intervals)
    cols = [c for c in again.results.flows.columns if c != "wall_s"]
    pd.testing.assert_frame_equal(again.results.flows[cols], short_run.results.flows[cols])
    other = run_rate_flow(SHORT, seed=5, estimation_window=5.0)
    assert not other.paths.lost.equals(short_run.paths.lost)


def test_fixed_controller_keeps_the_initial_rates():
    res = run_rate_flow(SHORT, controller="fixed", seed=1)
    assert not res.intervals.decided.any()
    assert (res.paths.rate_pps == 100.0).all()
    assert res.results.flows.algorithm.iloc[0] == "fixed"
    # 100 packets/s on each path: at 0, 10 ms, ..., 30 s (the end is included).
    assert res.results.subflows.sent_packets.tolist() == [3001, 3001]


SCENARIO = "scenarios/pluntke2011/friendliness_shared_bottleneck.toml"

# Tolerances, stated before measuring: the rate flow must do no harm, i.e. take at most 1.25x
# the mean TCP flow's throughput on the shared bottleneck; its time-averaged rates may exceed
# the TCP-friendly region (eq. 1) computed from its own time-averaged loss and RTT by at most
# 15% of the largest TCP rate (the controller works on 20 s windows of a nonlinear formula, so
# averages of rates and rates of averages differ).


HIDDEN = "scenarios/pluntke2011/friendliness_hidden_bottleneck.toml"


@pytest.fixture(scope="module", params=["mptcp", "optimised"])
def shared(request, repo_root):
    return friendliness(run_rate_flow(repo_root / SCENARIO, controller=request.param, seed=1))


@pytest.fixture(scope="module", params=["mptcp", "optimised"])
def hidden(request, repo_root):
    return friendliness(run_rate_flow(repo_root / HIDDEN, controller=request.param, seed=1))


def test_rate_flow_does_no_harm_on_the_shared_bottleneck(shared):
    assert shared["link"] == "bottleneck" and shared["shared_paths"] == ["shared"]
    assert len(shared["tcp_flows"]) == 4
    assert 0.0 < shared["ratio"] <= 1.25
    assert shared["region"]["packets/sqrt2"]["violation_rel"] <= 0.15


def test_both_paths_through_a_hidden_bottleneck_take_at_most_one_tcp_share(hidden):
    # Eq. (1) for S = all paths: together they take no more than one TCP flow (1.25x tolerance).
    assert hidden["shared_paths"] == ["a", "b"]
    assert 0.0 < hidden["ratio"] <= 1.25
    assert hidden["region"]["packets/sqrt2"]["violation_rel"] <= 0.15


@pytest.mark.xfail(strict=True, reason=(
    "finding: on a drop-tail bottleneck the paced rate flow sees 6-10x the loss rate of the "
    "ACK-clocked TCP flows (3-7% vs 0.5%), and coupling moves most of its traffic to its other "
    "path, so it gets 1-48% of a TCP flow's throughput there, not within a factor of 2 "
    "(ratecontrol/README.md, 'Packet-level sender')"))
def test_rate_flow_gets_within_a_factor_two_of_tcp(shared):
    assert 0.5 <= shared["ratio"] <= 2.0


def test_paced_flow_sees_more_loss_than_tcp(repo_root):
    # Fixed 100 packets/s on the shared path; 5 ms of send jitter so that the result does not
    # hang on the pacing period's phase against the TCP flows (with 0.5 ms it ranges from
    # 0.5% to 7% over rates of 30-300 packets/s: Floyd & Jacobson's drop-tail phase effects).
    sc = tomllib.loads((repo_root / SCENARIO).read_text())
    sc["flows"][0]["send_jitter"] = "5ms"
    res = run_rate_flow(sc, controller="fixed", seed=2)
    tcp = res.results.subflows[res.results.flows.set_index("flow").loc[res.results.subflows.flow].kind.to_numpy() == "tcp"]
    p_tcp = tcp.lost_packets.sum() / tcp.sent_packets.sum()
    fr = friendliness(res)
    assert fr["per_path"][0]["p"] > 2 * p_tcp


def test_bad_inputs_raise_clear_errors(repo_root):
    with pytest.raises(ValueError, match="unknown controller"):
        run_rate_flow(SHORT, controller="bogus")
    with pytest.raises(ValueError, match="loss_measure"):
        run_rate_flow(SHORT, loss_measure="bytes")
    with pytest.raises(SimulationError, match="no rate flow named"):
        run_rate_flow(SHORT, flow="nope")
    no_rate = {**SHORT, "flows": [{"name": "t", "kind": "tcp", "path": "pa"}]}
    with pytest.raises(ScenarioError, match="rate"):
        run_rate_flow(no_rate)
    bad = copy.deepcopy(SHORT)
    bad["flows"][0]["rates"] = [1.0]
    with pytest.raises(ScenarioError) as e:
        run_rate_flow(bad)
    assert e.value.field == "flows[0].rates"
    bad = copy.deepcopy(SHORT)
    bad["flows"][0]["algorithm"] = "lia"
    with pytest.raises(ScenarioError) as e:
        run_rate_flow(bad)
    assert e.value.field == "flows[0].algorithm"


def test_core_stepper_errors_never_crash():
    sc = SHORT
    import tomli_w

    sim = _core.Simulation(tomli_w.dumps(sc), "<dict>", 1)
    with pytest.raises(SimulationError, match="paths; got 3 rates"):
        sim.set_rates("s", [1.0, 2.0, 3.0], 5)
    with pytest.raises(SimulationError, match="source_per_block"):
        sim.set_rates("s", [1.0, 2.0], 11)
    with pytest.raises(SimulationError, match="finite"):
        sim.run_until(float("nan"))
    sim.run_until(2.0)
    assert sim.now_s == 2.0
    out = sim.finish()
    assert out["flows"]["kind"] == ["rate"]
    with pytest.raises(SimulationError, match="finished"):
        sim.run_until(3.0)


def test_cli_packetsim_writes_results(cli, repo_root, tmp_path):
    r = cli("ratecontrol", "packetsim", str(repo_root / SCENARIO), "--controller", "mptcp", "--out", str(tmp_path))
    assert r.code == 0, r.err
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["controller"] == "mptcp" and summary["friendliness"]["link"] == "bottleneck"
    assert (tmp_path / "sim" / "flows.parquet").exists()
    assert len(pd.read_csv(tmp_path / "paths.csv")) == 2 * len(pd.read_csv(tmp_path / "intervals.csv"))
    scenario = tomllib.loads((tmp_path / "sim" / "scenario.toml").read_text())
    assert scenario["flows"][0]["kind"] == "rate"
