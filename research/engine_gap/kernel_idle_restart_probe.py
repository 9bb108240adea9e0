#!/usr/bin/env python3
"""Balia Fig. 3 on the kernel with and without Linux's restart after idle.

The kernel's Coupled and OLIA runs of Balia Fig. 3 (report/kernel) take about twice the
simulator's window reductions. Half of them come with the bottleneck queue empty and leave the
subflow's window at exactly 10 packets, the initial window: the signature of
``tcp_cwnd_restart()`` (net/ipv4/tcp_output.c, Linux 6.18), which ``tcp_event_data_sent()``
calls when a socket sends after being idle (nothing in flight) for longer than its RTO, if
``net.ipv4.tcp_slow_start_after_idle`` is 1 (the default; RFC 2861 / RFC 7661's "restart
window"). The simulator has no such rule.

This probe re-runs the cached plans (same test bed, algorithm, seed, ACK reading and sampling
as ``pathpool reproduce balia --only fig3 --recovery-reading linux``) with that sysctl set in
the test bed's namespaces, and classifies every window reduction of the cached runs and of the
new ones the same way (:func:`classify`). It is a diagnostic counterfactual, never a reading of
the report: its runs go to their own cache (``--out``, default
``KCACHE/probe-idle-restart``), never to the report's.

    flock /run/pathpool-kernel.lock python research/engine_gap/kernel_idle_restart_probe.py run \
        --algorithms coupled olia --seeds 1 2 3 [--sysctl KEY=VALUE ...]
    python research/engine_gap/kernel_idle_restart_probe.py table    # cached runs against the probe's

``--sysctl`` (repeatable; default ``net.ipv4.tcp_slow_start_after_idle=0``) is set in the bed's
three namespaces right after they come up, before any flow starts; each set of sysctls has its
own cache folder under ``--out``. A second counterfactual, a send buffer large from the start
(``net.ipv4.tcp_wmem="4096 4194304 33554432"``), tests whether the idle periods come from the
connection-level send buffer filling behind a stalled subflow.

Idle periods (:func:`idle`): runs of at least 4 consecutive 50 ms samples in which a subflow's
srtt and cwnd both stay the same, i.e. no ACK arrived for at least 200 ms.

Reductions are counted as in the reproduce README ("Balia Fig. 3 on the kernel"): a 50 ms cwnd
sample below 0.7 of the peak since the last reduction, over 20-120 s. A reduction is
"full-queue" if the queueing delay (smaller subflow srtt minus the 100 ms propagation RTT)
reached 35 ms (about 29 of the 50 packets) in the 0.5 s before it, "empty-queue" below 15 ms.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

EXPERIMENT = "balia/fig3"
DEFAULT_SYSCTL = "net.ipv4.tcp_slow_start_after_idle=0"
PROPAGATION_RTT_S = 0.1
WINDOW = (20.0, 120.0)


def jobs(algorithms: list[str], seeds: list[int]):
    """The kernel jobs of Fig. 3 for ``algorithms`` and ``seeds``, planned as the report's."""
    from pathpool.reproduce.experiments import Options, build_jobs, load_experiments
    from pathpool.reproduce.kernel import plan_jobs

    exps = [e for e in load_experiments(["balia"]) if e.key == EXPERIMENT]
    all_jobs = build_jobs(exps, seeds, Options(recovery_reading="linux"))
    sel = [j for j in all_jobs if j.tags["run_algorithm"] in algorithms]
    runnable, skipped = plan_jobs(sel, "quickack")
    if skipped:
        raise SystemExit(f"not expressible on the test bed: {skipped}")
    return runnable


