"""`pathpool run --backend linux` and `pathpool compare`: the scenario -> test-bed mapping (pure,
no root), the conversion of test-bed output to the simulator's schema, the comparison table
from two result directories, and (as root) both end to end on scenarios/kernel/two_paths_shared.toml.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pathpool
import pytest
from pathpool.compare import COLUMNS, compare_dirs, compare_results
from pathpool.kernel import loader
from pathpool.kernel.mapping import UnsupportedScenario, map_scenario
from pathpool.kernel.run import results_from_raw, run_linux
from pathpool.sim.schema import column_names

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / "scenarios" / "kernel" / "two_paths_shared.toml"


def _scenario(**over) -> dict:
    sc = {
        "name": "t", "duration": "30s", "seeds": [1, 2],
        "links": [
            {"name": "a1", "rate": "1Gbps", "delay": "2ms", "loss": 0.01},
            {"name": "a2", "rate": "8Mbps", "delay": "5ms", "buffer": "30KB", "loss": "2%"},
            {"name": "b", "rate": "10Mbps", "delay": "10ms", "buffer": 40},
            {"name": "back", "rate": "1Gbps", "delay": "7ms"},
        ],
        "paths": [
            {"name": "p", "links": ["a1", "a2"], "ack_delay": "3ms"},
            {"name": "q", "links": ["b"], "ack_links": ["back"]},
            {"name": "r", "links": ["a1"]},
        ],
        "flows": [
            {"name": "m", "kind": "mptcp", "paths": ["p", "q"], "algorithm": "rsf-db", "params": {"d": 0.05}},
            {"name": "t", "kind": "tcp", "path": "q", "algorithm": "cubic", "count": 2},
        ],
    }
    sc.update(over)
    return sc


# -- mapping (no root) ----------------------------------------------------------------------------

def test_shipped_scenario_maps_to_one_shared_bottleneck():
    plan = map_scenario(SHARED)
    assert plan.shared_bottleneck and plan.bottleneck_links == ["bottleneck"]
    assert plan.path_names == ["mp1", "mp2", "sp"] and plan.mptcp_paths == 2
    for p in plan.paths:
        assert (p.rate_mbps, p.delay_ms, p.rev_delay_ms, p.loss, p.queue_pkts) == (20.0, 20.0, 20.0, 0.0, 100)
    assert [(f.name, f.kind, f.cc, f.path) for f in plan.flows] == [
        ("mptcp", "mptcp", "pp_lia", 0), ("tcp", "tcp", "pp_reno", 2)]
    assert plan.duration_s == 10.0 and plan.tunables == {"counting": "bytes"}
    assert plan.kernel_algorithms() == ["pp_lia", "pp_reno"]


def test_disjoint_paths_rates_delays_loss_buffers_by_hand():
    plan = map_scenario(_scenario(), max_duration_s=4.0)
    assert not plan.shared_bottleneck
    assert plan.path_names == ["p", "q"] and plan.bottleneck_links == ["a2", "b"]
    p, q = plan.paths
    assert p.rate_mbps == 8.0 and q.rate_mbps == 10.0
    assert p.delay_ms == pytest.approx(7.0) and p.rev_delay_ms == pytest.approx(3.0)   # ack_delay
    assert q.delay_ms == pytest.approx(10.0) and q.rev_delay_ms == pytest.approx(7.0)  # ack_links
    assert p.loss == pytest.approx(1 - 0.99 * 0.98) and q.loss == 0.0
    assert p.queue_pkts == 20 and q.queue_pkts == 40      # 30 KB / 1500 B; 40 packets
    # count = 2 expands like the simulator; the TCP flows ride path q = test-bed path 1.
    assert [(f.name, f.cc, f.path) for f in plan.flows] == [
        ("m", "pp_rsfdb", 0), ("t-0", "cubic", 1), ("t-1", "cubic", 1)]
    assert plan.tunables == {"d_ms": pytest.approx(50.0), "counting": "bytes"}
    assert plan.duration_s == 4.0 and any("capped" in n for n in plan.notes)


def _err(sc: dict) -> UnsupportedScenario:
    with pytest.raises(UnsupportedScenario) as ei:
        map_scenario(sc)
    return ei.value


def test_unsupported_gilbert_loss_names_the_link_field():
    sc = _scenario()
    sc["links"][2]["gilbert"] = {"p": 0.01, "r": 0.3}
    e = _err(sc)
    assert e.field == "links[2].gilbert" and "Bernoulli" in e.allowed and "<dict>" in str(e)


def test_unsupported_parking_lot():
    sc = _scenario(paths=[{"name": "p", "links": ["a1", "b"]}, {"name": "q", "links": ["b", "back"]},
                          {"name": "r", "links": ["a2"]}],
                   flows=[{"name": "m", "kind": "mptcp", "paths": ["p", "q", "r"]}])
    e = _err(sc)
    # b is q's first hop and p's last link: a queue in the middle of one route and at the end of
    # another, which the bed (shared first hops, then each path's router link) cannot build.
    assert e.field == "links[2]" and "first hop" in e.allowed
    # A path of three links sharing some of them is refused on the path.
    sc = _scenario(paths=[{"name": "p", "links": ["a1", "a2", "b"]}, {"name": "q", "links": ["b"]},
                          {"name": "r", "links": ["back"]}],
                   flows=[{"name": "m", "kind": "mptcp", "paths": ["p", "q", "r"]}])
    e = _err(sc)
    assert e.field == "paths[0].links" and "one link that every path crosses" in e.allowed


def test_khalili_shared_access_then_split_by_hand():
    from pathpool.kernel.testbed import AccessLink

    sc = pathpool.load_scenario(REPO / "scenarios" / "khalili" / "n1_5.toml")
    plan = map_scenario(sc)
    # Type-1 MPTCP users: p1 = access + link1, p2 = access + link2; type-2 TCP users: link2 only.
    assert plan.path_names == ["p1", "p2", "p2_type2"] and plan.mptcp_paths == 2
    assert not plan.shared_bottleneck and plan.egress == [0, 1, 1]
    assert plan.bottleneck_links == ["link1", "link2"]
    assert plan.access == [("access", AccessLink(rate_mbps=10.0, queue_pkts=100, paths=(0, 1)))]
    for p in plan.paths:
        assert (p.rate_mbps, p.delay_ms, p.rev_delay_ms, p.loss, p.queue_pkts) == (10.0, 50.0, 50.0, 0.0, 100)
    assert [(f.kind, f.path) for f in plan.flows] == [("mptcp", 0)] * 5 + [("tcp", 2)] * 5
    assert plan.link_path(0) == 0 and plan.link_path(1) == 1
    desc = plan.describe()
    assert desc["egress"] == [0, 1, 1] and desc["access"][0]["link"] == "access"
    # Uncapped: the access removed, link2 still shared by p2 and p2_type2, no first hop.
    unc = map_scenario(pathpool.load_scenario(sc, ["~links.access", 'paths.0.links=["link1"]',
                                                   'paths.1.links=["link2"]']))
    assert unc.egress == [0, 1, 1] and unc.access == [] and "access" not in unc.describe()
    # A plan without partial sharing describes itself as before (kernel cache keys unchanged).
    assert "egress" not in map_scenario(SHARED).describe()


@pytest.mark.parametrize("flow, field, allowed", [
    ({"name": "f", "kind": "tcp", "path": "q", "algorithm": "generalized"}, "flows[0].algorithm", "ewtcp"),
    ({"name": "f", "kind": "tcp", "path": "q", "algorithm": "ewtcp", "params": {"a": 3.0}},
     "flows[0].params.a", "0.0001 <= a <= 2"),
    ({"name": "f", "kind": "mptcp", "paths": ["p", "q"], "algorithm": "semicoupled",
      "params": {"a": 5e-5}}, "flows[0].params.a", "0.0001 <= a <= 2"),
    ({"name": "f", "kind": "tcp", "path": "q", "start": "12s"}, "flows[0].start", "start < 10 s"),
    ({"name": "f", "kind": "mptcp", "paths": ["p", "q"], "scheduler": "roundrobin"}, "flows[0].scheduler", "minrtt"),
    ({"name": "f", "kind": "tcp", "path": "q", "mss": 1000}, "flows[0].mss", "1448"),
    ({"name": "f", "kind": "tcp", "path": "q", "option_bytes": 24}, "flows[0].option_bytes", "0"),
    ({"name": "f", "kind": "mptcp", "paths": ["p", "q"], "option_bytes": 20}, "flows[0].option_bytes", "0 or 28"),
    ({"name": "f", "kind": "tcp", "path": "q", "count": 25}, "flows", "at most 24"),
    ({"name": "f", "kind": "mptcp", "paths": ["p", "q"], "algorithm": "lia",
      "params": {"alpha_every_ack": True}}, "flows[0].params.alpha_every_ack", "false"),
])
def test_unsupported_flow_fields(flow, field, allowed):
    e = _err(_scenario(flows=[flow]))
    assert e.field == field and allowed in e.allowed, str(e)


@pytest.mark.parametrize("algo, params, cc, tunables", [
    ("ewtcp", {}, "pp_ewtcp", {"ewtcp_a": 0.25}),            # pathpool-cc's 1/n^2, n = 2 subflows
    ("ewtcp", {"a": 1.0}, "pp_ewtcp", {"ewtcp_a": 1.0}),
    ("semicoupled", {}, "pp_semicoupled", {"semicoupled_a": 1.0}),
    ("semicoupled", {"a": 0.5}, "pp_semicoupled", {"semicoupled_a": 0.5}),
    ("coupled", {}, "pp_coupled", {}),
    ("max", {}, "pp_max", {}),
])
def test_the_four_earlier_designs_map_to_their_bpf_controls(algo, params, cc, tunables):
    plan = map_scenario(_scenario(flows=[{"name": "m", "kind": "mptcp", "paths": ["p", "q"],
                                          "algorithm": algo, "params": params}]))
    assert [f.cc for f in plan.flows] == [cc] and plan.kernel_algorithms() == [cc]
    assert {k: v for k, v in plan.tunables.items() if k.endswith("_a")} == tunables


def test_option_bytes_the_kernel_carries_itself_map():
    # The default 0, or what the kernel puts in each data segment (MPTCP's DSS, 28 bytes).
    for kind, extra, o in [("mptcp", {"paths": ["p", "q"]}, 28), ("mptcp", {"paths": ["p", "q"]}, 0),
                           ("tcp", {"path": "q"}, 0)]:
        plan = map_scenario(_scenario(flows=[{"name": "f", "kind": kind, "option_bytes": o, **extra}]))
        assert [f.kind for f in plan.flows] == [kind]


def test_file_downloads_and_kernel_reno():
    flows = [{"name": "f", "kind": "tcp", "path": "q", "app": "file", "size": "1MB", "counting": "acks"},
             {"name": "m", "kind": "mptcp", "paths": ["p", "q"], "algorithm": "lia", "counting": "acks"}]
    plan = map_scenario(_scenario(flows=flows))
    assert [(f.name, f.cc, f.size_bytes) for f in plan.flows] == [("f", "pp_reno", 1_000_000), ("m", "pp_lia", 0)]
    # Reno counting acks and LIA counting acks agree on the global tunable.
    assert plan.tunables == {"counting": "acks"}
    # kernel_tcp: single-path Reno counting segments becomes the kernel's reno, leaving the
    # tunable to the pp_* flows (which may count ACKs, as the papers' kernels did).
    flows[0]["counting"] = "bytes"
    with pytest.raises(UnsupportedScenario, match="tunables are global"):
        map_scenario(_scenario(flows=flows))
    plan = map_scenario(_scenario(flows=flows), kernel_tcp=True)
    assert [f.cc for f in plan.flows] == ["reno", "pp_lia"] and plan.tunables == {"counting": "acks"}
    assert plan.kernel_algorithms() == ["pp_lia"]


def test_more_than_eight_subflows_is_refused():
    links = [{"name": f"l{k}", "rate": "10Mbps"} for k in range(9)]
    paths = [{"name": f"p{k}", "links": [f"l{k}"]} for k in range(9)]
    e = _err(_scenario(links=links, paths=paths,
                       flows=[{"name": "m", "kind": "mptcp", "paths": [f"p{k}" for k in range(9)]}]))
    assert e.field == "flows[0].paths" and "at most 8" in e.allowed


def test_global_tunables_must_agree_and_slow_access_link_is_refused():
    sc = _scenario(flows=[
        {"name": "a", "kind": "tcp", "path": "q", "algorithm": "rsf-db", "params": {"d": 0.05}},
        {"name": "b", "kind": "tcp", "path": "q", "algorithm": "rsf-db", "params": {"d": 0.2}}])
    assert _err(sc).field == "flows[1].params.d"
    shared = _scenario(paths=[{"name": "p", "links": ["a2", "b"]}, {"name": "q", "links": ["a1", "b"]}],
                       flows=[{"name": "m", "kind": "mptcp", "paths": ["p", "q"]}])
    e = _err(shared)
    assert e.field == "links[1].rate" and "shared" in e.allowed


def test_linux_backend_without_root_says_so(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(loader.KernelError, match="needs root"):
        run_linux(SHARED)


# -- test-bed output -> simulator schema, and compare (no root) -----------------------------------

def _fake_run(seed: int, scale: float) -> dict:
    """What Testbed.run_flows returns for the shipped scenario, with made-up counters."""
    def info(local, acked, sent, retr, rtt_us, cwnd):
        return {"local": local, "bytes_acked": acked, "bytes_sent": acked + retr * 1448,
                "data_segs_out": sent, "total_retrans": retr, "min_rtt_us": 40000, "rtt_us": rtt_us,
                "snd_cwnd": cwnd, "total_rto": 0, "unacked": cwnd - 2, "snd_mss": 1436,
                "notsent_bytes": 5000}
    m = [info("10.77.0.1", int(3e6 * scale), 2100, 21, 80000, 30),
         info("10.77.1.1", int(2e6 * scale), 1400, 7, 84000, 20)]
    t = [info("10.77.2.1", int(5e6 * scale), 3500, 35, 82000, 50)]
    samples = lambda fin: [{"t": 1.0, "subflows": [dict(x, bytes_acked=0) for x in fin]},
                           {"t": 2.0, "subflows": fin}]
    return {"seed": seed, "wall_s": 2.0, "links_before": {0: {"packets": 0, "bytes": 0, "drops": 0}},
            "links_after": {0: {"packets": 7000, "bytes": 9_000_000, "drops": 70}},
            "raw": {"duration_s": 4.0,
                    "senders": {"mptcp": {"cc": "pp_lia", "local_port": 1000, "final": m, "samples": samples(m)},
                                "tcp": {"cc": "pp_reno", "local_port": 2000, "final": t, "samples": samples(t)}},
                    "receiver": {"connections": [
                        {"peer": "10.77.0.1", "port": 1000, "bytes": 1, "bytes_in_window": int(5e6 * scale),
                         "duration_s": 4.0},
                        {"peer": "10.77.2.1", "port": 2000, "bytes": 1, "bytes_in_window": int(5e6 * scale),
                         "duration_s": 4.0}]}}}


@pytest.fixture(scope="module")
def result_dirs(tmp_path_factory):
    d = tmp_path_factory.mktemp("cmp")
    sc = pathpool.load_scenario(SHARED)
    plan = map_scenario(sc, max_duration_s=4.0)
    lin = results_from_raw(plan, [_fake_run(1, 1.0), _fake_run(2, 1.2)], sc)
    lin.write(d / "linux")
    import tomllib

    doc = tomllib.loads(sc.text)
    doc["duration"] = 1.0
    sim = pathpool.run(doc, seeds=[1, 2, 3])
    sim.write(d / "sim")
    return d, sim, lin


def test_linux_results_have_the_simulator_schema(result_dirs):
    d, sim, lin = result_dirs
    for t in ("flows", "subflows", "links", "series", "stats"):
        assert list(getattr(lin, t).columns) == column_names(t) == list(getattr(sim, t).columns)
    for name in ("flows", "subflows", "links", "series"):
        assert (d / "linux" / f"{name}.csv").read_text().splitlines()[0] == \
            (d / "sim" / f"{name}.csv").read_text().splitlines()[0]
    summary = json.loads((d / "linux" / "summary.json").read_text())
    assert summary["backend"] == "linux" and summary["testbed"]["shared_bottleneck"] is True
    assert "backend" not in json.loads((d / "sim" / "summary.json").read_text())
    f = lin.flows[lin.flows["seed"] == 1].set_index("flow")
    assert f.loc["mptcp", "goodput_bps"] == pytest.approx(5e6 * 8 / 4.0)   # receiver bytes / duration
    assert f.loc["mptcp", "algorithm"] == "lia" and f.loc["mptcp", "n_subflows"] == 2
    assert math.isnan(f.loc["mptcp", "lost_packets"])                     # unknown, not invented
    s = lin.subflows[lin.subflows["seed"] == 1]
    assert list(zip(s["flow"], s["subflow"], s["path"])) == [("mptcp", 0, "mp1"), ("mptcp", 1, "mp2"), ("tcp", 0, "sp")]
    q = lin.series[(lin.series["seed"] == 1) & (lin.series["metric"] == "send_queue_bytes")]
    # tcp_info: unacked x (snd_mss less the DSS's 28 bytes on MPTCP subflows) + notsent_bytes,
    # per subflow and sample
    want = [(c - 2) * (1436 - 28) + 5000.0 for c in (30, 20)] + [(50 - 2) * 1436 + 5000.0]
    assert sorted(q["value"]) == sorted(want * 2)
    links = lin.links[lin.links["seed"] == 1].iloc[0]
    assert links["link"] == "bottleneck" and links["queue_drops"] == 70
    assert links["utilisation"] == pytest.approx(9e6 * 8 / (20e6 * 4.0))


def test_compare_two_dirs_by_hand(result_dirs):
    d, sim, lin = result_dirs
    table = compare_dirs(d / "sim", d / "linux")
    assert list(table.columns) == COLUMNS
    keys = list(dict.fromkeys(zip(table["level"], table["flow"], table["subflow"], table["path"])))
    assert keys == [("flow", "mptcp", "", ""), ("subflow", "mptcp", "0", "mp1"), ("subflow", "mptcp", "1", "mp2"),
                    ("flow", "tcp", "", ""), ("subflow", "tcp", "0", "sp")]
    row = lambda lvl, f, m: table[(table["level"] == lvl) & (table["flow"] == f) & (table["metric"] == m)].iloc[0]
    g = row("flow", "mptcp", "goodput_mbps")
    assert g["linux_mean"] == pytest.approx((10.0 + 12.0) / 2)         # 5 MB and 6 MB over 4 s
    assert g["linux_n"] == 2 and g["sim_n"] == 3
    from scipy import stats

    x = sim.flows[sim.flows["flow"] == "mptcp"]["goodput_bps"].to_numpy() / 1e6
    assert g["sim_mean"] == pytest.approx(x.mean())
    assert g["sim_ci95"] == pytest.approx(stats.t.ppf(0.975, 2) * x.std(ddof=1) / np.sqrt(3))
    assert g["diff_pct"] == pytest.approx(100 * (11.0 - x.mean()) / x.mean())
    r = row("flow", "mptcp", "retrans_pct")
    assert r["linux_mean"] == pytest.approx(100 * 28 / 3500)
    rtt = row("flow", "mptcp", "rtt_ms")
    assert rtt["linux_mean"] == pytest.approx((80 * 2100 + 84 * 1400) / 3500)
    # The same table from the Results objects.
    assert compare_results(sim, lin).equals(table)
    # Directories the wrong way round are refused.
    with pytest.raises(ValueError, match="expected 'sim'"):
        compare_dirs(d / "linux", d / "sim")


def test_compare_cli_writes_table_and_plot(result_dirs, tmp_path):
    d, _, _ = result_dirs
    proc = subprocess.run([sys.executable, "-m", "pathpool.cli", "compare", "--sim", str(d / "sim"),
                           "--linux", str(d / "linux"), "-o", str(tmp_path)],
                          capture_output=True, text=True, cwd=REPO, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    for f in ("comparison.csv", "comparison.md", "comparison.png", "comparison.svg"):
        assert (tmp_path / f).stat().st_size > 0
    assert (tmp_path / "comparison.png").read_bytes()[:4] == b"\x89PNG"
    md = (tmp_path / "comparison.md").read_text()
    assert "| mptcp/1 (mp2) | goodput_mbps (Mbit/s) |" in md


def test_compare_warns_once_per_field_the_backends_read_differently(result_dirs, tmp_path):
    """The shipped scenario leaves option_bytes, recovery and receive_window at the simulator's
    defaults, which the kernel does not do: one warning line per field on stderr (the MPTCP
    flow's option_bytes with what to write), the same lines in comparison.md. Per-segment ACKs
    (no delayed_ack written), the links' rates and the send jitter (each path's data held on the
    bed) are the same on both: no line; Linux results made without the bed's jitter get one."""
    d, _, _ = result_dirs
    proc = subprocess.run([sys.executable, "-m", "pathpool.cli", "compare", "--sim", str(d / "sim"),
                           "--linux", str(d / "linux"), "-o", str(tmp_path)],
                          capture_output=True, text=True, cwd=REPO, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    warnings = [ln for ln in proc.stderr.splitlines() if ln.startswith("warning: the backends differ on ")]
    fields = [ln.removeprefix("warning: the backends differ on ").split(":", 1)[0] for ln in warnings]
    assert len(fields) == len(set(fields))
    assert {"flows[0].option_bytes", "flows[0].recovery", "flows[0].scheduler", "flows[0].receive_window",
            "flows[1].recovery"} <= set(fields)
    # Per-segment ACKs, link rates (IP packets on both) and the send jitter mean the same on both.
    assert not [f for f in fields if "delayed_ack" in f or f.endswith(".rate") or "send_jitter" in f]
    # Results of a bed that held no ACKs (its summary's paths have no jitter_ms): warned.
    from pathpool.compare import differences_of

    summary = json.loads((d / "linux" / "summary.json").read_text())
    assert [p["jitter_ms"] for p in summary["testbed"]["paths"]] == [0.5] * 3
    old = tmp_path / "old"
    shutil.copytree(d / "linux", old)
    for p in summary["testbed"]["paths"]:
        del p["jitter_ms"]
    (old / "summary.json").write_text(json.dumps(summary))
    assert {"flows[0].send_jitter", "flows[1].send_jitter"} <= {x.field for x in differences_of(old)}
    assert not {x.field for x in differences_of(d / "linux")} & {"flows[0].send_jitter", "flows[1].send_jitter"}
    opt = next(ln for ln in warnings if "flows[0].option_bytes" in ln)
    assert opt.endswith("for the same on both: option_bytes = 28")
    md = (tmp_path / "comparison.md").read_text()
    assert "## Where the two backends do not run the same scenario" in md
    assert f"- {opt.removeprefix('warning: the backends differ on ')}" in md.splitlines()


# -- end to end as root ---------------------------------------------------------------------------

@pytest.fixture
def root_env(kernel_unclaimed) -> None:
    if not Path("/usr/include/jansson.h").exists():
        pytest.skip("libjansson-dev missing (scripts/install-system-deps.sh installs it as root)")


def test_compare_end_to_end_on_the_shipped_scenario(tmp_path, root_env):
    proc = subprocess.run([sys.executable, "-m", "pathpool.cli", "compare", str(SHARED), "--seeds", "1,2",
                           "--linux-runs", "1", "--max-duration", "4", "-o", str(tmp_path)],
                          capture_output=True, text=True, cwd=REPO, timeout=240, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert loader.registered() == []          # loaded for the run, unloaded after
    lin = pathpool.read_results(tmp_path / "linux")
    sim = pathpool.read_results(tmp_path / "sim")
    for t in ("flows", "subflows", "links", "series"):
        assert list(getattr(lin, t).columns) == list(getattr(sim, t).columns)
    assert json.loads((tmp_path / "linux" / "summary.json").read_text())["backend"] == "linux"
    s = lin.subflows
    assert sorted(zip(s["flow"], s["path"])) == [("mptcp", "mp1"), ("mptcp", "mp2"), ("tcp", "sp")]
    total = lin.flows["goodput_bps"].sum()
    # The 20 Mbit/s bottleneck is used and never exceeded (measured over 10 runs of 4 s: total
    # 18.09-18.83 Mbit/s, smallest subflow mean RTT 70 ms; goodput excludes headers, so at most
    # 20 * 1448/1500 = 19.31). Lower margin 14 Mbit/s.
    print("linux goodput per flow (Mbit/s):", dict(zip(lin.flows["flow"], lin.flows["goodput_bps"] / 1e6)))
    assert 0.7 * 20e6 < total <= 20e6 * 1448 / 1500 * 1.02
    assert (lin.subflows["acked_bytes"] > 0).all()
    assert (lin.subflows["mean_rtt_s"] > 0.040).all()       # 2 x 20 ms propagation at least
    table = (tmp_path / "comparison.csv").read_text().splitlines()
    assert len(table) == 1 + 5 * 3
    # Linux's MPTCP scheduler hands a subflow data beyond its window (bursts of up to 64 KB):
    # the bed's samples show it as on the simulator (send_queue_bytes).
    w = lin.series[lin.series["id"].str.startswith("mptcp/")].pivot_table(
        index=["time_s", "id"], columns="metric", values="value")
    assert (w["send_queue_bytes"] > w["cwnd"] * 1448).any()


def test_delayed_ack_means_the_same_receiver_on_both_engines():
    """No delayed_ack key is the simulator's default, false: an ACK per segment, so the test
    bed's receiver ACKs every segment too (route attribute quickack 1); delayed_ack = true on
    every flow -> the kernel's delayed ACKs; true on some flows and false (written or not) on
    others is refused naming the field (one route attribute serves every flow)."""
    plan = map_scenario(_scenario())
    assert plan.quickack is True and plan.describe()["quickack"] is True
    assert not [d for d in plan.differences if d.field.endswith("delayed_ack")]
    sc = _scenario()
    for fl in sc["flows"]:
        fl["delayed_ack"] = True
    plan = map_scenario(sc)
    assert plan.quickack is False and plan.describe()["quickack"] is False
    # Linux's delayed ACKs are not the simulator's: said per flow entry.
    assert [d.field for d in plan.differences if d.field.endswith("delayed_ack")] == \
        ["flows[0].delayed_ack", "flows[1].delayed_ack"]
    sc["flows"][1]["delayed_ack"] = False
    with pytest.raises(UnsupportedScenario, match=r"flows\[0\]\.delayed_ack.*true or linux on flows \[0\], false"):
        map_scenario(sc)
    del sc["flows"][1]["delayed_ack"]          # not written: false, as the simulator reads it
    with pytest.raises(UnsupportedScenario, match="delayed_ack"):
        map_scenario(sc)
    sc = _scenario()
    sc["flows"][0]["delayed_ack"] = False
    assert map_scenario(sc).quickack is True


def test_counting_becomes_the_loaders_tunable_and_must_agree():
    """counting (default bytes) is the pp_* objects' global load-time tunable."""
    plan = map_scenario(_scenario())
    assert plan.tunables.get("counting") == "bytes"
    sc = _scenario()
    for fl in sc["flows"]:
        fl["counting"] = "acks"
    assert map_scenario(sc).tunables["counting"] == "acks"
    sc["flows"][1]["algorithm"] = "reno"   # cubic is the kernel's own: no tunable
    sc["flows"][1]["counting"] = "bytes"
    with pytest.raises(UnsupportedScenario, match="counting"):
        map_scenario(sc)


def test_acked_rate_skips_the_warm_up_and_sums_subflows():
    from pathpool.kernel.testbed import acked_rate_bps

    def smp(t, a, b=None):
        sfs = [{"local": "10.77.0.1", "bytes_acked": a}]
        if b is not None:
            sfs.append({"local": "10.77.1.1", "bytes_acked": b})
        return {"t": t, "subflows": sfs}

    # The second subflow appears after the first sample in the window: it counts from zero.
    raw = {"senders": {"m": {"samples": [smp(0.0, 0), smp(1.0, 10_000), smp(2.0, 20_000),
                                         smp(3.0, 30_000, 5_000), smp(4.0, 45_000, 15_000)]}}}
    assert acked_rate_bps(raw, "m", 1.0) == pytest.approx((35_000 + 15_000) * 8 / 3.0)
    assert acked_rate_bps(raw, "m", 1.0, 2.0) == pytest.approx(10_000 * 8 / 1.0)
    with pytest.raises(ValueError, match="fewer than two samples"):
        acked_rate_bps(raw, "m", 3.5)


def test_khalili_twenty_flows_behind_a_shared_access_on_the_bed(root_env):
    """Khalili N1 = 15 (20 flows: 15 MPTCP users behind the shared 10 Mbit/s access, 5 TCP users
    on link 2 only), 5 s: every flow and every subflow carries data, the access caps what the
    type-1 users get together, and it sees every type-1 segment and no type-2 one."""
    sc = pathpool.load_scenario(REPO / "scenarios" / "khalili" / "n1_15.toml")
    res = run_linux(sc, max_duration_s=5.0, prefix="ppk-")
    assert loader.registered() == []
    f = res.flows.set_index("flow")
    type1 = f[f.index.str.startswith("type1-")]
    type2 = f[f.index.str.startswith("type2-")]
    assert len(type1) == 15 and len(type2) == 5
    assert (f["goodput_bps"] > 0).all(), f["goodput_bps"].to_dict()
    s = res.subflows
    for name in type1.index:
        mine = s[s["flow"] == name]
        assert sorted(mine["path"]) == ["p1", "p2"] and (mine["acked_bytes"] > 0).all(), mine
    assert (s[s["flow"].str.startswith("type2-")]["path"] == "p2_type2").all()
    # The access (10 Mbit/s; goodput leaves out 52 header bytes of 1500) caps the type-1 users
    # together; 5% for tbf's burst and the receiver's window edges.
    assert type1["goodput_bps"].sum() <= 10e6 * 1448 / 1500 * 1.05, type1["goodput_bps"].sum()
    links = res.links.set_index("link")
    acc = links.loc["access"]
    # Every type-1 segment crosses the access unless it drops there (the senders' final counters
    # are read before their send buffers drain, so the queues count more); the type-2 segments do
    # not cross it: what reaches links 1 and 2 (sent + dropped) is the access's output plus at
    # least every type-2 segment.
    sent1, sent2 = type1["sent_packets"].sum(), type2["sent_packets"].sum()
    assert acc["forwarded_packets"] >= sent1 - acc["queue_drops"]
    arrived = sum(links.loc[ln, "forwarded_packets"] + links.loc[ln, "queue_drops"] for ln in ("link1", "link2"))
    assert arrived - acc["forwarded_packets"] >= sent2


def test_testbed_refuses_inconsistent_sharing():
    from pathpool.kernel.testbed import AccessLink, PathSpec, Testbed

    ps = [PathSpec(10, 50), PathSpec(10, 50), PathSpec(10, 50)]
    Testbed(ps, egress=[0, 1, 1], access=[AccessLink(10, 100, (0, 1))])   # Khalili's: fine (not up)
    with pytest.raises(ValueError, match="one router link"):
        Testbed(ps, egress=[0, 3, 1])
    with pytest.raises(ValueError, match="rate and queue"):
        Testbed([PathSpec(10, 50), PathSpec(20, 50)], egress=[0, 0])
    with pytest.raises(ValueError, match="not both"):
        Testbed(ps, shared_bottleneck=True, egress=[0, 0, 0])
    with pytest.raises(ValueError, match="each in one access link"):
        Testbed(ps, access=[AccessLink(10, 100, (0, 1)), AccessLink(10, 100, (1, 2))])


def test_a_shared_access_is_a_queue_the_sender_cannot_see(root_env):
    """A single Reno TCP through an access link (5 Mbit/s, 20-packet drop-tail queue, then a
    20 Mbit/s path of 10 ms each way) fills its queue and overflows it, as it would any
    bottleneck on another host: the path's BDP plus the queue is 28 packets, and slow start
    overshoots that within a second. The access's tbf must queue packets the client's socket
    no longer owns: Linux orphans a packet in ``ip_rcv_core`` (net/ipv4/ip_input.c, 6.18), and
    a queue before that (the router's ingress) leaves each packet charged to the sender, whose
    TCP small queues (``tcp_small_queue_check``, net/ipv4/tcp_output.c) then keep about two
    packets of each socket in it: no drop ever, and a type-1 subflow of Khalili's scenario with
    cwnd 84 and 17 packets in flight."""
    from pathpool.kernel.testbed import AccessLink, FlowSpec, PathSpec, Testbed

    with Testbed([PathSpec(20.0, 10.0, queue_pkts=100)], access=[AccessLink(5.0, 20, (0,))],
                 prefix="ppa-") as tb:
        tb.run_flows([FlowSpec("t", "tcp", "reno", 0)], duration_s=4.0)
        acc = tb.access_stats()[0]
    # 4 s at 5 Mbit/s is about 1,650 full packets.
    assert acc["packets"] > 1200, acc
    assert acc["drops"] > 0, acc


def test_the_bed_keeps_asking_for_mptcp_after_syn_timeouts(root_env):
    """Linux 6.12+ drops MP_CAPABLE from a connection's SYN after
    net.mptcp.syn_retrans_before_tcp_fallback (default 2) timeouts, and the connection is plain
    TCP: in Khalili's N1 = 15 on the bed, where the access queue overflows as a queue should, a
    type-1 sender's SYNs can meet it twice (the fallback seen there was the MP_CAPABLE segments'
    loss, the next test). The bed's client namespace sets the most retransmissions the setting
    takes."""
    from pathpool.kernel.testbed import SYN_RETRANS_BEFORE_FALLBACK, PathSpec, Testbed

    if not Path("/proc/sys/net/mptcp/syn_retrans_before_tcp_fallback").exists():
        pytest.skip("this kernel has no net.mptcp.syn_retrans_before_tcp_fallback (and no such fallback)")
    with Testbed([PathSpec(10.0, 5.0)], prefix="ppy-") as tb:
        got = tb.ns(tb.ns_c, "sysctl", "-n", "net.mptcp.syn_retrans_before_tcp_fallback").stdout
    assert int(got) == SYN_RETRANS_BEFORE_FALLBACK == 255


def test_a_connection_whose_mp_capable_segments_are_lost_stays_mptcp(root_env):
    """Linux 6.18 makes a connection plain TCP when the server gets a data segment without
    MP_CAPABLE before any segment with it (subflow_syn_recv_sock(), net/mptcp/subflow.c): only
    the third ACK and the first data segment carry MP_CAPABLE. In Khalili's N1 = 15 on the bed,
    with 15 connections starting together behind one access queue, 1 run in 4 lost both for one
    connection (MPCapableFallbackACK on the server, MPCapableDataFallback on the client). Here
    the router drops the third ACK and every data segment with MP_CAPABLE: a sender that writes
    at once loses its first two segments (both carry it) and falls back when the third
    arrives; the bed's sender writes only after the receiver's byte, so every segment before it
    is the third ACK again, and the connection is MPTCP on both paths."""
    from pathpool.kernel.testbed import SERVER_ADDR, FlowSpec, PathSpec, Testbed

    with Testbed([PathSpec(20.0, 5.0), PathSpec(20.0, 5.0)], prefix="ppf-") as tb:
        script = ("table inet pptest {\n  chain f {\n    type filter hook forward priority -10;\n"
                  f"    ip daddr {SERVER_ADDR} tcp dport 5201 ct original packets 2 tcp option mptcp subtype 0 counter drop\n"
                  f"    ip daddr {SERVER_ADDR} tcp dport 5201 ip length > 200 tcp option mptcp subtype 0 counter drop\n"
                  "  }\n}\n")
        subprocess.run(["ip", "netns", "exec", tb.ns_r, "nft", "-f", "-"], input=script.encode(), check=True)
        # ct packets counts with conntrack accounting (nf_conntrack is loaded by the rule now).
        tb.ns(tb.ns_r, "sysctl", "-qw", "net.netfilter.nf_conntrack_acct=1")
        raw = tb.run_flows([FlowSpec("m", "mptcp", "reno", 0)], duration_s=2.0)
        rules = tb.ns(tb.ns_r, "nft", "list", "table", "inet", "pptest").stdout
    # The third ACK was lost; the server's SYN/ACK retransmission (1 s) drew it again, and no
    # data segment carried MP_CAPABLE (the client writes once fully established).
    assert [int(n) for n in re.findall(r"counter packets (\d+)", rules)] == [1, 0], rules
    snd = raw["senders"]["m"]
    # Both subflows carried data: the connection is MPTCP (a fallen-back one has one subflow).
    acked = [x.get("bytes_acked", x.get("delivered", 0)) for x in snd["final"]]
    assert len(snd["final"]) == 2 and all(v > 0 for v in acked), snd["final"]
    assert snd["ready_wait_s"] > 0.9, snd["ready_wait_s"]
