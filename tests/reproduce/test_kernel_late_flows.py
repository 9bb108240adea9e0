"""Flows that start late and leave early on the kernel backend, and the start-jitter reading,
without root: the cache keys of plans made before the links counted IP packets are never reused,
Balia Table V maps with its SP flow's start and stop, the offsets Rust hands over are the
simulator's own, a jittered plan gets its own key, and the Table V metric computed from a
test-bed run on the run's clock is the simulator's metric, checked by hand."""

from __future__ import annotations

import platform
import tomllib

import numpy as np
import pathpool
import pytest
from pathpool.kernel.mapping import map_scenario, start_offsets
from pathpool.kernel.run import results_from_raw
from pathpool.reproduce import kernel as kb
from pathpool.reproduce import metrics
from pathpool.reproduce.experiments import Options, build_jobs, load_experiments, scenario_root

#: Kernel release the cached runs in the shared cache were made on (the key includes it).
RELEASE = "6.18.44-fc-v782"

#: KernelJob.key of seed 1, computed on main (ae17a3f) before flows could start late, when the
#: test bed's links counted Ethernet frames (0.9% less payload rate than the scenario's rate of
#: IP packets): such runs must never be reused.
FRAME_RATE = {
    ("rsf", "quickack", "rsf/table2_s2", "lia"): "7e16612521194def2de194f0",
    ("rsf", "linux", "rsf/table2_s2", "lia"): "8ae7ede172a8798c5c044506",
    ("rsf", "quickack", "rsf/table2_s0", "tcp"): "8b32fa44c57eee48f1c345a7",
}

#: The key of a plan with an access link when the test bed queued the access at the router's
#: ingress (before TCP small queues stopped reaching it): such runs must never be reused.
ACCESS_AT_INGRESS = {("khalili", "quickack", "khalili/n1_5", "lia"): "23b7965cd763a00c4eb60b4b"}


#: KernelJob.key of seed 1 as the report's cached kernel runs have them (report/kernel, Linux
#: 6.18.44-fc-v857): without the bed's send jitter (--kernel-send-jitter off) a plan must keep
#: them, or regenerating the report would rerun every kernel job.
CACHED_REPORT = {
    ("rsf", "quickack", "rsf/table2_s2", "balia"): "29787a376452b8d0f48d1a50",
    ("khalili", "quickack", "khalili/n1_5", "olia"): "23b5942ba75db6165a96c41a",
    ("balia", "quickack", "balia/table3", "olia"): "d7718ca7ba8af41eb071c88d",
}


def _kjobs(paper: str, reading: str, exp: str, alg: str, jitter: str = "off", seeds=(1,), send: str = "off"):
    jobs = [j for j in build_jobs(load_experiments([paper]), list(seeds), Options(ack_reading=reading))
            if j.tags["experiment"] == exp and j.tags["run_algorithm"] == alg]
    runnable, skipped = kb.plan_jobs(jobs, reading, start_jitter=jitter, send_jitter=send)
    assert not skipped, skipped
    return runnable


@pytest.mark.parametrize("paper, reading, exp, alg", list(FRAME_RATE))
def test_plans_no_longer_reuse_runs_whose_links_counted_ethernet_frames(monkeypatch, paper, reading, exp, alg):
    monkeypatch.setattr(platform, "release", lambda: RELEASE)
    (kj,) = _kjobs(paper, reading, exp, alg)
    assert all(not f.timed for f in kj.plan.flows)
    d = kj.plan.describe()
    assert "start_s" not in str(d) and "sample_ms" not in d and d["link_rate"] == "ip-packets"
    assert kj.key() != FRAME_RATE[(paper, reading, exp, alg)]


@pytest.mark.parametrize("paper, reading, exp, alg", list(ACCESS_AT_INGRESS))
def test_plans_with_an_access_link_no_longer_reuse_runs_queued_at_the_ingress(monkeypatch, paper, reading,
                                                                               exp, alg):
    monkeypatch.setattr(platform, "release", lambda: RELEASE)
    (kj,) = _kjobs(paper, reading, exp, alg)
    assert [a["queued"] for a in kj.plan.describe()["access"]] == ["after-ip-receive"]
    assert kj.key() != ACCESS_AT_INGRESS[(paper, reading, exp, alg)]


