#!/usr/bin/env python3
"""What leaves a kernel MPTCP subflow below its window in RSF Table 2 scenario 2.

Reads the raw per-tick samples the test bed's sender keeps (``python -m pathpool.kernel.transfer
send``: each subflow's ``tcp_info`` and, where the sender recorded it, the connection's send side,
:func:`pathpool.kernel.transfer.conn_info`) and labels every subflow sample by one rule, in this
order (a subflow that has sent nothing yet is left out):

- ``full``: ``unacked >= snd_cwnd`` (``tcpi_unacked`` is ``packets_out``).
- ``queued``: below the window with data in its own write queue (``notsent_bytes > 0``): TCP
  holds it (TSQ, pacing, the receive window, Nagle at a segment's tail).
- below the window with its own write queue empty, by where the connection's data is:
  - ``unassigned``: the connection holds data no subflow has been given
    (``SIOCOUTQNSD`` = ``write_seq - snd_nxt`` > 0): the MPTCP scheduler
    (``mptcp_subflow_get_send()``) did not place it on this subflow;
  - ``sibling``: nothing unassigned, but the other subflow has data queued beyond what it has
    sent (its ``notsent_bytes > 0``): assigned ahead to the sibling;
  - ``tail``: the application has written the whole file and nothing is unassigned or queued
    anywhere: the download's end;
  - ``sndbuf``: the file is not all written, nothing is unassigned or queued, and the
    connection's send buffer is too full for the application to write (``wmem_queued > 2/3
    sndbuf``: ``sk_stream_is_writeable()``): data written but not DATA_ACKed fills it;
  - ``app``: as ``sndbuf`` but with room: the application had not written yet (the sender's
    loop waits up to 10 ms in ``select``).

Shares are of congestion-avoidance samples (``ca_state`` Open or Disorder, ``snd_cwnd >=
snd_ssthresh``) and of all samples; samples are 100 ms apart, so sample shares are time shares.

    flock /run/pathpool-kernel.lock python research/engine_gap/two_subflow_gap.py run --only table2_s2 \\
        --seeds 11 12 13 14 15 --into OUT/s2     # the report's plans, own cache
    python research/engine_gap/s2_idle_probe.py table --raw OUT/s2/raw
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

#: Labels of a subflow sample, in the order the rule tries them.
LABELS = ("full", "queued", "unassigned", "sibling", "tail", "sndbuf", "app")
IDLE = ("unassigned", "sibling", "tail", "sndbuf", "app")
#: tcp_info ca_state values counted as congestion avoidance (TCP_CA_Open, TCP_CA_Disorder).
CA_STATES = (0, 1)


def label(x: dict, sibling_notsent: float, conn: dict, size: int) -> str:
    """The label of one subflow sample ``x`` (tcp_info fields) given its sibling's
    ``notsent_bytes`` and the connection's send side ``conn`` at the same tick."""
    if x["unacked"] >= x["snd_cwnd"]:
        return "full"
    if x.get("notsent_bytes", 0) > 0:
        return "queued"
    if conn.get("unassigned", 0) > 0:
        return "unassigned"
    if sibling_notsent > 0:
        return "sibling"
    if size and conn["written"] >= size:
        return "tail"
    if 3 * conn.get("wmem_queued", 0) > 2 * conn.get("sndbuf", 0):
        return "sndbuf"
    return "app"


def sender_rows(sender: dict) -> list[dict]:
    """One row per subflow sample of one MPTCP sender's raw record (samples without the
    connection's send side, recorded before it was kept, are skipped)."""
    size = int(sender.get("size_bytes") or 0)
    rows = []
    for m in sender["samples"]:
        conn = m.get("conn")
        if conn is None:
            continue
        subs = [x for x in m["subflows"] if x.get("data_segs_out", 0) > 0]
        for x in subs:
            others = [y for y in subs if y is not x]
            sib = sum(y.get("notsent_bytes", 0) for y in others)
            # The sibling that holds the most unsent data (the other one, with two subflows).
            main = max(others, key=lambda y: y.get("notsent_bytes", 0)) if others else {}
            rows.append({"t": m["t"], "local": x.get("local"), "cwnd": x["snd_cwnd"],
                         "ssthresh": x.get("snd_ssthresh", 0), "unacked": x["unacked"],
                         "ca_state": x.get("ca_state", 0), "notsent": x.get("notsent_bytes", 0),
                         "sibling_notsent": sib, "sibling_cwnd": main.get("snd_cwnd", np.nan),
                         "sibling_ca_state": main.get("ca_state", np.nan), "unassigned": conn.get("unassigned", 0),
                         "outq": conn.get("outq", 0), "written": conn["written"],
                         "sndbuf": conn.get("sndbuf", 0), "wmem_queued": conn.get("wmem_queued", 0),
                         "size": size, "n_subflows": len(subs), "label": label(x, sib, conn, size)})
    return rows