def run(args: argparse.Namespace) -> None:
    from pathpool.reproduce.kernel import cache_root, run_kernel_jobs

    kjobs = jobs(args.algorithms, args.seeds)
    report_cache = cache_root(Path(args.report_cache))
    # The plans must be the report's, or the comparison means nothing: each algorithm's seed-1
    # run must be in the report's cache (its key hashes plan and seed), and every requested
    # seed's plan must equal that one (seeds beyond the report's share its plan).
    for ref in jobs(args.algorithms, [1]):
        alg = ref.job.tags["run_algorithm"]
        if not (report_cache / ref.key()).is_dir():
            raise SystemExit(f"{alg}: seed 1 not in the report's cache {report_cache}: plan differs")
        if any(kj.plan.describe() != ref.plan.describe() for kj in kjobs if kj.job.tags["run_algorithm"] == alg):
            raise SystemExit(f"{alg}: a requested seed's plan differs from the report's")
    with_sysctls(args.sysctl)
    out = Path(args.out) / folder(args.sysctl)
    keep_raw(kjobs, out / "raw")
    run_kernel_jobs(kjobs, cache_root(out), beds=args.beds,
                    progress=lambda d, n: print(f"runs {d}/{n}", file=sys.stderr, flush=True))


def with_sysctls(sysctls: list[str]) -> None:
    """Make every test bed set ``sysctls`` in its three namespaces right after they come up,
    before any flow starts (patches ``pathpool.kernel.run.testbed_for``)."""
    import pathpool.kernel.run as krun

    make = krun.testbed_for

    def testbed_for(plan, prefix="pp-"):
        tb = make(plan, prefix)
        up = tb.up

        def up_then_sysctl() -> None:
            up()
            for ns in (tb.ns_c, tb.ns_r, tb.ns_s):
                for kv in sysctls:
                    tb.ns(ns, "sysctl", "-qw", kv)

        tb.up = up_then_sysctl
        return tb

    krun.testbed_for = testbed_for


def keep_raw(kjobs, raw: Path) -> None:
    """Keep each run's record, raw per-tick tcp_info included, as ``raw/<cache key>.json``
    beside the cache (patches ``pathpool.kernel.run.run_once``; the record itself unchanged)."""
    import pathpool.kernel.run as krun

    raw.mkdir(parents=True, exist_ok=True)
    once = krun.run_once

    def run_once_kept(tb, plan, seed):
        rec = once(tb, plan, seed)
        key = next(kj.key() for kj in kjobs if kj.plan is plan and kj.job.seed == seed)
        (raw / f"{key}.json").write_text(json.dumps(rec, default=str))
        return rec

    krun.run_once = run_once_kept


def folder(sysctls: list[str]) -> str:
    """The probe cache folder of one set of sysctls (``after_idle_0`` for the default,
    ``as_report`` for none: the report's plan re-run, to keep its raw tcp_info)."""
    if sysctls == [DEFAULT_SYSCTL]:
        return "after_idle_0"
    if not sysctls:
        return "as_report"
    return "__".join(kv.replace("net.ipv4.", "").replace(" ", "_").replace("=", "-") for kv in sysctls)


def reductions(c: np.ndarray, thr: float = 0.7) -> list[tuple[int, float, float]]:
    """(sample index, peak, value) of every sample below ``thr`` x the peak since the last one."""
    out, peak = [], c[0]
    for j, ci in enumerate(c):
        peak = max(peak, ci)
        if ci < thr * peak:
            out.append((j, peak, ci))
            peak = ci
    return out