def test_table5_maps_with_the_sp_flows_start_and_stop():
    jobs = build_jobs([e for e in load_experiments(["balia"]) if e.key == "balia/table5"], [1], Options())
    runnable, skipped = kb.plan_jobs(jobs, "quickack")
    assert {kj.job.tags["run_algorithm"] for kj in runnable} >= {"lia", "olia", "balia"}
    # Only algorithms without a kernel version are left out, never for the timing.
    assert all("has no kernel version" in s.reason for s in skipped)
    kj = next(k for k in runnable if k.job.tags["run_algorithm"] == "balia")
    p = kj.plan
    assert [(f.name, f.kind, f.cc, f.path, f.start_s, f.stop_s) for f in p.flows] == [
        ("mp", "mptcp", "pp_balia", 0, 0.0, None), ("sp", "tcp", "reno", 1, 40.0, 80.0)]
    assert p.duration_s == 160.0 and p.sample_ms == 100.0   # metrics.interval = 100 ms
    flows = p.describe()["flows"]
    assert "start_s" not in flows[0] and "stop_s" not in flows[0]
    assert (flows[1]["start_s"], flows[1]["stop_s"]) == (40.0, 80.0)


def test_a_stop_at_or_after_the_runs_end_is_no_stop_and_a_start_after_it_is_refused():
    doc = tomllib.loads((scenario_root() / "balia2016" / "table5_responsiveness.toml").read_text())
    doc["flows"][1]["stop"] = "200s"
    assert map_scenario(doc, max_duration_s=300).flows[1].stop_s is None
    # The cap on the run's length moves the end: a stop after it is no stop either.
    doc["flows"][1]["stop"] = "80s"
    assert map_scenario(doc, max_duration_s=60).flows[1].stop_s is None
    with pytest.raises(pathpool.ScenarioError) as e:
        map_scenario(doc, max_duration_s=30)
    assert e.value.field == "flows[1].start" and "start < 30 s" in e.value.allowed


def _jitter_doc() -> dict:
    return {
        "name": "jit", "duration": "3s", "seeds": [1],
        "links": [{"name": "l", "rate": "10Mbps", "delay": "10ms"}],
        "paths": [{"name": "p", "links": ["l"]}],
        "flows": [{"name": "a", "kind": "tcp", "path": "p", "start": "0.5s", "start_jitter": "1s"},
                  {"name": "b", "kind": "tcp", "path": "p", "start_jitter": "100ms", "count": 3},
                  {"name": "c", "kind": "tcp", "path": "p"}],
    }


@pytest.mark.parametrize("seed", [1, 7])
def test_start_offsets_are_the_simulators(seed):
    doc = _jitter_doc()
    off = start_offsets(doc, seed)
    assert off["c"] == 0 and 0 <= off["a"] < 1_000_000_000
    assert all(0 <= off[f"b-{k}"] < 100_000_000 for k in range(3))
    assert len({off[f"b-{k}"] for k in range(3)}) == 3        # each flow its own stream
    starts = dict(zip(*(pathpool.run(doc, seeds=[seed]).flows[c] for c in ("flow", "start_s"))))
    want = {"a": 500_000_000 + off["a"], "c": 0, **{f"b-{k}": off[f"b-{k}"] for k in range(3)}}
    assert starts == {n: ns / 1e9 for n, ns in want.items()}
    # Another seed draws other offsets.
    assert start_offsets(doc, seed + 1)["a"] != off["a"]


