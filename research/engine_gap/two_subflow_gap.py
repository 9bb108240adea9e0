#!/usr/bin/env python3
"""RSF Table 2's two-subflow gap, decomposed with one definition for both engines.

In RSF Table 2's two-subflow scenarios the kernel's downloads are slower than the simulator's
for every algorithm, uncoupled RSF-DB too. This script splits the kernel/simulator ratio of the
table's number (mean over connections of size / download time) into factors that multiply to it
exactly, computed from the same quantities of both engines:

    G = A x (W / S) x u x k x b

- ``W``: time-averaged summed window (packets): the mean over the 100 ms samples inside each
  connection's download (first byte to completion) of the sum of its subflows' cwnd (a subflow
  not yet up counts 0), pooled over connections weighted by download time.
- ``S``: effective smoothed RTT (s), defined by W / S = the time average of sum_i cwnd_i /
  srtt_i (the packet rate the windows allow).
- ``u``: window use = data packets actually sent (retransmissions included) / the packets the
  windows allowed over the same time. Below 1 when a subflow sends less than its window per
  RTT (no ACK clock: stalls, RTO waits; recovery; no data assigned). This is the residual of
  the textbook identity G ~= W x bytes per packet / S.
- ``k``: 1 - retransmitted / sent packets.
- ``b``: payload bytes per new data packet = delivered bytes / (sent - retransmitted).
- ``A``: mean of the connections' goodputs over the pooled goodput (sum of bytes / sum of
  download times): how unequal the five downloads are.

The factors are computed from sums over all connections of all runs of one engine and
algorithm, so ratio(G) = product of the factor ratios with no residual; the 95% intervals of
the ratios are percentile bootstraps over runs (each engine resampled on its own).

Beside the identity, per connection-second, with one definition for both engines: window
reductions (a 100 ms cwnd sample below 0.7 x the peak since the last one, the reduction
detector of ``kernel_idle_restart_probe.py``), RTOs (each engine's own counter), stalls (runs of
samples in which the connection got no new byte for at least one RTO, taken as srtt + 200 ms,
Linux's ``tcp_rto_min``; from the flow's goodput series, which for kernel runs made before
28 Nov 2026 counts bytes acknowledged on any subflow and so misses a connection stalled
behind one subflow), the slow-start exit (each subflow's peak cwnd before its first
reduction, and when), and the summed window in three phases of the download.

The simulator's runs are re-run in memory with ``metrics.interval = 100ms`` (s2's file has no
series; a run takes well under a second, and sampling does not change the run: checked, the
flows' goodputs are compared with the report's job). The kernel's runs are read from the shared
kernel cache (``--kernel-cache``, the report's plans and keys: ``pathpool reproduce rsf --only
table2_s2 --recovery-reading linux``, quickack reading).

    python research/engine_gap/two_subflow_gap.py table --only table2_s2 --kernel-seeds 10 --sim-seeds 30
    python research/engine_gap/two_subflow_gap.py table --only table2_s5 --sim-reading linux ...
    flock /run/pathpool-kernel.lock python research/engine_gap/two_subflow_gap.py run --only table2_s2 \\
        --seeds 7 8 9 10      # the report's plans into the shared cache, raw tcp_info kept

``run`` runs exactly the jobs ``pathpool reproduce rsf --only table2_s2 --backend linux
--recovery-reading linux`` would (same plans, hence the same cache keys, into the same cache),
and also keeps each run's raw per-tick ``tcp_info`` (``busy_time_us``, ``rwnd_limited_us``,
``sndbuf_limited_us``, ``ca_state``, ``notsent_bytes``) in ``--raw`` for :func:`limits`.
With ``--into DIR`` the same plans go to DIR's own cache (raw in ``DIR/raw``): new seeds, or a
sender that records more, without touching the report's cache. With ``--sysctl KEY=VALUE`` (repeatable) ``run`` is a counterfactual: the same plans with those
sysctls set in the bed's namespaces, into ``--probe-out/<sysctls>/``, never the report's cache;
``table`` with the same ``--sysctl`` compares those runs with the simulator.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

SAMPLE_S = 0.1
#: Largest believable cwnd sample (packets): far above any RSF path's BDP + 1000-packet queue.
CWND_MAX = 65536.0
#: Linux's minimum RTO (``TCP_RTO_MIN``, 200 ms; ``tcp_set_rto()``: srtt + max(4 rttvar, rto_min)).
RTO_MIN_S = 0.2
FACTORS = ("A", "W", "S", "u", "k", "b")
#: Phases of a download for the window comparison (seconds after its first byte).
PHASES = ((0.0, 5.0), (5.0, 20.0), (20.0, math.inf))


def _probe():
    """``kernel_idle_restart_probe`` (its reduction detector), imported from beside this file."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    return importlib.import_module("kernel_idle_restart_probe")