def end_phase(sender: dict) -> dict[str, float] | None:
    """The end of one download on the kernel: from the first tick at which the application has
    written the whole file and a subflow sits below its window with nothing queued (the rest
    of the file is in the other subflow's queue, behind its window) to the download's end
    (``done_s``). Delivered bytes are the subflows' ``bytes_acked`` summed.

    ``phase_share``: the phase's share of the download (first tick to ``done_s``);
    ``bytes_share``: the file's share delivered in it; ``rate_ratio``: its delivery rate over
    the rate before it; ``lost_share``: the download time the phase costs against delivering its
    bytes at the earlier rate, as a share of the download (0 if it was not slower). None if the
    download did not finish or never reached the state."""
    size, done = int(sender.get("size_bytes") or 0), sender.get("done_s")
    smp = [m for m in sender["samples"] if m.get("conn") is not None]
    if not size or done is None or not smp:
        return None
    t_start = smp[0]["t"]
    for m in smp:
        subs = [x for x in m["subflows"] if x.get("data_segs_out", 0) > 0]
        idle = [x for x in subs if x.get("notsent_bytes", 0) == 0 and x["unacked"] < x["snd_cwnd"]]
        if m["conn"]["written"] >= size and len(subs) > 1 and idle and len(idle) < len(subs):
            t0, acked = m["t"], sum(x.get("bytes_acked", 0) for x in m["subflows"])
            break
    else:
        return None
    T, Tp = done - t_start, done - t0
    if T <= 0 or t0 <= t_start or acked <= 0:
        return None
    before = acked / (t0 - t_start)
    rest = max(size - acked, 0)
    at = (rest / Tp) / before if Tp > 0 else np.nan
    return {"T": T, "phase_share": Tp / T, "bytes_share": rest / size, "rate_ratio": at,
            "lost_share": max(Tp - rest / before, 0.0) / T}


def run_rows(record: dict) -> pd.DataFrame:
    """Labelled subflow samples of every MPTCP sender of one run's raw record."""
    rows = []
    for name, s in record["raw"]["senders"].items():
        if not s.get("mptcp"):
            continue
        rows += [{**r, "conn": name} for r in sender_rows(s)]
    return pd.DataFrame(rows)


def in_ca(rows: pd.DataFrame) -> pd.Series:
    return rows.ca_state.isin(CA_STATES) & (rows.cwnd >= rows.ssthresh)


def shares(rows: pd.DataFrame) -> dict[str, float]:
    """Share of samples per label, of congestion-avoidance samples (``ca_*``) and of all
    (``all_*``); ``ca_below`` / ``all_below`` = 1 - full."""
    out = {}
    for tag, sel in (("ca", in_ca(rows)), ("all", pd.Series(True, index=rows.index))):
        r = rows[sel]
        n = len(r)
        for lab in LABELS:
            out[f"{tag}_{lab}"] = float((r.label == lab).sum() / n) if n else np.nan
        out[f"{tag}_below"] = 1.0 - out[f"{tag}_full"] if n else np.nan
        out[f"{tag}_n"] = n
    return out


