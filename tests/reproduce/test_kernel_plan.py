"""`pathpool reproduce --backend linux|both` without the kernel: which experiments the test bed
can express (and the reasons for the rest), the ACK readings as the kernel runs them, the
kernel columns and the agreement table computed by hand, and the one-line refusals (exit 2)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from pathpool.reproduce import kernel as kb
from pathpool.reproduce.compare import agreement, with_kernel
from pathpool.reproduce.experiments import Options, build_jobs, load_experiments


def _plan(papers, reading="quickack", seeds=(1,)):
    jobs = build_jobs(load_experiments(papers), list(seeds), Options(ack_reading=reading))
    return jobs, *kb.plan_jobs(jobs, reading)


def test_rsf_table2_and_fig2_map_onto_the_test_bed():
    jobs, runnable, skipped = _plan(["rsf"])
    ran = {kj.job.tags["experiment"] for kj in runnable}
    assert {f"rsf/table2_s{i}" for i in range(7)} | {"rsf/fig2"} <= ran
    # Every job is either run or listed: nothing is dropped silently.
    listed = {(s.experiment, s.algorithm) for s in skipped}
    for j in jobs:
        key = (j.tags["experiment"], j.tags["run_algorithm"])
        assert j.tags["experiment"] in ran or key in listed
    s2 = next(kj for kj in runnable if kj.job.tags == {"experiment": "rsf/table2_s2", "run_algorithm": "lia",
                                                         "x": kj.job.tags["x"]})
    p = s2.plan
    assert not p.shared_bottleneck and len(p.paths) == 2
    for path in p.paths:
        assert (path.rate_mbps, path.delay_ms, path.rev_delay_ms, path.loss, path.queue_pkts) == (
            10.0, 150.0, pytest.approx(0.1), pytest.approx(0.02), 1000)
    # Five 4 MB downloads with pp_lia; quickack reading: the receiver ACKs every segment.
    assert [(f.kind, f.cc, f.size_bytes) for f in p.flows] == [("mptcp", "pp_lia", 4_000_000)] * 5
    assert p.quickack and p.tunables == {"counting": "bytes"}
    assert p.duration_s == kb.DEFAULT_MAX_DURATION_S


def test_single_path_tcp_runs_the_kernels_own_reno():
    _, runnable, _ = _plan(["rsf"])
    tcp = [kj for kj in runnable if kj.job.tags["run_algorithm"] == "tcp"]
    assert tcp and all(f.cc == "reno" and f.kind == "tcp" for kj in tcp for f in kj.plan.flows)
    assert all(kj.plan.kernel_algorithms() == [] for kj in tcp)   # nothing to load for them


def test_what_the_test_bed_cannot_run_is_listed_with_the_reason():
    _, runnable, skipped = _plan(["khalili", "balia"])
    why = {(s.experiment, s.algorithm): s.reason for s in skipped}
    # Khalili runs in full: 10 and 20 flows, the shared access before the split.
    ran = {(kj.job.tags["experiment"], kj.job.tags["run_algorithm"]) for kj in runnable}
    for n in ("5", "15"):
        for alg in ("tcp", "lia", "olia", "balia", "rsf-db", "rsf-lb"):
            assert (f"khalili/n1_{n}", alg) in ran and (f"khalili/n1_{n}", alg) not in why
    # Balia's tables run every algorithm on the kernel, the four earlier designs included.
    ran = {(kj.job.tags["experiment"], kj.job.tags["run_algorithm"]) for kj in runnable}
    for t in ("balia/table3", "balia/table4"):
        assert {(t, a) for a in ("lia", "olia", "balia", "ewtcp", "semicoupled", "max",
                                 "coupled")} <= ran
        assert not [a for (e, a) in why if e == t]
    # Table V's SP flow from 40 s to 80 s runs too (flows start and stop on the run's clock).
    assert {("balia/table5", a) for a in ("lia", "olia", "balia", "ewtcp", "coupled")} <= ran
    assert all("cannot run this" in r and not r.startswith("<dict>") for r in why.values())


@pytest.mark.parametrize("reading, quickack, counting", [
    ("quickack", True, "bytes"), ("linux", False, "bytes"), ("papers", False, "acks")])
def test_ack_readings_on_the_kernel(reading, quickack, counting):
    _, runnable, _ = _plan(["rsf"], reading)
    lia = [kj for kj in runnable if kj.job.tags["experiment"] == "rsf/table2_s2"
           and kj.job.tags["run_algorithm"] == "lia"]
    assert lia and lia[0].plan.quickack is quickack and lia[0].plan.tunables["counting"] == counting


def test_papers_reading_rsf_counting():
    for reading, want in (("papers", "acks"), ("papers-rsf-bytes", "bytes")):
        _, runnable, _ = _plan(["rsf"], reading)
        rsf = [kj for kj in runnable if kj.job.tags["run_algorithm"] == "rsf-db"]
        assert rsf and {kj.plan.tunables["counting"] for kj in rsf} == {want}


def test_papers_rsf_bytes_reuses_the_papers_and_linux_kernel_runs():
    """The kernel's papers-rsf-bytes column (report/kernel/ACK_READINGS.md) is composed from the papers
    runs (coupled) and the linux runs (RSF): that holds only while the plans, hence the cache
    keys, are equal; and the papers reading's keys differ from linux's and quickack's."""
    keys = {}
    for reading in ("quickack", "linux", "papers", "papers-rsf-bytes"):
        _, runnable, _ = _plan(["rsf"], reading)
        keys[reading] = {(kj.job.tags["experiment"], kj.job.tags["run_algorithm"]): kj.key() for kj in runnable
                         if kj.job.tags["experiment"] in ("rsf/table2_s2", "rsf/table2_s4")}
    assert len(keys["papers"]) == 8
    for k, v in keys["papers-rsf-bytes"].items():
        assert v == keys["linux" if k[1] == "rsf-db" else "papers"][k]
        assert v != keys["quickack"][k]
    assert all(keys["papers"][k] != keys["linux"][k] for k in keys["papers"])