def reductions(c: np.ndarray) -> list[tuple[int, float, float]]:
    """Window reductions of one cwnd series (``kernel_idle_restart_probe.reductions``)."""
    return _probe().reductions(c)


def download_window(flow: pd.Series) -> tuple[float, float]:
    """(first byte, completion) of one download on the run's clock; a download that did not
    finish counts from its start to the end of the run."""
    ct = flow["completion_time_s"]
    if ct is None or not np.isfinite(ct):
        return float(flow["start_s"]), float(flow["end_s"])
    return float(flow["end_s"]) - float(ct), float(flow["end_s"])


def connection_rows(flows: pd.DataFrame, series: pd.DataFrame, sample_s: float = SAMPLE_S) -> pd.DataFrame:
    """One row per connection of one run: the sums the factors are made of, and diagnostics.

    ``series`` is the run's long-form series (``time_s``, ``entity``, ``id``, ``metric``,
    ``value``); subflow ids are ``FLOW/INDEX``. Only samples with ``t0 < time_s <= t1`` (the
    download) count; each stands for ``sample_s`` seconds.
    """
    rows = []
    sub = series[series.entity == "subflow"]
    fl = series[(series.entity == "flow") & (series.metric == "goodput_bps")]
    for _, f in flows.iterrows():
        t0, t1 = download_window(f)
        name = f["flow"]
        mine = sub[sub.id.str.startswith(name + "/")]
        mine = mine[(mine.time_s > t0) & (mine.time_s <= t1)]
        cw = mine[mine.metric == "cwnd"].pivot_table(index="time_s", columns="id", values="value")
        rt = mine[mine.metric == "srtt_s"].pivot_table(index="time_s", columns="id", values="value")
        times = cw.index
        # A cwnd no path of these scenarios can hold (above CWND_MAX) is a corrupted sample (the
        # kernel's, measured: ssthresh 2,165,326,096 for one recovery): it takes the subflow's
        # previous sample instead of dominating the average, and is counted.
        bad = cw > CWND_MAX
        cw = cw.mask(bad)
        cw = cw.fillna(cw.ffill().where(bad)).fillna(0.0)
        # An srtt not known yet (0 or missing: the simulator before its first sample) takes the
        # subflow's first known one, so its window counts at a plausible rate, not at infinity.
        rt = rt.reindex(index=times, columns=cw.columns).where(lambda x: x > 0).bfill().ffill()
        rate = (cw / rt).fillna(0.0)
        n = len(times)
        T = t1 - t0
        row = {
            "flow": name, "T": T, "D": float(f["delivered_bytes"]),
            "sent": float(f["sent_packets"]), "retx": float(f["retransmitted_packets"]),
            "rto": float(f["rto_count"]) if f["rto_count"] is not None and np.isfinite(f["rto_count"]) else np.nan,
            "G": float(f["goodput_bps"]) / 8.0,
            # Time integrals (sample value x sample period), so runs of any length pool by sum.
            "W_int": float(cw.sum(axis=1).sum()) * sample_s,
            "R_int": float(rate.sum(axis=1).sum()) * sample_s,
            "n_samples": n, "bad_cwnd": int(bad.to_numpy().sum()),
        }
        # Reductions and the slow-start exit, per subflow; after the first reduction, how deep
        # each cut goes, how fast the window grows, and how often it jumps up.
        red, ss_peak, ss_t, depth, rise, rtts, jumps = 0, [], [], [], 0.0, 0.0, 0
        ca_rise, ca_rtts, ca_steps, all_steps = 0.0, 0.0, 0, 0
        for col in cw.columns:
            c = cw[col].to_numpy()
            got = reductions(c) if len(c) else []
            red += len(got)
            if not got:
                continue
            ss_peak.append(got[0][1])
            ss_t.append(float(times[got[0][0]]) - t0)
            depth += [after / peak for _, peak, after in got]
            first = got[0][0]
            g = growth(c[first:], rt[col].to_numpy()[first:], sample_s)
            rise, rtts, jumps = rise + g[0], rtts + g[1], jumps + g[2]
            # Congestion avoidance only: steps from 1 sample before to 3 after a reduction
            # (recovery, about one RTT, and the way a window is reported in it) left out.
            near = frozenset(j - first for r, _, _ in got for j in range(r - 1, r + 3))
            g = growth(c[first:], rt[col].to_numpy()[first:], sample_s, near)
            ca_rise, ca_rtts = ca_rise + g[0], ca_rtts + g[1]
            ca_steps += sum(1 for j in range(len(c) - first - 1) if j not in near)
            all_steps += len(c) - first - 1
        row.update(reductions=red, ss_peak_sum=float(np.sum(ss_peak)) if ss_peak else np.nan,
                   ss_exit_s=float(np.mean(ss_t)) if ss_t else np.nan,
                   depth_sum=float(np.sum(depth)), rise=rise, rise_rtts=rtts, jumps=jumps,
                   ca_rise=ca_rise, ca_rtts=ca_rtts, ca_steps=ca_steps, all_steps=all_steps)
        # Stalls: consecutive samples with no new byte at the connection, at least one RTO long.
        g = fl[(fl.id == name) & (fl.time_s > t0) & (fl.time_s <= t1)].sort_values("time_s")
        rto_s = float(np.nanmean(rt.to_numpy())) + RTO_MIN_S if n else np.nan
        row["stall_s"] = stall_time(g.value.to_numpy(), rto_s, sample_s)
        # Window not full (the simulator's series has in_flight; the kernel's cache does not,
        # its raw tcp_info has unacked: :func:`limits`).
        fl_ = mine[mine.metric == "in_flight"].pivot_table(index="time_s", columns="id", values="value")
        if fl_.empty:
            row["not_full_share"] = np.nan
        else:
            fl_ = fl_.reindex(index=times, columns=cw.columns)
            up = cw > 0
            row["not_full_share"] = float(((fl_ < np.floor(cw)) & up).to_numpy().sum() / up.to_numpy().sum())
        for lo, hi in PHASES:
            sel = (times - t0 > lo) & (times - t0 <= hi)
            row[f"W_{lo:g}_{hi:g}"] = float(cw[sel].sum(axis=1).mean()) if sel.any() else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def growth(cwnd: np.ndarray, srtt: np.ndarray, sample_s: float = SAMPLE_S,
           skip: frozenset[int] = frozenset()) -> tuple[float, float, int]:
    """(packets gained, RTTs elapsed, jumps) over the sample steps in which the window did not
    fall: its additive increase is gained / RTTs. A jump is a step up by at least 3 packets and
    30% of the window in one sample (an undone reduction, or slow start after an RTO), which
    additive increase of a few packets' window cannot do in 100 ms; jumps are left out of the
    gain. Steps in ``skip`` (by index of their first sample) are left out altogether."""
    gained, elapsed, jumps = 0.0, 0.0, 0
    for j in range(len(cwnd) - 1):
        d = cwnd[j + 1] - cwnd[j]
        if d < 0 or j in skip:
            continue
        if d >= max(3.0, 0.3 * cwnd[j]):
            jumps += 1
            continue
        gained += d
        elapsed += sample_s / srtt[j]
    return gained, elapsed, jumps