def test_khalili_jittered_plans_start_at_the_simulators_times_and_get_their_own_keys(monkeypatch):
    monkeypatch.setattr(platform, "release", lambda: RELEASE)
    (off,) = _kjobs("khalili", "quickack", "khalili/n1_5", "lia", "off")
    on = _kjobs("khalili", "quickack", "khalili/n1_5", "lia", "scenario", seeds=(1, 2))
    assert "start_s" not in str(off.plan.describe())
    sc = on[0].job.scenario
    for kj in on:
        drawn = start_offsets(sc, kj.job.seed)
        assert {f.name: f.start_s for f in kj.plan.flows} == {n: ns / 1e9 for n, ns in drawn.items()}
        assert any(f.start_s > 0 for f in kj.plan.flows) and all(f.stop_s is None for f in kj.plan.flows)
        assert not any("start_jitter" in n for n in kj.plan.notes)
    assert on[0].key() != off.key() and on[0].key() != on[1].key()
    # Same seed, same offsets, same key (Rust draws them from the seed alone).
    assert on[0].key() == _kjobs("khalili", "quickack", "khalili/n1_5", "lia", "scenario")[0].key()
    with pytest.raises(ValueError, match="allowed: off, scenario"):
        kb.plan_jobs([], "quickack", start_jitter="on")


@pytest.mark.parametrize("paper, reading, exp, alg", list(CACHED_REPORT))
def test_the_send_jitter_reading_keeps_the_cached_keys_off_and_holds_each_path_on(monkeypatch, paper, reading,
                                                                                  exp, alg):
    """``--kernel-send-jitter off`` (the default) plans as before the reading existed (the
    report's cached runs are found); ``scenario`` holds each path's data for the flows' 0.5 ms
    (the scenarios' default send jitter) and so gets its own key."""
    monkeypatch.setattr(platform, "release", lambda: "6.18.44-fc-v857")
    (off,) = _kjobs(paper, reading, exp, alg)
    assert off.key() == CACHED_REPORT[(paper, reading, exp, alg)]
    assert all(p.jitter_ms == 0 for p in off.plan.paths) and "jitter_ms" not in str(off.plan.describe())
    (on,) = _kjobs(paper, reading, exp, alg, send="scenario")
    assert [p.jitter_ms for p in on.plan.paths] == [pytest.approx(0.5)] * len(on.plan.paths)
    assert on.key() != off.key()
    with pytest.raises(ValueError, match="send_jitter = 'on' .allowed: off, scenario"):
        kb.plan_jobs([], "quickack", send_jitter="on")


# -- Table V from a test-bed run on the run's clock --------------------------------------------------

def _info(local: str, acked: int, cwnd: int) -> dict:
    return {"local": local, "bytes_acked": acked, "bytes_sent": acked, "data_segs_out": acked // 1448,
            "total_retrans": 0, "min_rtt_us": 100000, "rtt_us": 120000, "snd_cwnd": cwnd, "total_rto": 0}