def idle_detail(rows: pd.DataFrame) -> dict[str, float]:
    """What the connection held while a subflow sat idle in congestion avoidance: the median
    unassigned bytes (``unassigned`` samples), the sibling's queued bytes (``sibling``), the
    send queue over the send buffer (``sndbuf``), and the idle subflow's free window (packets)."""
    r = rows[in_ca(rows)]
    out = {}
    for lab, col in (("unassigned", "unassigned"), ("sibling", "sibling_notsent")):
        v = r.loc[r.label == lab, col]
        out[f"{lab}_median_bytes"] = float(v.median()) if len(v) else np.nan
    v = r[r.label == "sndbuf"]
    out["sndbuf_fill_median"] = float((v.wmem_queued / v.sndbuf).median()) if len(v) else np.nan
    # Why nothing was left unassigned while the sibling held data: the whole file written
    # (``app_done``), or the connection's send buffer too full for the writer (``blocked``).
    v = r[r.label == "sibling"]
    done = v.written >= v["size"]
    blocked = ~done & (3 * v.wmem_queued > 2 * v.sndbuf)
    out["sibling_app_done"] = float(done.mean()) if len(v) else np.nan
    out["sibling_blocked"] = float(blocked.mean()) if len(v) else np.nan
    out["sibling_fill_median"] = float((v.wmem_queued / v.sndbuf).median()) if len(v) else np.nan
    out["sndbuf_median_bytes"] = float(r.sndbuf.median()) if len(r) else np.nan
    # The windows at those ticks against all congestion-avoidance ticks, and how often the
    # sibling was in Recovery (3) or Loss (4).
    out["sibling_own_cwnd_median"] = float(v.cwnd.median()) if len(v) else np.nan
    out["sibling_sib_cwnd_median"] = float(v.sibling_cwnd.median()) if len(v) else np.nan
    out["ca_cwnd_median"] = float(r.cwnd.median()) if len(r) else np.nan
    out["sibling_sib_recovery"] = float((v.sibling_ca_state >= 3).mean()) if len(v) else np.nan
    idle = r[r.label.isin(IDLE)]
    out["idle_free_window_median"] = float((idle.cwnd - idle.unacked).median()) if len(idle) else np.nan
    return out


def mean_ci(v: np.ndarray) -> tuple[float, float, float]:
    """Mean and 95% t interval over runs (n < 2: no interval)."""
    from scipy import stats

    v = np.asarray(v, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return np.nan, np.nan, np.nan
    m = float(v.mean())
    if len(v) < 2:
        return m, np.nan, np.nan
    h = float(stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))
    return m, m - h, m + h


def collect(raw: Path) -> pd.DataFrame:
    """Per run: algorithm, seed and the label shares of every raw record in ``raw``."""
    out = []
    for p in sorted(raw.glob("*.json")):
        rec = json.loads(p.read_text())
        rows = run_rows(rec)
        if rows.empty:
            continue
        tags = rec.get("tags") or {}
        alg = tags.get("run_algorithm") or next(iter(rec["raw"]["senders"].values())).get("cc")
        ends = [e for s in rec["raw"]["senders"].values() if s.get("mptcp") and (e := end_phase(s))]
        ends = pd.DataFrame(ends)
        # Download-time weighted over the run's connections.
        end = {f"end_{c}": float((ends[c] * ends["T"]).sum() / ends["T"].sum()) if len(ends) else np.nan
               for c in ("phase_share", "bytes_share", "lost_share")}
        out.append({"key": p.stem, "algorithm": alg, "seed": rec.get("seed"),
                    **shares(rows), **idle_detail(rows), **end, "end_n": len(ends)})
    return pd.DataFrame(out)


def table(args: argparse.Namespace) -> None:
    runs = collect(Path(args.raw))
    if runs.empty:
        print(f"s2_idle_probe.py: --raw {args.raw}: no run with the connection's send side recorded",
              file=sys.stderr)
        raise SystemExit(2)
    if args.csv:
        runs.to_csv(args.csv, index=False)
    cols = [f"ca_{lab}" for lab in ("below", *LABELS[1:])] + ["all_below", "end_phase_share",
                                                                 "end_bytes_share", "end_lost_share"]
    for alg, g in runs.groupby("algorithm", sort=False):
        print(f"\n{alg}: n = {len(g)} runs; share of congestion-avoidance samples "
              f"({int(g.ca_n.sum())} samples), mean over runs [95% t interval]")
        for c in cols:
            m, lo, hi = mean_ci(g[c].to_numpy())
            print(f"  {c:16s} {m:7.4f}  [{lo:7.4f}, {hi:7.4f}]")
        d = g[[c for c in g.columns if c.endswith(("_bytes", "_median")) or c.startswith("sibling_")]].median()
        print("  medians over runs: " + ", ".join(f"{k} {v:.0f}" if "bytes" in k else f"{k} {v:.2f}"
                                                 for k, v in d.items()))


