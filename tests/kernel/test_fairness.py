"""Fairness of the pp_* controls against the kernel's own TCP, with unmodified iperf3 (MPTCP
through mptcpize) on the test bed with the kernel's default delayed ACKs and byte counting.

Root, BTF, MPTCP, iperf3 and mptcpize needed (scripts/install-system-deps.sh); skips otherwise.
Every comparison runs its flows at the same time on one test bed, so they see the same queue;
each is repeated RUNS times and the median ratio is checked. Independent test beds run in
parallel (different namespace prefixes and ports) to keep the suite short.

Thresholds come from the measurements in report/FINDINGS.md ("Fairness with unmodified
iperf3"), each several standard deviations of the median away from the measured median. The
RFC 6356 targets are recorded next to them; where the measured median misses one, the findings
say so (a finding, not a tuned number).
"""

from __future__ import annotations

import shutil
import statistics
from concurrent.futures import ThreadPoolExecutor

import pytest
from pathpool.kernel import loader
from pathpool.kernel.testbed import FlowSpec, PathSpec, Testbed, wait_gone
from scipy.stats import mannwhitneyu

pytestmark = pytest.mark.kernel

RUNS = 5
DURATION_S = 15.0
OMIT_S = 3
#: One shared 20 Mbit/s bottleneck, 40 ms base RTT, drop-tail queue of one BDP (66 packets).
SHARED = {"rate_mbps": 20.0, "delay_ms": 20.0, "queue_pkts": 66}
#: Two disjoint 10 Mbit/s paths, 20 ms base RTT, 30-packet queues, a Reno TCP on each.
DISJOINT = {"rate_mbps": 10.0, "delay_ms": 10.0, "queue_pkts": 30}
#: The same with 1% random loss and a queue that never fills (windows stay below the BDP):
#: losses independent per packet, as RFC 6356's analysis assumes.
DISJOINT_RANDOM = {"rate_mbps": 10.0, "delay_ms": 10.0, "queue_pkts": 200, "loss": 0.01}


@pytest.fixture(scope="module")
def loaded_bytes(kernel_unclaimed):
    for tool in ("iperf3", "mptcpize"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} missing (scripts/install-system-deps.sh installs it)")
    loader.load(counting="bytes", rebuild=False)
    yield
    loader.unload()
    assert loader.registered() == []


def _shared_pair(cc: str, k: int, prefix: str, r: int) -> float:
    """MPTCP (2 subflows, `cc`) vs one TCP Reno flow through one bottleneck: MPTCP / TCP."""
    flows = [FlowSpec("mp", "mptcp", cc, 0), FlowSpec("tcp", "tcp", "reno", 0)]
    with Testbed([PathSpec(**SHARED), PathSpec(**SHARED)], shared_bottleneck=True, prefix=prefix,
                 quickack=False) as tb:
        out = tb.run_iperf3(flows, duration_s=DURATION_S, omit_s=OMIT_S, port=5301 + 10 * k)
    assert out["mp"]["cc"] == cc and out["tcp"]["cc"] == "reno", out
    return out["mp"]["bps"] / out["tcp"]["bps"]


def _renos(k: int, prefix: str, r: int) -> float:
    """pp_reno over MPTCP vs kernel reno over MPTCP, both 2 subflows, one bottleneck. The
    client started first alternates from run to run (it gets a head start)."""
    flows = [FlowSpec("pp", "mptcp", "pp_reno", 0), FlowSpec("k", "mptcp", "reno", 0)]
    if r % 2:
        flows.reverse()
    with Testbed([PathSpec(**SHARED), PathSpec(**SHARED)], shared_bottleneck=True, prefix=prefix,
                 quickack=False) as tb:
        out = tb.run_iperf3(flows, duration_s=DURATION_S, omit_s=OMIT_S, port=5301 + 10 * k)
    return out["pp"]["bps"] / out["k"]["bps"]


def _disjoint(k: int, prefix: str, r: int, spec: dict = DISJOINT, cc: str = "pp_lia") -> float:
    """MPTCP (`cc`) over two disjoint paths, a Reno TCP on each: its total / the better TCP."""
    flows = [FlowSpec("mp", "mptcp", cc, 0), FlowSpec("t0", "tcp", "reno", 0),
             FlowSpec("t1", "tcp", "reno", 1)]
    with Testbed([PathSpec(**spec), PathSpec(**spec)], prefix=prefix, quickack=False) as tb:
        out = tb.run_iperf3(flows, duration_s=DURATION_S, omit_s=OMIT_S, port=5301 + 10 * k)
    return out["mp"]["bps"] / max(out["t0"]["bps"], out["t1"]["bps"])


def _medians(jobs: dict[str, callable], runs: int = RUNS) -> dict[str, list[float]]:
    """Runs every job ``runs`` times, the jobs of one round in parallel on their own test beds."""
    got: dict[str, list[float]] = {name: [] for name in jobs}
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        for r in range(runs):
            futs = {name: pool.submit(fn, k, f"ppq{k}-", r)
                    for k, (name, fn) in enumerate(jobs.items())}
            for name, f in futs.items():
                got[name].append(f.result())
    for k in range(len(jobs)):
        assert wait_gone(f"ppq{k}-")
    for name, v in got.items():
        print(f"{name}: ratios {[round(x, 3) for x in v]} median {statistics.median(v):.3f}")
    return got


