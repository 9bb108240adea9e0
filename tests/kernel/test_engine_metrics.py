"""One definition of the flow and subflow rates on the Linux backend (:mod:`pathpool.metrics`):
every rate of a flow and of its subflows is measured over the flow's active interval, so the
subflows add up to their flow. Pure tests on made-up test-bed output, and (as root, under the
machine's kernel lock) a short download and a short bulk transfer on the bed."""

from __future__ import annotations

import numpy as np
import pathpool
import pytest
from pathpool.kernel.mapping import KERNEL_OPTION_BYTES, map_scenario
from pathpool.kernel.run import results_from_raw
from pathpool.metrics import HEADER_BYTES


def _two_paths(app: dict, duration: str = "10s") -> dict:
    return {
        "name": "dl", "duration": duration, "seeds": [1],
        "links": [{"name": "la", "rate": "10Mbps", "delay": "10ms", "buffer": "50pkt"},
                  {"name": "lb", "rate": "10Mbps", "delay": "20ms", "buffer": "50pkt"}],
        "paths": [{"name": "a", "links": ["la"]}, {"name": "b", "links": ["lb"]}],
        "flows": [{"name": "m", "kind": "mptcp", "paths": ["a", "b"], "algorithm": "lia", **app}],
    }


def _info(local: str, acked: int, sent_bytes: int, segs: int) -> dict:
    return {"local": local, "bytes_acked": acked, "bytes_sent": sent_bytes, "data_segs_out": segs,
            "total_retrans": 0, "min_rtt_us": 20000, "rtt_us": 25000, "snd_cwnd": 10, "total_rto": 0}


def _raw(final: list[dict], receiver: dict, duration_s: float, epoch: bool = False) -> dict:
    return {"seed": 1, "wall_s": duration_s, "links_before": {}, "links_after": {},
            "raw": {"duration_s": duration_s, "epoch": epoch,
                    "senders": {"m": {"cc": "pp_lia", "local_port": 1000, "final": final,
                                      "samples": [{"t": 0.5, "subflows": final}]}},
                    "receiver": {"connections": [{"peer": "10.77.0.1", "port": 1000, **receiver}]}}}


def test_a_completed_download_measures_flow_and_subflows_over_its_download_time():
    """2 MB in 2 s of a 10 s cap: the flow's goodput is 8 Mbit/s and its subflows' (1.2 MB and
    0.8 MB acknowledged) 4.8 and 3.2 Mbit/s, not a fifth of that (the cap's 10 s); throughputs
    count the wire bytes (payload + 52 header + 24 DSS bytes per segment) over the same 2 s."""
    sc = pathpool.load_scenario(_two_paths({"app": "file", "size": "2MB"}))
    plan = map_scenario(sc, max_duration_s=10.0)
    final = [_info("10.77.0.1", 1_200_000, 1_210_000, 850), _info("10.77.1.1", 800_000, 800_000, 562)]
    res = results_from_raw(plan, [_raw(final, {"bytes": 2_000_000, "bytes_in_window": 2_000_000,
                                               "duration_s": 2.0}, 10.0)], sc)
    f = res.flows.iloc[0]
    assert (f["start_s"], f["end_s"], f["completion_time_s"]) == (0.0, 2.0, 2.0)
    assert f["goodput_bps"] == pytest.approx(8e6)
    s = res.subflows.sort_values("subflow")
    assert list(s["goodput_bps"]) == pytest.approx([4.8e6, 3.2e6])
    assert s["goodput_bps"].sum() == pytest.approx(f["goodput_bps"])
    per_seg = HEADER_BYTES + KERNEL_OPTION_BYTES["mptcp"]
    assert list(s["throughput_bps"]) == pytest.approx([(1_210_000 + 850 * per_seg) * 8 / 2.0,
                                                       (800_000 + 562 * per_seg) * 8 / 2.0])
    assert f["throughput_bps"] == pytest.approx(s["throughput_bps"].sum())