def stall_time(goodput: np.ndarray, rto_s: float, sample_s: float = SAMPLE_S) -> float:
    """Seconds in runs of zero-goodput samples lasting at least ``rto_s``."""
    total, n = 0.0, 0
    for v in np.r_[goodput, 1.0]:
        if v == 0:
            n += 1
            continue
        total += n * sample_s if n * sample_s >= rto_s else 0.0
        n = 0
    return total


def factors(conns: pd.DataFrame) -> dict[str, float]:
    """The factors of ``G = A x (W / S) x u x k x b`` from pooled connection rows."""
    T, D = conns["T"].sum(), conns["D"].sum()
    sent, retx = conns["sent"].sum(), conns["retx"].sum()
    W = conns["W_int"].sum() / T
    R = conns["R_int"].sum() / T
    G = conns["G"].mean()
    return {"G": G, "A": G / (D / T), "W": W, "S": W / R, "u": (sent / T) / R,
            "k": 1.0 - retx / sent, "b": D / (sent - retx)}


def product(f: dict[str, float]) -> float:
    """A x W / S x u x k x b: equals ``f["G"]`` up to rounding."""
    return f["A"] * f["W"] / f["S"] * f["u"] * f["k"] * f["b"]


def ratios(kernel: pd.DataFrame, sim: pd.DataFrame, n_boot: int = 2000, seed: int = 1,
           stat=None) -> pd.DataFrame:
    """kernel / simulator of G and of each factor (or of every value of ``stat``, a function
    of connection rows returning a dict), with bootstrap 95% intervals over runs.

    ``kernel`` and ``sim`` are connection rows with a ``seed`` column (one run per seed). The
    factor ``S`` enters G inverted; its row is the plain ratio of the srtts.
    """
    factors_ = stat or factors
    fk, fs = factors_(kernel), factors_(sim)
    names = ["G", *FACTORS] if stat is None else list(fk)
    point = {n: fk[n] / fs[n] if fs[n] else np.nan for n in names}
    rng = np.random.default_rng(seed)
    ks, ss = [g for _, g in kernel.groupby("seed")], [g for _, g in sim.groupby("seed")]
    boot = {n: [] for n in names}
    for _ in range(n_boot):
        bk = pd.concat([ks[i] for i in rng.integers(0, len(ks), len(ks))])
        bs = pd.concat([ss[i] for i in rng.integers(0, len(ss), len(ss))])
        a, b = factors_(bk), factors_(bs)
        for n in names:
            boot[n].append(a[n] / b[n] if b[n] else np.nan)
    def pct(v: list[float], q: float) -> float:
        v = np.asarray(v, dtype=float)
        return float(np.percentile(v[np.isfinite(v)], q)) if np.isfinite(v).any() else np.nan

    rows = [{"factor": n, "kernel": fk[n], "sim": fs[n], "ratio": point[n],
             "lo": pct(boot[n], 2.5), "hi": pct(boot[n], 97.5)} for n in names]
    return pd.DataFrame(rows)