def _summary(rows):
    return pd.DataFrame(rows, columns=["experiment", "algorithm", "x", "metric", "mean", "lo", "hi", "n"])


def test_agreement_by_hand():
    sim = _summary([("e", "lia", math.nan, "throughput_mbps", 2.0, 1.8, 2.2, 3),
                    ("e", "olia", math.nan, "throughput_mbps", 1.0, 0.95, 1.05, 3),
                    ("e", "lia", math.nan, "incomplete", 0.0, 0.0, 0.0, 3),
                    ("f", "lia", 4.0, "throughput_mbps", 1.0, math.nan, math.nan, 1)])
    lin = _summary([("e", "lia", math.nan, "throughput_mbps", 2.1, 2.0, 2.3, 3),
                    ("e", "olia", math.nan, "throughput_mbps", 1.3, 1.2, 1.4, 3),
                    ("e", "lia", math.nan, "incomplete", 1.0, 1.0, 1.0, 3),
                    ("f", "lia", 4.0, "throughput_mbps", 0.5, math.nan, math.nan, 1)])
    a = agreement(sim, lin).set_index(["experiment", "algorithm"])
    assert len(a) == 3   # "incomplete" is bookkeeping, not compared
    assert a.loc[("e", "lia"), "ratio"] == pytest.approx(1.05)
    assert a.loc[("e", "lia"), "overlap"] is True and not a.loc[("e", "lia"), "disagree"]
    assert a.loc[("e", "olia"), "ratio"] == pytest.approx(1.3)
    assert a.loc[("e", "olia"), "overlap"] is False and a.loc[("e", "olia"), "disagree"]
    # One run per side: no CI, so no overlap verdict; the ratio still counts.
    assert a.loc[("f", "lia"), "overlap"] is None and a.loc[("f", "lia"), "disagree"]


def test_with_kernel_columns():
    cols = ["table", "group", "algorithm", "metric", "paper", "mean", "lo", "hi", "n", "verdict"]
    sim = pd.DataFrame([("t", "g", "lia", "m", 1.0, 1.0, 0.9, 1.1, 3, "reproduced"),
                        ("t", "g", "olia", "m", 2.0, 1.0, 0.9, 1.1, 3, "not reproduced")], columns=cols)
    lin = pd.DataFrame([("t", "g", "lia", "m", 1.0, 0.7, 0.6, 0.8, 2, "not reproduced")], columns=cols)
    c = with_kernel(sim, lin).set_index("algorithm")
    assert c.loc["lia", "linux_mean"] == 0.7 and c.loc["lia", "linux_n"] == 2
    assert c.loc["lia", "linux_verdict"] == "not reproduced" and c.loc["lia", "verdict"] == "reproduced"
    assert math.isnan(c.loc["olia", "linux_mean"]) and c.loc["olia", "linux_verdict"] == "not run on the kernel"


def _cli(args, capsys):
    from pathpool.cli import main

    code = main(args)
    return code, capsys.readouterr()


def test_non_root_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    code, out = _cli(["reproduce", "rsf", "--backend", "linux", "-o", str(tmp_path / "r")], capsys)
    assert code == 2
    lines = [x for x in out.err.splitlines() if x.strip()]
    assert len(lines) == 1 and "needs root" in lines[0] and "--backend sim" in lines[0], out.err
    assert not (tmp_path / "r" / "cache").exists()   # refused before any run