def _gap():
    """``two_subflow_gap`` (the report's jobs, download windows, reduction detector), imported
    from beside this file."""
    import importlib

    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    return importlib.import_module("two_subflow_gap")


def sim_rows(flows: pd.DataFrame, series: pd.DataFrame, tail_s: float) -> pd.DataFrame:
    """The simulator's subflow samples inside each download (first byte to completion) after
    the subflow's first window reduction (its congestion avoidance: the series has no ssthresh
    or state), each ``full`` (``in_flight >= floor(cwnd)``: the simulator's ``has_room`` is
    false) or below; ``at_tail`` marks samples in the download's last ``tail_s`` seconds.

    The simulator assigns a data sequence number only when a subflow with room sends it
    (``Conn::pick_subflow`` in crates/pathpool-sim/src/mptcp.rs: no per-subflow queue, no
    send buffer), so a subflow below its window at a sample has nothing it may send: the file
    is all sent, the receive window is closed, or it waits in loss after an RTO."""
    gap = _gap()

    out = []
    sub = series[series.entity == "subflow"]
    for _, f in flows.iterrows():
        t0, t1 = gap.download_window(f)
        mine = sub[sub.id.str.startswith(f["flow"] + "/") & (sub.time_s > t0) & (sub.time_s <= t1)]
        w = mine.pivot_table(index=["id", "time_s"], columns="metric", values="value").reset_index()
        for _, g in w.groupby("id"):
            c = g.cwnd.to_numpy()
            got = gap.reductions(c) if len(c) else []
            if not got:
                continue
            g = g.iloc[got[0][0]:]
            out.append(pd.DataFrame({"conn": f["flow"], "id": g.id, "t": g.time_s,
                                     "full": g.in_flight >= np.floor(g.cwnd),
                                     "at_tail": g.time_s > t1 - tail_s}))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame()


def sim(args: argparse.Namespace) -> None:
    gap = _gap()

    rows = []
    for j in gap.report_jobs(args.only, list(range(1, args.seeds + 1)), args.algorithms):
        t = gap.sim_tables(j)
        r = sim_rows(t["flows"], t["series"], args.tail_s)
        below = ~r.full
        rows.append({"algorithm": j.tags["run_algorithm"], "seed": j.seed, "n": len(r),
                     "below": float(below.mean()), "below_tail": float((below & r.at_tail).mean()),
                     "below_not_tail": float((below & ~r.at_tail).mean())})
    runs = pd.DataFrame(rows)
    if args.csv:
        runs.to_csv(args.csv, index=False)
    for alg, g in runs.groupby("algorithm", sort=False):
        print(f"{alg}: n = {len(g)} seeds, {int(g.n.sum())} samples after the first reduction")
        for c in ("below", "below_tail", "below_not_tail"):
            m, lo, hi = mean_ci(g[c].to_numpy())
            print(f"  {c:16s} {m:7.4f}  [{lo:7.4f}, {hi:7.4f}]")


def goodput(args: argparse.Namespace) -> None:
    """The table's number per run (mean over its connections of size / download time, Mbit/s)
    of every kernel run cached under ``args.cache``, mean and 95% t interval per algorithm."""
    parts = [pd.read_parquet(p) for p in sorted(Path(args.cache).glob("cache-linux/*/*/flows.parquet"))]
    if not parts:
        print(f"s2_idle_probe.py: --cache {args.cache}: no cached kernel run", file=sys.stderr)
        raise SystemExit(2)
    f = pd.concat(parts, ignore_index=True)
    runs = f.groupby(["run_algorithm", "seed"]).goodput_bps.mean().div(1e6).rename("mbps").reset_index()
    for alg, g in runs.groupby("run_algorithm", sort=False):
        m, lo, hi = mean_ci(g.mbps.to_numpy())
        print(f"{alg}: n = {len(g)} runs (seeds {', '.join(str(s) for s in sorted(g.seed))}): "
              f"{m:.3f} Mbit/s [{lo:.3f}, {hi:.3f}]")