def test_coupled_controls_against_reno_at_a_shared_bottleneck(loaded_bytes):
    """pp_lia, pp_olia and pp_balia (each an MPTCP connection of 2 subflows) against one Reno
    TCP at a shared bottleneck. RFC 6356 goal 2 (do no harm): about one TCP's share. OLIA and
    BALIA must be no more aggressive than LIA: with both subflows on one path of one RTT and
    equal windows their increase per ACK and decrease per loss are LIA's (1 / (4 w) and w / 2),
    and when the windows differ OLIA's extra term only moves window between the subflows (its
    alphas sum to zero) and BALIA's smaller subflow decreases by more than half
    (min(alpha, 1.5) w / 2), so neither may take
    systematically more than LIA (25 runs of each on this set-up: medians LIA 0.76, OLIA 0.61,
    BALIA 0.60; report/FINDINGS.md)."""
    got = _medians({cc: (lambda k, p, r, cc=cc: _shared_pair(cc, k, p, r))
                    for cc in ("pp_lia", "pp_olia", "pp_balia")})
    med = {cc: statistics.median(v) for cc, v in got.items()}
    # Never more than the upper end of the target (more than one TCP's share is harm).
    for cc, m in med.items():
        assert m <= 1.25, (cc, got[cc])
    # One run's ratio varies from about 0.4 to 1.13 (report/FINDINGS.md), a median of five
    # from 0.45 to 0.95 (sd ~0.18): 0.3 is over 2 sd below their mean, and still far above a
    # starved connection.
    assert med["pp_lia"] >= 0.3, got["pp_lia"]
    # "Systematically more": every run of the control above every run of LIA's (one-sided
    # Mann-Whitney U, p = 1/252 for 5 against 5). A difference of medians wrongly failed here
    # on an unchanged build (BALIA 0.84 against LIA 0.45, runs of both 0.37-0.98).
    for cc in ("pp_olia", "pp_balia"):
        p = mannwhitneyu(got[cc], got["pp_lia"], alternative="greater").pvalue
        assert p > 0.005, (cc, p, got)


def test_pp_reno_matches_kernel_reno_and_lia_against_the_best_tcp(loaded_bytes):
    """pp_reno over MPTCP within 15% of the kernel's reno over MPTCP (the same rule, now that
    both count acknowledged segments). On two disjoint paths LIA's total against the better
    single-path TCP (RFC 6356 goal 1: at least 1): with independent random loss it about holds
    (medians 0.96, 0.89, 0.95); with drop-tail overflow, where a path's TCP and LIA subflow lose in
    the same overflow, LIA's total is about half (medians 0.50, 0.49, 0.48, 0.58; README: a finding,
    not tuned). On these drop-tail paths even uncoupled MPTCP misses 2x: kernel reno over MPTCP
    gets 1.25x the better TCP, because Linux MPTCP's MP_JOIN subflow takes about 2.2x the
    TCP's losses per packet at an overflow (README, "why the MPTCP subflows get less";
    research/kernel_disjoint/kernel_disjoint_probe.py --cwnd). With independent random loss the same
    uncoupled connection gets about 2x (measured 1.88), which this test asserts too: Linux's
    subflows grow as fast as TCP when losses follow packets, as RFC 6356 assumes."""
    got = _medians({"renos": _renos, "disjoint": _disjoint,
                    "disjoint_random": lambda k, p, r: _disjoint(k, p, r, DISJOINT_RANDOM)})
    # One pp_reno/reno run varies from 0.68 to 1.17 (sd ~0.15), so a median of 5 misses the 15%
    # band by chance about one time in seven; 10 more runs on two more beds make the median's sd
    # ~0.05. The band is the target, unchanged.
    more = _medians({"renos_b": _renos, "renos_c": _renos,
                     "reno_random": lambda k, p, r: _disjoint(k, p, r, DISJOINT_RANDOM, "reno")},
                    runs=5)
    got["renos"] += more["renos_b"] + more["renos_c"]
    got["reno_random"] = more["reno_random"]
    med = {name: statistics.median(v) for name, v in got.items()}
    assert abs(med["renos"] - 1.0) <= 0.15, got["renos"]
    # Measured medians 0.962, 0.886, 0.949 (per-run sd ~0.1; RFC 6356 goal 0.9-1): about 4 sd
    # of the median below their mean.
    assert med["disjoint_random"] >= 0.7, got["disjoint_random"]
    assert med["disjoint"] >= 0.3, got["disjoint"]
    # Uncoupled kernel reno over MPTCP with losses independent of the queue: probe 1.70, 1.88,
    # 1.90; this test 1.62-2.08, median 1.87 (per-run sd ~0.2, the median's ~0.1, so 1.5 is
    # about 3.5 sd below; RFC 6356's "two uncoupled subflows take two shares": 2; the
    # simulator 2.01). On drop-tail paths it is 1.25 (README), so this is what tells the
    # joined subflow's drop-tail losses apart from a growth defect.
    assert med["reno_random"] >= 1.5, got["reno_random"]