def diagnostics(conns: pd.DataFrame) -> dict[str, float]:
    """Per connection-second rates and slow-start figures of pooled connection rows."""
    T = conns["T"].sum()
    out = {"retx_per_s": conns["retx"].sum() / T, "reductions_per_s": conns["reductions"].sum() / T,
           "retx_per_reduction": conns["retx"].sum() / max(conns["reductions"].sum(), 1),
           "rto_per_conn": conns["rto"].mean(), "stall_share": conns["stall_s"].sum() / T,
           "after_over_peak": conns["depth_sum"].sum() / max(conns["reductions"].sum(), 1),
           "growth_per_rtt": conns["rise"].sum() / conns["rise_rtts"].sum(),
           "jumps_per_s": conns["jumps"].sum() / T,
           "ca_growth_per_rtt": conns["ca_rise"].sum() / conns["ca_rtts"].sum(),
           "ca_step_share": conns["ca_steps"].sum() / conns["all_steps"].sum(),
           "reductions_per_pkt": conns["reductions"].sum() / conns["sent"].sum(),
           "not_full_share": conns["not_full_share"].mean(),
           "ss_peak_sum": conns["ss_peak_sum"].mean(), "ss_exit_s": conns["ss_exit_s"].mean(),
           "download_s": conns["T"].mean(), "bad_cwnd_samples": conns["bad_cwnd"].sum()}
    for lo, hi in PHASES:
        c = f"W_{lo:g}_{hi:g}"
        out[c] = conns[c].mean()
    return out


