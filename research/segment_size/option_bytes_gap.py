#!/usr/bin/env python3
"""RSF Table 2's two-subflow scenarios with the kernel's MPTCP option bytes in the simulator.

Linux MPTCP carries a 24-byte DSS option in every data segment (Linux 6.18
``mptcp_established_options_dss()``, net/mptcp/options.c), so a full-size segment holds 1,424
payload bytes, not 1,448 (reproduce README, "Why a kernel MPTCP packet carries fewer bytes").
This script runs the report's simulator jobs of one RSF experiment (``--only``, default
``table2_s2``; Linux recovery, quickack, as ``pathpool reproduce rsf --only table2_s2``) twice
per seed: as the report does (``option_bytes`` 0) and with ``option_bytes = 24`` on every MPTCP
flow (TCP flows keep 0, as on the kernel), and prints per algorithm the table's number (the
mean over connections of size / download time) under both, their ratio with a 95% percentile
bootstrap interval over seeds, and where the ratio comes from:

    G(24) / G(0) = A x b x r      (exactly: G = A x sum bytes / sum times)

- ``A``: the mean of the connections' goodputs over the pooled goodput (sum of bytes / sum of
  download times), ratio: how unequal the downloads are.
- ``b``: payload bytes per new data packet (delivered bytes / (sent - retransmitted)), ratio;
  about 1,424 / 1,448 = 0.983 (the last segment of each file is short in both).
- ``r``: new data packets per second of download (sum of new packets / sum of download
  times), ratio: 1 if the dynamics did not move, below 1 if carrying a file in more, smaller
  segments cost time beyond the bytes.

G and r get 95% percentile bootstrap intervals over seeds (both settings of a seed resampled
together). A second table gives the ratios behind r: download time, the subflows' mean window
and RTT, loss events per packet; and RTOs per connection.

    python research/segment_size/option_bytes_gap.py --seeds 30 -j 2
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pandas as pd

#: Linux MPTCP's DSS option, padded: 4 (kind, length, subtype, flags) + 14 (64-bit DSN, subflow
#: sequence number, data-level length) + 4 (32-bit data ACK) = 22, ALIGN(22, 4) = 24.
MPTCP_OPTION_BYTES = 24


def jobs(only: str, seeds: list[int], algorithms: list[str] | None):
    """The report's simulator jobs of experiment ``only`` (Linux recovery, quickack)."""
    from pathpool.reproduce.experiments import Options, build_jobs, load_experiments
    from pathpool.reproduce.runner import select

    exps = select(load_experiments(["rsf"]), [only])
    out = build_jobs(exps, seeds, Options(recovery_reading="linux"))
    return [j for j in out if algorithms is None or j.tags["run_algorithm"] in algorithms]


def with_options(job, option_bytes: int):
    """``job`` with ``option_bytes`` on every MPTCP ``[[flows]]`` entry."""
    from pathpool.sim.scenario import load_scenario
    from pathpool.sweep import Job

    entries = sorted({fl["index"] for fl in job.scenario.spec["flows"] if fl["kind"] == "mptcp"})
    sets = [f"flows.{i}.option_bytes={option_bytes}" for i in entries]
    return Job(load_scenario(job.scenario, sets), job.seed, dict(job.tags))


def one(args: tuple) -> pd.DataFrame:
    """Both runs of one job: a row per connection (the file flows) and option setting."""
    from pathpool.sweep import run_job

    job, = args
    rows = []
    for o in (0, MPTCP_OPTION_BYTES):
        t = run_job(with_options(job, o) if o else job)
        f = t["flows"][t["flows"].kind == "mptcp"]
        sub = t["subflows"].groupby("flow").agg(cwnd=("mean_cwnd", "mean"), rtt=("mean_rtt_s", "mean"),
                                                loss_events=("loss_events", "sum")).loc[f.flow]
        if not np.isfinite(f.completion_time_s).all():
            raise SystemExit(f"{job.tags} seed {job.seed} option_bytes {o}: a download did not complete")
        rows.append(pd.DataFrame({
            "algorithm": job.tags["run_algorithm"], "seed": job.seed, "option_bytes": o,
            "goodput_bps": f.goodput_bps.to_numpy(), "time_s": f.completion_time_s.to_numpy(),
            "bytes": f.delivered_bytes.to_numpy(),
            "new_packets": (f.sent_packets - f.retransmitted_packets).to_numpy(),
            "retransmitted": f.retransmitted_packets.to_numpy(), "sent": f.sent_packets.to_numpy(),
            "rto": f.rto_count.to_numpy(), "cwnd": sub.cwnd.to_numpy(), "rtt_s": sub.rtt.to_numpy(),
            "loss_events": sub.loss_events.to_numpy(),
        }))
    return pd.concat(rows, ignore_index=True)


