#!/usr/bin/env python3
"""Which flows a shared drop-tail queue cuts together, on the test bed and in the simulator.

An MPTCP connection whose two subflows share one queue with a TCP flow should, uncoupled, take
about twice the TCP's rate: each subflow is cut as often as the TCP. On the kernel the two
subflows are cut together far more often than in the simulator. Two views:

    python research/engine_gap/shared_queue_blocks.py captures DIR --group 0,1
    python research/engine_gap/shared_queue_blocks.py series RESULTS --group mptcp/0,mptcp/1

`captures` reads a `bed_timing_probe.py run` directory (``c{k}.pcap``: the router's ingress from
client link k, one path each): per path, its retransmission episodes (retransmitted data packets
200 ms apart or more start a new one), how many episodes of the paths in ``--group`` (an MPTCP
connection's) fell with no other path's, and the correlation of the paths' arrivals in 5 ms
bins (two subflows reaching the queue in one block are uncorrelated with each other and
anticorrelated with the rest). `series` reads a `pathpool compare` output (``linux/`` and
``sim/`` with 100 ms ``cwnd`` series): per engine, window cuts (below 0.85 of the previous
three samples' largest, 0.5 s apart) clustered across flows within 250 ms, per 10 s of run:
the ``--group`` only, all flows, the others only, and the rest.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bed_timing_probe import PAYLOAD, SEQ, SPORT, T, read_pcap

EPISODE_GAP_S = 0.2
CLUSTER_S = 0.25
CUT = 0.85
BIN_S = 0.005


def clusters(events: dict[str, list[float]], within_s: float = CLUSTER_S) -> list[set[str]]:
    """The flows of each cluster of events: every flow's event times merged in time order, an
    event within ``within_s`` of the one before it joining that one's cluster."""
    merged = sorted((t, f) for f, ts in events.items() for t in ts)
    out: list[tuple[float, set[str]]] = []
    for t, f in merged:
        if out and t - out[-1][0] < within_s:
            out[-1] = (t, out[-1][1] | {f})
        else:
            out.append((t, {f}))
    return [s for _, s in out]


def tally(groups: list[set[str]], group: set[str], flows: set[str]) -> Counter:
    """Clusters by who is in them: ``group`` only (every one of its flows, no other), all flows,
    the others only (none of ``group``), or mixed."""
    c: Counter = Counter()
    for s in groups:
        if s == group:
            c["group only"] += 1
        elif s == flows:
            c["all"] += 1
        elif not s & group:
            c["others only"] += 1
        else:
            c["mixed"] += 1
    return c


def episodes(times: np.ndarray, gap_s: float = EPISODE_GAP_S) -> list[float]:
    """Start times of runs of events at most ``gap_s`` apart."""
    ts = np.sort(np.asarray(times, dtype=float))
    return [float(t) for i, t in enumerate(ts) if i == 0 or t - ts[i - 1] > gap_s]


def retransmissions(cap: np.ndarray) -> np.ndarray:
    """Times (ns) of the data packets in ``cap`` whose (port, sequence number) came before."""
    seen: set[tuple[int, int]] = set()
    out = []
    for r in cap[cap[:, PAYLOAD] > 0]:
        k = (int(r[SPORT]), int(r[SEQ]))
        if k in seen:
            out.append(int(r[T]))
        seen.add(k)
    return np.array(out, dtype=np.int64)


def cuts(cwnd: np.ndarray, t: np.ndarray, cut: float = CUT, apart_s: float = 0.5) -> list[float]:
    """Times where the window fell below ``cut`` of the largest of the three samples before,
    at least ``apart_s`` after the previous cut (a recovery spans several samples)."""
    out: list[float] = []
    for k in range(3, len(cwnd)):
        if cwnd[k] < cut * cwnd[k - 3:k].max() and (not out or t[k] - out[-1] > apart_s):
            out.append(float(t[k]))
    return out


def captures(d: Path, group: set[str]) -> None:
    caps = {f.stem[1:]: read_pcap(f) for f in sorted(d.glob("c[0-9]*.pcap"))}
    t0 = min(cap[:, T].min() for cap in caps.values() if len(cap))
    ev = {k: episodes((retransmissions(cap) - t0) / 1e9) for k, cap in caps.items()}
    for k, e in ev.items():
        print(f"path {k}: {len(e)} loss episodes at {np.round(e, 2).tolist()}")
    kinds = tally(clusters(ev), group, set(ev))
    print(f"episode clusters ({CLUSTER_S:g} s): " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    end = max(cap[:, T].max() for cap in caps.values() if len(cap))
    bins = np.arange(t0, end, BIN_S * 1e9)
    counts = {k: np.histogram(cap[cap[:, PAYLOAD] > 0][:, T], bins)[0] for k, cap in caps.items()}
    ks = sorted(counts)
    r = np.corrcoef([counts[k] for k in ks])
    for i in range(len(ks)):
        for j in range(i + 1, len(ks)):
            print(f"arrivals in {BIN_S * 1e3:g} ms bins, paths {ks[i]} and {ks[j]}: r = {r[i, j]:.3f}")


def series(d: Path, group: set[str]) -> None:
    import pandas as pd

    for engine in ("linux", "sim"):
        s = pd.read_parquet(d / engine / "series.parquet")
        s = s[(s.metric == "cwnd") & (s.time_s > 3)]
        total: Counter = Counter()
        seconds = 0.0
        for _, g in s.groupby("seed"):
            ev = {}
            for i, h in g.groupby("id"):
                h = h.sort_values("time_s")
                ev[str(i)] = cuts(h.value.to_numpy(), h.time_s.to_numpy())
            total += tally(clusters(ev), group, set(ev))
            seconds += float(g.time_s.max() - 3)
        print(f"{engine}: cut clusters per 10 s: " + ", ".join(
            f"{k} {10 * v / seconds:.2f}" for k, v in sorted(total.items())))


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("view", choices=["captures", "series"])
    p.add_argument("dir", type=Path)
    p.add_argument("--group", required=True, help="comma-separated: paths (captures) or series ids")
    a = p.parse_args(argv)
    group = set(a.group.split(","))
    (captures if a.view == "captures" else series)(a.dir, group)


if __name__ == "__main__":
    main()