TRACEFS = Path("/sys/kernel/tracing")
EVENT = "events/mptcp/mptcp_subflow_get_send"


def ring_count(instance: Path) -> int:
    """Events an ftrace instance recorded since its buffer was reset: ``entries`` (still in the
    ring) plus ``overrun`` (overwritten), summed over CPUs (``per_cpu/cpuN/stats``)."""
    n = 0
    for st in sorted(instance.glob("per_cpu/cpu*/stats")):
        for line in st.read_text().splitlines():
            k, _, v = line.partition(":")
            if k.strip() in ("entries", "overrun"):
                n += int(v.split()[0])
    return n


def trace_count(args: argparse.Namespace) -> None:
    """Run ``args.cmd`` with the ``mptcp:mptcp_subflow_get_send`` tracepoint counted in two
    private ftrace instances: every subflow the scheduler looked at, and those whose send
    buffer was full (``free == 0``: ``sk_stream_memory_free()`` false; the scheduler returns no
    subflow when its pick is such). The event names no socket, so the counts are per command."""
    import shutil
    import subprocess

    if not (TRACEFS / EVENT).exists():
        print(f"s2_idle_probe.py: {TRACEFS / EVENT} not found (tracefs not mounted, or no MPTCP tracepoints)",
              file=sys.stderr)
        raise SystemExit(2)
    made = {}
    try:
        for name, filt in (("all", "0"), ("not_free", "free == 0"), ("inactive", "active == 0")):
            inst = TRACEFS / "instances" / f"s2idle_{name}"
            inst.mkdir(exist_ok=True)
            made[name] = inst
            (inst / "buffer_size_kb").write_text("64\n")   # counted by overrun, never read
            if filt != "0":
                (inst / EVENT / "filter").write_text(filt + "\n")
            (inst / "trace").write_text("")
            (inst / EVENT / "enable").write_text("1\n")
        rc = subprocess.call(args.cmd)
        for inst in made.values():
            (inst / EVENT / "enable").write_text("0\n")
        counts = {name: ring_count(inst) for name, inst in made.items()}
    finally:
        for inst in made.values():
            try:
                (inst / EVENT / "enable").write_text("0\n")
                inst.rmdir()
            except OSError:
                shutil.rmtree(inst, ignore_errors=True)
    out = {"cmd": args.cmd, "rc": rc, **counts,
           "not_free_share": counts["not_free"] / counts["all"] if counts["all"] else None}
    print(json.dumps(out))
    if args.out:
        with open(args.out, "a") as f:
            f.write(json.dumps(out) + "\n")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("table", help="label shares per algorithm from raw run records")
    t.add_argument("--raw", required=True, help="folder of raw run records (two_subflow_gap.py run --into DIR: DIR/raw)")
    t.add_argument("--csv", default=None, help="write the per-run shares here")
    m = sub.add_parser("sim", help="the simulator's subflows below their window, same runs as the report's")
    m.add_argument("--only", default="table2_s2")
    m.add_argument("--algorithms", nargs="+", default=None)
    m.add_argument("--seeds", type=int, default=10, help="seeds 1..N")
    m.add_argument("--tail-s", type=float, default=1.0, help="the download's last seconds counted as its tail")
    m.add_argument("--csv", default=None)
    g = sub.add_parser("goodput", help="the table's number per kernel run of a cache folder")
    g.add_argument("--cache", required=True, help="the folder given to two_subflow_gap.py run --into (or a probe folder)")
    c = sub.add_parser("trace-count", help="run a command with the scheduler tracepoint counted")
    c.add_argument("--out", default=None, help="append the counts (one JSON line) here")
    c.add_argument("cmd", nargs=argparse.REMAINDER, help="-- COMMAND ...")
    args = p.parse_args()
    if args.command == "trace-count":
        args.cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        if not args.cmd:
            p.error("trace-count: give the command after --")
    {"table": table, "sim": sim, "goodput": goodput, "trace-count": trace_count}[args.command](args)


if __name__ == "__main__":
    main()