def test_a_download_is_timed_from_the_senders_first_write_to_the_receivers_last_byte():
    """On the namespaces' shared monotonic clock: the sender's first write at t0_mono 500.0 (it
    writes at once after READY: connected_s 0), the receiver's first read 25 ms later (the first
    packet's one-way delay) and its last byte at 502.0. The simulator's download time runs from
    its first segment's departure, so the bed's is 2.0 s, not the receiver's own 1.975 s."""
    sc = pathpool.load_scenario(_two_paths({"app": "file", "size": "2MB"}))
    plan = map_scenario(sc, max_duration_s=10.0)
    final = [_info("10.77.0.1", 1_200_000, 1_210_000, 850), _info("10.77.1.1", 800_000, 800_000, 562)]
    run = _raw(final, {"bytes": 2_000_000, "bytes_in_window": 2_000_000, "duration_s": 1.975,
                       "progress": [[499.99, 0], [500.5, 600_000], [502.0, 2_000_000]]}, 10.0)
    run["raw"]["senders"]["m"].update(t0_mono=500.0, connected_s=0.0)
    f = results_from_raw(plan, [run], sc).flows.iloc[0]
    assert f["completion_time_s"] == pytest.approx(2.0)
    assert f["goodput_bps"] == pytest.approx(8e6)


def test_a_late_flow_that_stops_measures_its_subflows_over_its_own_interval():
    """A bulk flow from 1 s to 4 s of a 10 s run (the run's clock, ``epoch``): 3 MB delivered by
    its stop is 8 Mbit/s over its 3 s, and so are its subflows together (2 MB + 1 MB acked)."""
    sc = pathpool.load_scenario(_two_paths({"start": "1s", "stop": "4s"}))
    plan = map_scenario(sc, max_duration_s=10.0)
    final = [_info("10.77.0.1", 2_000_000, 2_000_000, 1400), _info("10.77.1.1", 1_000_000, 1_000_000, 700)]
    res = results_from_raw(plan, [_raw(final, {"bytes": 3_100_000, "bytes_in_window": 3_100_000,
                                               "duration_s": 3.2, "at_marks": [[4.0, 3_000_000]]},
                                       10.0, epoch=True)], sc)
    f = res.flows.iloc[0]
    assert (f["start_s"], f["end_s"]) == (1.0, 4.0)
    assert f["goodput_bps"] == pytest.approx(8e6)
    assert res.subflows["goodput_bps"].sum() == pytest.approx(8e6)
    assert f["throughput_bps"] == pytest.approx(res.subflows["throughput_bps"].sum())


def test_an_unfinished_download_counts_what_arrived_within_the_run():
    """A 20 MB download that did not finish in the 10 s run: what the receiver got within the
    run (4 MB; 5 MB arrived in all, the rest while the sender's buffer drained afterwards) over
    the 10 s, as the simulator's lower bound; no completion time."""
    sc = pathpool.load_scenario(_two_paths({"app": "file", "size": "20MB"}))
    plan = map_scenario(sc, max_duration_s=10.0)
    final = [_info("10.77.0.1", 2_500_000, 2_500_000, 1760), _info("10.77.1.1", 1_500_000, 1_500_000, 1060)]
    res = results_from_raw(plan, [_raw(final, {"bytes": 5_000_000, "bytes_in_window": 4_000_000,
                                               "duration_s": 10.5}, 10.0)], sc)
    f = res.flows.iloc[0]
    assert f["end_s"] == 10.0 and f["completion_time_s"] != f["completion_time_s"]   # NaN
    assert f["delivered_bytes"] == 4_000_000 and f["goodput_bps"] == pytest.approx(3.2e6)
    assert res.subflows["goodput_bps"].sum() == pytest.approx(3.2e6)


def test_a_run_with_its_own_plan_starts_its_flows_at_that_plans_starts():
    """A run of a jittered scenario carries the plan of its seed (the simulator's draw): the
    flow is measured from its drawn start, 0.25 s, not the scenario's 0."""
    from pathpool.kernel.run import seed_plan

    sc = pathpool.load_scenario(_two_paths({"start_jitter": "1s"}))
    base = map_scenario(sc, max_duration_s=10.0)
    seeded = seed_plan(sc, 7, 10.0)
    drawn = pathpool.run(sc, seeds=[7]).flows.iloc[0]["start_s"]
    assert seeded.flows[0].start_s == pytest.approx(drawn) and 0 < drawn < 1
    final = [_info("10.77.0.1", 2_000_000, 2_000_000, 1400), _info("10.77.1.1", 1_000_000, 1_000_000, 700)]
    run = _raw(final, {"bytes": 3_000_000, "duration_s": 9.0, "at_marks": [[10.0, 3_000_000]]}, 10.0, epoch=True)
    res = results_from_raw(base, [dict(run, plan=seeded)], sc)
    f = res.flows.iloc[0]
    assert f["start_s"] == pytest.approx(drawn)
    assert f["goodput_bps"] == pytest.approx(3_000_000 * 8 / (10.0 - drawn))