def _mp_cwnd(k: int) -> int:
    """The MPTCP flow's second-path window at t = k / 10 s: 20 before 40 s, 8 while the SP flow
    is there, then one more segment per second from 80 s (back at 20 at 92 s)."""
    return 20 if k < 400 else 8 if k < 800 else min(30, 8 + (k - 800) // 10)


#: CLOCK_MONOTONIC of the run's t = 0 in the hand-made runs.
EPOCH = 5000.0


def _table5_run(sp_at_stop: int) -> dict:
    mp = [{"t": k / 10, "subflows": [_info("10.77.0.1", k * 1000, 25), _info("10.77.1.1", k * 500, _mp_cwnd(k))]}
          for k in range(1600)]
    sp = [{"t": k / 10, "subflows": [_info("10.77.1.1", (k - 400) * 700, 10)]} for k in range(400, 800)]
    return {"seed": 1, "wall_s": 162.0, "links_before": {}, "links_after": {},
            "raw": {"duration_s": 160.0, "epoch": True,
                    "senders": {"mp": {"cc": "pp_balia", "local_port": 1000, "final": mp[-1]["subflows"],
                                       "samples": mp, "t0_mono": EPOCH},
                                "sp": {"cc": "reno", "local_port": 2000, "final": sp[-1]["subflows"],
                                       "samples": sp, "t0_mono": EPOCH}},
                    "receiver": {"connections": [
                        {"peer": "10.77.0.1", "port": 1000, "bytes": 3_000_000, "bytes_in_window": 1,
                         "duration_s": 160.0, "at_marks": [[80.0, 1_000_000], [160.0, 2_400_000]],
                         # Reads 1,000 B every 0.1 s to 10 s, then nothing until 20.05 s (stalled
                         # behind one subflow while the other's data is acknowledged).
                         "progress": [[EPOCH, 0]] + [[EPOCH + k / 10 - 0.001, k * 1000] for k in range(1, 101)]
                         + [[EPOCH + 20.05, 101_000], [EPOCH + 160, 2_400_000]]},
                        {"peer": "10.77.1.1", "port": 2000, "bytes": sp_at_stop + 9000, "bytes_in_window": 1,
                         "duration_s": 40.3, "at_marks": [[80.0, sp_at_stop], [160.0, sp_at_stop + 9000]],
                         "progress": [[EPOCH + 40 + k / 10 - 0.001, k * 700] for k in range(401)]}]}}}


def test_table5_metric_from_a_kernel_run_by_hand():
    e = next(x for x in load_experiments(["balia"]) if x.key == "balia/table5")
    sc = e.scenario("balia", float("nan"), Options())
    plan = map_scenario(sc, max_duration_s=300, kernel_tcp=True)
    res = results_from_raw(plan, [_table5_run(9_000_000)], sc)
    f = res.flows.set_index("flow")
    # The SP flow: bytes received by its stop (80 s) over its 40 s; the MPTCP flow: by 160 s.
    assert (f.loc["sp", "start_s"], f.loc["sp", "end_s"]) == (40.0, 80.0)
    assert f.loc["sp", "goodput_bps"] == 9_000_000 * 8 / 40.0
    assert f.loc["mp", "goodput_bps"] == 2_400_000 * 8 / 160.0
    # Subflow rates over each flow's own active interval.
    s = res.subflows.set_index(["flow", "subflow"])
    assert s.loc[("sp", 0), "goodput_bps"] == 399 * 700 * 8 / 40.0
    series = res.series
    cw = series[(series["id"] == "mp/1") & (series["metric"] == "cwnd")]
    assert cw["time_s"].min() == 0.0 and cw["time_s"].max() == pytest.approx(159.9)   # the whole run
    sp_rate = series[(series["id"] == "sp") & (series["metric"] == "goodput_bps")]
    # The SP flow's first rate sample is over 40.0-40.1 s (from its start, not from 0).
    assert sp_rate["time_s"].min() == pytest.approx(40.1) and sp_rate["value"].iloc[0] == pytest.approx(700 * 8 / 0.1)
    # A flow's goodput series is what its receiver read, as the simulator's: nothing while the
    # connection is stalled (10-20 s), although its subflows' acknowledged bytes grew all along.
    mp_rate = series[(series["id"] == "mp") & (series["metric"] == "goodput_bps")].set_index("time_s")["value"]
    assert (mp_rate[(mp_rate.index > 10.05) & (mp_rate.index < 19.95)] == 0).all()
    assert list(mp_rate[(mp_rate.index > 0.05) & (mp_rate.index < 10.05)]) == pytest.approx([1000 * 8 / 0.1] * 100)
    tables = kb._tagged(res, {"experiment": e.key, "run_algorithm": "balia", "x": float("nan")})
    rows = metrics.responsiveness(tables, e, Options())
    got = {r["metric"]: r["value"] for r in rows}
    assert got["sptcp_mbps"] == pytest.approx(9_000_000 * 8 / 40.0 / 1e6)
    # Reference: mean window over 20-40 s = 20; back at 20 first at t = 92.0 s, 12 s after 80 s.
    assert got["recovery_s"] == pytest.approx(12.0) and got["recovery_censored"] == 0.0
    t = np.arange(1600) / 10
    assert metrics.recovery_time(t, np.array([_mp_cwnd(k) for k in range(1600)], float), (20.0, 40.0), 80.0) == (
        pytest.approx(12.0), False)


def test_a_flow_is_timed_from_its_start_plus_the_beds_ready_wait():
    """The bed's sender writes one round trip after connect() (the receiver's READY, which
    keeps a connection MPTCP when its MP_CAPABLE segments are lost): that wait is the bed's, not
    the scenario's, so the flow's interval starts after it. The SP flow of the run by hand
    waited 0.25 s: it is timed over 40.25-80 s (before: 40-80 s)."""
    e = next(x for x in load_experiments(["balia"]) if x.key == "balia/table5")
    sc = e.scenario("balia", float("nan"), Options())
    plan = map_scenario(sc, max_duration_s=300, kernel_tcp=True)
    run = _table5_run(9_000_000)
    run["raw"]["senders"]["sp"]["ready_wait_s"] = 0.25
    res = results_from_raw(plan, [run], sc)
    f = res.flows.set_index("flow")
    assert (f.loc["sp", "start_s"], f.loc["sp", "end_s"]) == (40.25, 80.0)
    assert f.loc["sp", "goodput_bps"] == pytest.approx(9_000_000 * 8 / 39.75)
    # Its subflow over the same interval (they add up to the flow).
    s = res.subflows.set_index(["flow", "subflow"])
    assert s.loc[("sp", 0), "goodput_bps"] == pytest.approx(399 * 700 * 8 / 39.75)
    assert f.loc["mp", "goodput_bps"] == 2_400_000 * 8 / 160.0


def test_the_reports_method_names_each_start_jitter_reading():
    from pathpool.reproduce.report import KERNEL_JITTER

    assert set(KERNEL_JITTER) == set(kb.START_JITTER_READINGS)
    assert "--kernel-start-jitter scenario" in KERNEL_JITTER["scenario"]


def test_a_report_of_table5_alone_is_written(tmp_path):
    """Table V has no published number (lost in extraction): its comparison table is empty but
    keeps its columns, so the figures and the report are still written (before: KeyError 'table'
    in figures.draw_all for `pathpool reproduce balia --only table5`)."""
    from pathpool.reproduce.runner import reproduce

    out = reproduce(["balia"], seeds=[1], out=tmp_path, workers=1, only=["table5"],
                    options=Options(time_scale=0.05))
    assert len(out.comparison) == 0 and "table" in out.comparison.columns
    assert (tmp_path / "README.md").exists()
    assert set(out.per_run["metric"]) >= {"sptcp_mbps", "recovery_s"}


class _FakeBed:
    """Stands in for a Testbed: returns a fixed raw run."""

    def __init__(self, raw: dict):
        self.raw = raw
        self.asked: dict = {}

    def link_stats(self) -> dict:
        return {}

    access_stats = link_stats

    def client_addr(self, k: int) -> str:
        from pathpool.kernel.testbed import Testbed

        return Testbed.client_addr(self, k)   # the real bed's addressing: path k's client is 10.77.k.1

    def run_flows(self, flows, duration_s, sample_ms):
        self.asked = {"flows": flows, "duration_s": duration_s, "sample_ms": sample_ms}
        return self.raw


def test_a_sender_that_connected_late_fails_the_run():
    from pathpool.kernel.loader import KernelError
    from pathpool.kernel.run import run_once

    e = next(x for x in load_experiments(["balia"]) if x.key == "balia/table5")
    plan = map_scenario(e.scenario("balia", float("nan"), Options()), max_duration_s=300, kernel_tcp=True)
    raw = _table5_run(1)["raw"]
    # A SYN lost in the full queue: the handshake ends after the 1 s initial RTO (measured on
    # the bed: 1.41 s after the start). The sender was on time: the run stands.
    raw["senders"]["sp"].update(connect_s=40.01, connected_s=41.41)
    bed = _FakeBed(raw)
    assert run_once(bed, plan, 1)["raw"] is raw
    assert bed.asked["sample_ms"] == 100.0 and bed.asked["duration_s"] == 160.0
    raw["senders"]["sp"]["connect_s"] = 40.7
    with pytest.raises(KernelError, match="flow sp began its connect 0.70 s after its start"):
        run_once(bed, plan, 1)