def classify(series: pd.DataFrame) -> dict[str, float]:
    """Per run: reductions by queue state, how many end at the 10-packet initial window, the
    share of time the summed window is below the 83-packet BDP, and the window CV."""
    c = series[series.metric.isin(["cwnd", "srtt_s"])].pivot_table(
        index="time_s", columns=["metric", "id"], values="value")
    c = c[(c.index >= WINDOW[0]) & (c.index <= WINDOW[1])]
    q_ms = (c["srtt_s"].min(axis=1) - PROPAGATION_RTT_S) * 1000
    row = {"full": 0, "empty": 0, "mid": 0, "to_iw": 0}
    for sub in c["cwnd"].columns:
        x = c[("cwnd", sub)].to_numpy()
        for j, _peak, after in reductions(x):
            qmax = q_ms.iloc[max(0, j - 10):j + 1].max()
            row["full" if qmax >= 35 else "empty" if qmax < 15 else "mid"] += 1
            row["to_iw"] += after == 10
    total = c["cwnd"].sum(axis=1)
    row["below_bdp"] = float((total < 83).mean())
    # The report's window CV (pathpool.reproduce.metrics.oscillation: population std / mean).
    row["window_cv"] = float(np.std(total.to_numpy()) / total.mean())
    row["idle_s"] = sum(idle(c[("srtt_s", sub)].to_numpy(), c[("cwnd", sub)].to_numpy())
                        for sub in c["cwnd"].columns)
    return row


def idle(srtt: np.ndarray, cwnd: np.ndarray, sample_s: float = 0.05, least: int = 4) -> float:
    """Seconds a subflow spent in runs of at least ``least`` unchanged (srtt, cwnd) samples."""
    same = np.r_[False, (srtt[1:] == srtt[:-1]) & (cwnd[1:] == cwnd[:-1])]
    total, n = 0, 0
    for v in np.r_[same, False]:
        if v:
            n += 1
            continue
        total += n if n >= least else 0
        n = 0
    return total * sample_s


def load_runs(cache: Path, kjobs) -> pd.DataFrame:
    rows = []
    for kj in kjobs:
        d = cache / kj.key()
        if not (d / "done").exists():
            continue
        s = pd.read_parquet(d / "series.parquet")
        ln = pd.read_parquet(d / "links.parquet")
        sf = pd.read_parquet(d / "subflows.parquet")
        r = classify(s)
        r.update(algorithm=kj.job.tags["run_algorithm"], seed=kj.job.seed,
                 utilisation=float(ln.utilisation.iloc[0]), drops=int(ln.queue_drops.iloc[0]),
                 retx=int(sf.retransmitted_packets.sum()))
        rows.append(r)
    return pd.DataFrame(rows)


def table(args: argparse.Namespace) -> None:
    from pathpool.reproduce.kernel import cache_root

    kjobs = jobs(args.algorithms, args.seeds)
    parts = [load_runs(cache_root(Path(args.report_cache)), kjobs).assign(source="report")]
    for sub in sorted(p.name for p in Path(args.out).glob("*") if p.is_dir()):
        p = load_runs(cache_root(Path(args.out) / sub), kjobs)
        if len(p):
            parts.append(p.assign(source=sub))
    d = pd.concat(parts)
    cols = ["source", "algorithm", "seed", "full", "empty", "mid", "to_iw", "idle_s",
            "below_bdp", "window_cv", "utilisation", "drops", "retx"]
    print(d[cols].sort_values(["algorithm", "source", "seed"]).round(3).to_string(index=False))
    keys = ["algorithm", "source"]
    g = d.groupby(keys)[["full", "empty", "to_iw", "idle_s", "below_bdp", "window_cv", "utilisation",
                         "drops"]].mean()
    print(g.assign(n=d.groupby(keys).size()).round(3).to_string())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("command", choices=["run", "table"])
    p.add_argument("--algorithms", nargs="+", default=["coupled", "olia"])
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    p.add_argument("--sysctl", action="append", metavar="KEY=VALUE",
                   help=f"set in the test bed's namespaces (repeatable; default {DEFAULT_SYSCTL}; "
                        "'none': the report's bed unchanged)")
    p.add_argument("--beds", type=int, default=3)
    p.add_argument("--out", required=True)
    p.add_argument("--report-cache", required=True)
    args = p.parse_args()
    args.sysctl = [kv for kv in (args.sysctl or [DEFAULT_SYSCTL]) if kv != "none"]
    run(args) if args.command == "run" else table(args)


if __name__ == "__main__":
    main()