def test_compare_does_not_warn_of_start_jitter_when_the_runs_used_the_draws(tmp_path):
    from pathpool.compare import differences_of
    from pathpool.kernel.run import START_OFFSETS_KEY, seed_plan

    sc = pathpool.load_scenario(_two_paths({"start_jitter": "1s"}))
    final = [_info("10.77.0.1", 2_000_000, 2_000_000, 1400), _info("10.77.1.1", 1_000_000, 1_000_000, 700)]
    run = _raw(final, {"bytes": 3_000_000, "duration_s": 9.0, "at_marks": [[10.0, 3_000_000]]}, 10.0, epoch=True)
    res = results_from_raw(map_scenario(sc), [dict(run, plan=seed_plan(sc, 1, 10.0))], sc)
    res.write(tmp_path / "plain")
    assert "flows[0].start_jitter" in {d.field for d in differences_of(tmp_path / "plain")}
    res.testbed[START_OFFSETS_KEY] = "each seed's"
    res.write(tmp_path / "drawn")
    assert "flows[0].start_jitter" not in {d.field for d in differences_of(tmp_path / "drawn")}


# -- on the test bed (root, under the kernel lock) -------------------------------------------------

@pytest.mark.parametrize("app, duration", [({"app": "file", "size": "3MB"}, "4s"), ({}, "3s")],
                         ids=["download", "bulk"])
def test_subflows_add_up_to_their_flow_on_the_bed(kernel_unclaimed, app, duration):
    """A few seconds of one MPTCP connection over two 10 Mbit/s paths: its subflows' goodputs
    add up to the flow's (within 3 %: the flow's bytes are the receiver's, the subflows' the
    sender's acknowledged ones) and their throughputs exactly, the download's over its download
    time."""
    from pathpool.kernel.run import run_linux

    res = run_linux(_two_paths(app, duration), seeds=[1], max_duration_s=10.0)
    f = res.flows.iloc[0]
    s = res.subflows
    print("flow goodput", f["goodput_bps"] / 1e6, "subflows", list(s["goodput_bps"] / 1e6))
    assert len(s) == 2 and (s["acked_bytes"] > 0).all()
    assert s["goodput_bps"].sum() == pytest.approx(f["goodput_bps"], rel=0.03)
    assert s["throughput_bps"].sum() == pytest.approx(f["throughput_bps"], rel=1e-9)
    if app:
        assert f["completion_time_s"] == pytest.approx(f["end_s"] - f["start_s"])
        assert f["completion_time_s"] < 3.5


def test_a_seed_starts_the_flows_at_the_simulators_draws_on_the_bed(kernel_unclaimed):
    """Two runs of 3 s of a scenario whose flow starts with up to 1 s of jitter: each run's flow
    starts when the simulator's does for the same seed, and the summary says so. The bed's
    flow is timed from after its wait for the receiver's READY (one 20 ms round trip here),
    which its start_s includes."""
    from pathpool.kernel.run import START_OFFSETS_KEY, run_linux

    sc = pathpool.load_scenario(_two_paths({"start_jitter": "1s"}, "3s"))
    lin = run_linux(sc, seeds=[3, 4], max_duration_s=3.0)
    sim = pathpool.run(sc, seeds=[3, 4])
    wait = np.array(lin.flows["start_s"]) - np.array(sim.flows["start_s"])
    assert ((wait > 0.015) & (wait < 0.2)).all(), wait
    assert lin.flows["start_s"].nunique() == 2 and (lin.flows["goodput_bps"] > 0).all()
    assert lin.testbed[START_OFFSETS_KEY]