def aimd_window(p: float, increase: float, whole: bool, rounds: int = 200_000, seed: int = 1) -> float:
    """Mean window of a round-based AIMD model with Bernoulli loss ``p`` per packet, to size
    what whole-segment reductions cost (a model, not a measurement).

    Each round (one RTT) sends ``floor(w)`` packets; if none is lost the window grows by
    ``increase`` x packets acknowledged / w (per-ACK additive increase: 1 for Reno, about 1/4
    per subflow for LIA on two equal paths); if any is lost, the window is halved (floor 2) and
    the next round is recovery (no growth). ``whole``: the halved window is cut to whole
    segments and the progress towards the next segment dropped, as Linux does
    (``tcp_init_cwnd_reduction()`` zeroes ``snd_cwnd_cnt`` and ``ca_ops->ssthresh()`` returns
    whole segments, ``tcp_reno_ssthresh()``: ``max(snd_cwnd >> 1, 2)``, Linux 6.18; pp_* drop
    their q16 fraction in ``pp_ssthresh``); otherwise the fraction is kept, as pathpool-cc's
    real-valued window does (``set_ssthresh``)."""
    rng = np.random.default_rng(seed)
    w, total, recovering = 10.0, 0.0, False
    lost = rng.random((rounds, 64)) < p
    for r in range(rounds):
        n = int(w)
        total += w
        if recovering:
            recovering = False
            continue
        if lost[r, :min(n, 64)].any():
            w = max(math.floor(w / 2) if whole else w / 2, 2.0)
            recovering = True
        else:
            w += increase * n / w
    return total / rounds


# ----------------------------------------------------------------------------- runs


def report_jobs(only: str, seeds: list[int], algorithms: list[str] | None):
    """The report's simulator jobs of experiment ``only`` (Linux recovery, quickack)."""
    from pathpool.reproduce.experiments import Options, build_jobs, load_experiments
    from pathpool.reproduce.runner import select

    exps = select(load_experiments(["rsf"]), [only])
    if not exps:
        raise SystemExit(f"--only {only}: no such RSF experiment")
    jobs = build_jobs(exps, seeds, Options(recovery_reading="linux"))
    return [j for j in jobs if algorithms is None or j.tags["run_algorithm"] in algorithms]


def as_testbed(jobs):
    """The simulator jobs as the test bed runs them (``pathpool reproduce``'s agreement reading
    ``linux``: :func:`pathpool.kernel.mapping.as_testbed_runs`)."""
    from pathpool.kernel.mapping import as_testbed_runs
    from pathpool.sim.scenario import load_scenario
    from pathpool.sweep import Job

    return [Job(load_scenario(j.scenario, as_testbed_runs(j.scenario)), j.seed, dict(j.tags)) for j in jobs]