def test_kernel_unavailable_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    from pathpool.kernel import loader

    monkeypatch.setattr("os.geteuid", lambda: 0)
    monkeypatch.setattr(loader, "check_environment", lambda need_toolchain=True: ["no BTF (/sys/kernel/btf/vmlinux)"])
    code, out = _cli(["reproduce", "rsf", "--backend", "both", "-o", str(tmp_path / "r")], capsys)
    assert code == 2
    lines = [x for x in out.err.splitlines() if x.strip()]
    assert len(lines) == 1 and "no BTF" in lines[0], out.err


def test_only_selects_experiments_and_refuses_unknown_patterns(tmp_path, capsys):
    from pathpool.reproduce.runner import select

    exps = load_experiments(["rsf"])
    assert [e.key for e in select(exps, ["table2_s1", "rsf/table2_s2"])] == ["rsf/table2_s1", "rsf/table2_s2"]
    assert {e.key for e in select(exps, ["table2_s*"])} == {f"rsf/table2_s{i}" for i in range(7)}
    assert select(exps, None) == exps
    code, out = _cli(["reproduce", "rsf", "--only", "table9", "-o", str(tmp_path / "r")], capsys)
    lines = [x for x in out.err.splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1 and "--only 'table9' matches no experiment" in lines[0], out.err


def _keys(**opts):
    exps = [e for e in load_experiments(["rsf"]) if e.key == "rsf/table2_s1"]
    o = Options(**opts)
    jobs = build_jobs(exps, [1, 2], o)
    runnable, _ = kb.plan_jobs(jobs, o.ack_reading)
    return [j.key() for j in jobs], [kj.key() for kj in runnable]


def test_kernel_key_ignores_simulator_only_readings():
    sim_a, kern_a = _keys(recovery_reading="rfc6675")
    sim_b, kern_b = _keys(recovery_reading="linux")
    # The simulator runs other scenarios (its cache keys move) but the kernel runs the same ones.
    assert set(sim_a).isdisjoint(sim_b)
    assert kern_a == kern_b and len(set(kern_a)) == len(kern_a)
    # What the kernel does follow moves its key: the ACK reading (receiver policy, counting) ...
    _, kern_c = _keys(recovery_reading="linux", ack_reading="linux")
    assert set(kern_c).isdisjoint(kern_a)
    # ... and the network (one-way delay reading: other reverse delays on the bed).
    _, kern_d = _keys(delay_reading="one-way")
    assert set(kern_d).isdisjoint(kern_a)


def test_kernel_cache_reads_and_refiles_entries_of_the_first_layout(tmp_path):
    from pathpool.sweep import Cache

    exps = [e for e in load_experiments(["rsf"]) if e.key == "rsf/table2_s1"]
    jobs = build_jobs(exps, [1], Options())
    kj = kb.plan_jobs(jobs, "quickack")[0][0]
    cache = Cache(tmp_path, sim_columns=False)
    assert not kb._cached(cache, kj)
    tables = {t: pd.DataFrame({"experiment": ["old"], "v": [1.0]}) for t in kb.TABLES}
    cache.store(kj.job, tables)        # the first layout: keyed by the scenario text
    assert kb._cached(cache, kj) and cache.has(kj)
    got = cache.load(kj)
    assert got["flows"]["v"].tolist() == [1.0]
    assert got["flows"]["experiment"].tolist() == [kj.job.tags["experiment"]]


def test_jobs_with_equal_plans_share_a_kernel_run_under_their_own_tags(tmp_path):
    # Fig. 2 at 4 MB is Table 2 scenario 2 on the test bed: one run serves both, each with its tags.
    o = Options(recovery_reading="linux")
    jobs = build_jobs([e for e in load_experiments(["rsf"]) if e.key in ("rsf/fig2", "rsf/table2_s2")], [1], o)
    runnable, _ = kb.plan_jobs(jobs, o.ack_reading)
    pick = [kj for kj in runnable if kj.job.tags["run_algorithm"] == "lia"
            and (kj.job.tags["experiment"] == "rsf/table2_s2" or kj.job.tags["x"] == 4.0)]
    assert len(pick) == 2 and pick[0].key() == pick[1].key()
    from pathpool.sweep import Cache

    row = {"seed": [1], "flow": ["conn-0"], "v": [2.5]}
    tagged = {t: pd.DataFrame({**{k: [v] for k, v in pick[0].job.tags.items()}, **row}) for t in kb.TABLES}
    Cache(tmp_path, sim_columns=False).store(pick[0], tagged)
    merged = kb.run_kernel_jobs(pick, tmp_path)     # every job cached: nothing runs, nothing loads
    f = merged["flows"]
    assert sorted(f["experiment"]) == ["rsf/fig2", "rsf/table2_s2"] and f["v"].tolist() == [2.5, 2.5]
    assert sorted(f["x"].fillna(-1)) == [-1, 4.0]