def factors(d: pd.DataFrame) -> dict[str, float]:
    """G (mean over connections of goodput), A, b, packets per second, retransmitted share."""
    pooled = d.bytes.sum() / d.time_s.sum()
    return {"G": d.goodput_bps.mean(), "A": d.goodput_bps.mean() / (8.0 * pooled),
            "b": d.bytes.sum() / d.new_packets.sum(), "pps": d.new_packets.sum() / d.time_s.sum(),
            "retx": d.retransmitted.sum() / d.sent.sum()}


def summary(runs: pd.DataFrame, n_boot: int = 2000, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    out = []
    for alg, d in runs.groupby("algorithm", sort=False):
        a, b = d[d.option_bytes == 0], d[d.option_bytes == MPTCP_OPTION_BYTES]
        fa, fb = factors(a), factors(b)
        seeds = np.array(sorted(d.seed.unique()))
        # Per seed sums, so that a resample of seeds gives each ratio at once.
        per = {k: x.groupby("seed")[["goodput_bps", "new_packets", "time_s"]].sum()
               .join(x.groupby("seed").size().rename("n")) for k, x in (("a", a), ("b", b))}
        boot_g, boot_r = [], []
        for _ in range(n_boot):
            s = rng.choice(seeds, size=len(seeds))
            pa, pb = per["a"].loc[s].sum(), per["b"].loc[s].sum()
            boot_g.append((pb.goodput_bps / pb.n) / (pa.goodput_bps / pa.n))
            boot_r.append((pb.new_packets / pb.time_s) / (pa.new_packets / pa.time_s))
        glo, ghi = np.percentile(boot_g, [2.5, 97.5])
        rlo, rhi = np.percentile(boot_r, [2.5, 97.5])
        out.append({"algorithm": alg, "seeds": len(seeds), "G0_mbps": fa["G"] / 1e6, "G24_mbps": fb["G"] / 1e6,
                    "G_ratio": fb["G"] / fa["G"], "G_lo": glo, "G_hi": ghi, "A": fb["A"] / fa["A"],
                    "b": fb["b"] / fa["b"], "r": fb["pps"] / fa["pps"], "r_lo": rlo, "r_hi": rhi,
                    "retx0": fa["retx"], "retx24": fb["retx"]})
    return pd.DataFrame(out)


def dynamics(runs: pd.DataFrame) -> pd.DataFrame:
    """Ratios 24 / 0 of what sets the packet rate: download time, the subflows' time-averaged
    window and mean RTT (means over subflows), loss events per packet sent; RTOs per connection."""
    out = []
    for alg, d in runs.groupby("algorithm", sort=False):
        a, b = d[d.option_bytes == 0], d[d.option_bytes == MPTCP_OPTION_BYTES]
        out.append({"algorithm": alg, "packets": b.new_packets.sum() / a.new_packets.sum(),
                    "time": b.time_s.sum() / a.time_s.sum(), "cwnd": b.cwnd.mean() / a.cwnd.mean(),
                    "rtt": b.rtt_s.mean() / a.rtt_s.mean(),
                    "loss_events_per_packet": (b.loss_events.sum() / b.sent.sum())
                    / (a.loss_events.sum() / a.sent.sum()),
                    "rto0": a.rto.mean(), "rto24": b.rto.mean()})
    return pd.DataFrame(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default="table2_s2", help="RSF experiment (default table2_s2)")
    p.add_argument("--seeds", type=int, default=30, help="seeds 1..N (default 30)")
    p.add_argument("--algorithms", nargs="*", default=None, help="default: the experiment's")
    p.add_argument("-j", "--jobs", type=int, default=1, help="worker processes (default 1)")
    p.add_argument("--csv", default=None, help="also write the per-connection rows here")
    a = p.parse_args(argv)
    if a.seeds < 1 or a.jobs < 1:
        print("option_bytes_gap.py: --seeds and --jobs must be at least 1", file=sys.stderr)
        return 2
    js = jobs(a.only, list(range(1, a.seeds + 1)), a.algorithms)
    with ProcessPoolExecutor(a.jobs) as ex:
        runs = pd.concat(ex.map(one, [(j,) for j in js]), ignore_index=True)
    if a.csv:
        runs.to_csv(a.csv, index=False)
    with pd.option_context("display.width", 160, "display.float_format", "{:.4f}".format):
        print(summary(runs).to_string(index=False))
        print()
        print(dynamics(runs).to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