def kernel_jobs(jobs):
    from pathpool.reproduce.kernel import plan_jobs

    runnable, skipped = plan_jobs(jobs, "quickack")
    if skipped:
        raise SystemExit(f"not expressible on the test bed: {skipped}")
    return runnable


def sim_tables(job) -> dict[str, pd.DataFrame]:
    """The simulator job re-run with 100 ms series; refuses if sampling changed the run."""
    from pathpool.sim.scenario import load_scenario
    from pathpool.sweep import Job, run_job

    sampled = Job(load_scenario(job.scenario, ["metrics.interval=100ms"]), job.seed, dict(job.tags))
    t, plain = run_job(sampled), run_job(job)
    if not np.array_equal(t["flows"].goodput_bps.to_numpy(), plain["flows"].goodput_bps.to_numpy()):
        raise SystemExit(f"{job.tags} seed {job.seed}: sampling changed the simulator's run")
    return t


def connections(engine: str, tables: dict[str, pd.DataFrame], algorithm: str, seed: int) -> pd.DataFrame:
    c = connection_rows(tables["flows"], tables["series"])
    return c.assign(engine=engine, algorithm=algorithm, seed=seed)


def collect(args: argparse.Namespace) -> pd.DataFrame:
    parts = []
    kcache = caches(args)[0]
    for kj in kernel_jobs(report_jobs(args.only, list(range(1, args.kernel_seeds + 1)), args.algorithms)):
        d = kcache / kj.key()
        if not (d / "done").exists():
            print(f"kernel {kj.job.tags['run_algorithm']} seed {kj.job.seed}: not in {kcache}", file=sys.stderr)
            continue
        t = {n: pd.read_parquet(d / f"{n}.parquet") for n in ("flows", "series")}
        parts.append(connections("kernel", t, kj.job.tags["run_algorithm"], kj.job.seed).assign(key=kj.key()))
    sim_jobs = report_jobs(args.only, list(range(1, args.sim_seeds + 1)), args.algorithms)
    for j in as_testbed(sim_jobs) if args.sim_reading == "linux" else sim_jobs:
        parts.append(connections("sim", sim_tables(j), j.tags["run_algorithm"], j.seed))
    return pd.concat(parts, ignore_index=True)


def full_growth(senders, sample_s: float = SAMPLE_S) -> dict[str, float]:
    """Congestion-avoidance growth per RTT (as in :func:`connection_rows`: the samples from one
    before to two after each reduction left out) of raw kernel subflow samples, split by
    whether the window was full at the step's start (``unacked >= snd_cwnd``): Linux grows only
    a window that limits the sender (``tcp_is_cwnd_limited()``)."""
    acc = {True: [0.0, 0.0], False: [0.0, 0.0]}
    for s in senders:
        per: dict[str, list] = {}
        for m in s["samples"]:
            for x in m["subflows"]:
                if x.get("data_segs_out", 0) > 0 and x.get("rtt_us") and x["snd_cwnd"] <= CWND_MAX:
                    per.setdefault(x["local"], []).append((x["snd_cwnd"], x["rtt_us"] / 1e6, x["unacked"]))
        for v in per.values():
            a = np.array(v, dtype=float)
            c, rt, full = a[:, 0], a[:, 1], a[:, 2] >= a[:, 0]
            near = {j for r, _, _ in reductions(c) for j in range(r - 1, r + 3)}
            for want in (True, False):
                skip = frozenset(near | {j for j in range(len(c)) if full[j] != want})
                got = growth(c, rt, sample_s, skip)
                acc[want][0] += got[0]
                acc[want][1] += got[1]
    return {"ca_growth_full": acc[True][0] / acc[True][1] if acc[True][1] else np.nan,
            "ca_growth_not_full": acc[False][0] / acc[False][1] if acc[False][1] else np.nan,
            "ca_rtts_not_full_share": acc[False][1] / (acc[True][1] + acc[False][1])
            if acc[True][1] + acc[False][1] else np.nan}


def limits(raw: Path, keys: set[str]) -> pd.DataFrame:
    """From kept raw tcp_info, per run: the share of the subflows' busy time Linux counted as
    receive-window and send-buffer limited (``tcp_chrono``, summed over subflows); of the
    subflow samples, the share in CA states Recovery (3) and Loss (4), and the share whose
    window was not full (``unacked < snd_cwnd``) split by whether data was assigned to the
    subflow but unsent (``notsent_bytes > 0``) or none was (the scheduler or the application
    left it without data); and :func:`full_growth`."""
    rows = []
    for key in sorted(keys):
        p = raw / f"{key}.json"
        if not p.exists():
            continue
        senders = json.loads(p.read_text())["raw"]["senders"].values()
        busy = rwnd = sndbuf = 0.0
        for s in senders:
            for x in s["final"]:
                busy += x.get("busy_time_us", 0)
                rwnd += x.get("rwnd_limited_us", 0)
                sndbuf += x.get("sndbuf_limited_us", 0)
        smp = pd.DataFrame([x for s in senders for m in s["samples"] for x in m["subflows"]
                            if x.get("data_segs_out", 0) > 0])
        if smp.empty:
            continue
        open_ = smp.unacked < smp.snd_cwnd
        g = full_growth(senders)
        rows.append({**g, "key": key, "busy_s": busy / 1e6, "rwnd_limited": rwnd / busy if busy else np.nan,
                     "sndbuf_limited": sndbuf / busy if busy else np.nan,
                     "recovery_share": float((smp.ca_state == 3).mean()),
                     "loss_share": float((smp.ca_state == 4).mean()),
                     "not_full_with_data": float((open_ & (smp.notsent_bytes > 0)).mean()),
                     "not_full_no_data": float((open_ & (smp.notsent_bytes == 0)).mean())})
    return pd.DataFrame(rows)


def table(args: argparse.Namespace) -> None:
    conns = collect(args)
    if args.csv:
        conns.to_csv(args.csv, index=False)
    out = []
    for alg, g in conns.groupby("algorithm", sort=False):
        k, s = g[g.engine == "kernel"], g[g.engine == "sim"]
        if k.empty or s.empty:
            continue
        r = ratios(k, s).assign(algorithm=alg, n_kernel=k.seed.nunique(), n_sim=s.seed.nunique())
        out.append(r)
        fk, fs = factors(k), factors(s)
        print(f"\n{alg}: n kernel {k.seed.nunique()}, sim {s.seed.nunique()}; "
              f"product check kernel {product(fk) / fk['G']:.6f}, sim {product(fs) / fs['G']:.6f}")
        print(r.round(4).to_string(index=False))
        d = ratios(k, s, n_boot=500, stat=diagnostics).set_index("factor")
        print(d[["kernel", "sim", "ratio", "lo", "hi"]].round(4).to_string())
        if args.raw:
            lim = limits(caches(args)[1], set(k.key))
            if len(lim):
                print(f"raw tcp_info ({len(lim)} runs):")
                print(lim.drop(columns="key").describe().loc[["mean", "min", "max"]].round(4).to_string())
    res = pd.concat(out, ignore_index=True)
    wide = res.pivot_table(index="algorithm", columns="factor", values="ratio", sort=False)
    print("\nkernel / simulator (G = A x W / S x u x k x b; S's ratio divides):")
    print(wide[["G", *FACTORS]].round(3).to_string())


def caches(args: argparse.Namespace) -> tuple[Path, Path]:
    """(kernel cache, raw folder): the report's shared cache, ``--into``'s own folder, or with
    ``--sysctl`` the probe's own folder for that set of sysctls (a counterfactual never goes to
    the report's cache)."""
    from pathpool.reproduce.kernel import cache_root

    if getattr(args, "into", None):
        if args.sysctl:
            print("two_subflow_gap.py: --into and --sysctl: give one (a counterfactual has its own "
                  "folder)", file=sys.stderr)
            raise SystemExit(2)
        return cache_root(Path(args.into)), Path(args.into) / "raw"
    if not args.sysctl:
        return cache_root(Path(args.kernel_cache)), Path(args.raw)
    out = Path(args.probe_out) / _probe().folder(args.sysctl)
    return cache_root(out), out / "raw"


def run(args: argparse.Namespace) -> None:
    from pathpool.reproduce.kernel import cache_root, run_kernel_jobs

    kjobs = kernel_jobs(report_jobs(args.only, args.seeds, args.algorithms))
    report = cache_root(Path(args.kernel_cache))
    # The plans must be the report's: every algorithm's seed-1 run must be in the report's
    # cache under the key this script computes (the key hashes plan and seed). Runs into their
    # own folder (--into, --sysctl) on a machine without that cache have nothing to compare
    # with: the plans are still built by the report's own code (report_jobs, kernel_jobs), but
    # the check is skipped, and said so.
    refs = kernel_jobs(report_jobs(args.only, [1], args.algorithms))
    if (args.into or args.sysctl) and not report.exists():
        print(f"no report cache at {report}: plans not checked against it", file=sys.stderr)
        refs = []
    for ref in refs:
        if not (report / ref.key() / "done").exists():
            raise SystemExit(f"{ref.job.tags['run_algorithm']}: seed 1 not in {report}: plan differs")
    kcache, raw = caches(args)
    probe = _probe()
    if args.sysctl:
        probe.with_sysctls(args.sysctl)
    probe.keep_raw(kjobs, raw)
    run_kernel_jobs(kjobs, kcache, beds=args.beds,
                    progress=lambda d, n: print(f"runs {d}/{n}", file=sys.stderr, flush=True))


def model(args: argparse.Namespace) -> None:
    for name, inc in (("Reno (RSF-DB's subflows)", 1.0), ("LIA-like, two equal paths", 0.25)):
        f, w = aimd_window(args.loss, inc, False), aimd_window(args.loss, inc, True)
        print(f"{name}, loss {args.loss:g}: mean window {f:.2f} (fraction kept) / {w:.2f} "
              f"(whole segments) = {w / f:.3f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("command", choices=["run", "table", "model"])
    p.add_argument("--only", default="table2_s2", help="one RSF experiment (default table2_s2)")
    p.add_argument("--algorithms", nargs="+", default=None, help="default: the experiment's")
    p.add_argument("--kernel-seeds", type=int, default=10)
    p.add_argument("--sim-seeds", type=int, default=30)
    p.add_argument("--seeds", nargs="+", type=int, default=[7, 8, 9, 10], help="run: kernel seeds")
    p.add_argument("--beds", type=int, default=3)
    p.add_argument("--kernel-cache", required=True)
    p.add_argument("--raw", required=True, help="raw tcp_info of `run` (read by table)")
    p.add_argument("--sysctl", action="append", default=[], metavar="KEY=VALUE",
                   help="a counterfactual: set in the test bed's namespaces (repeatable); its runs go to "
                   "--probe-out, never to the report's cache, and `table` then reads them")
    p.add_argument("--probe-out", required=True)
    p.add_argument("--into", default=None, metavar="DIR",
                   help="run: the report's plans into DIR's own cache, raw tcp_info in DIR/raw (never the "
                   "report's cache); table: read the kernel runs from there")
    p.add_argument("--csv", default=None, help="table: write the connection rows here")
    p.add_argument("--sim-reading", choices=["scenario", "linux"], default="scenario",
                   help="table: the simulator as the report's columns run it (default) or as the test bed "
                   "runs each scenario (reproduce's agreement reading linux)")
    p.add_argument("--loss", type=float, default=0.02, help="model: loss probability per packet")
    args = p.parse_args()
    {"run": run, "table": table, "model": model}[args.command](args)


if __name__ == "__main__":
    main()
