"""Issue 11 probe: an MPTCP connection (2 subflows) on two disjoint drop-tail paths against a
Reno TCP on each path, with the kernel's own algorithms, on the test bed of
tests/kernel/test_fairness.py (10 Mbit/s, 10 ms one way, 30-packet queues, delayed ACKs).

Prints one JSON line per run: MPTCP total / better TCP, per-subflow diagnostics (tcp_info's
rwnd/sndbuf-limited time, cwnd, retransmissions), the client's and server's MPTcp* counters
(nstat deltas) and ``ss -tiM`` of the client at mid-run. Needs root; wrap in
``flock /run/pathpool-kernel.lock``.

    python scripts/kernel_disjoint_probe.py --engine iperf3 --cc reno --runs 3
    python scripts/kernel_disjoint_probe.py --engine own --cc cubic --runs 5 --alone
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
from pathlib import Path

from pathpool.kernel import loader
from pathpool.kernel.testbed import FlowSpec, PathSpec, Testbed, acked_rate_bps, records

SNIFF = Path(__file__).with_name("kernel_burst_sniff.py")
DISJOINT = {"rate_mbps": 10.0, "delay_ms": 10.0, "queue_pkts": 30}


def nstat(tb: Testbed, ns: str) -> dict[str, int]:
    out = tb.ns(ns, "nstat", "-asz", check=False).stdout
    got = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith(("MPTcp", "TcpExtTCPRcvQDrop", "TcpExtTCPOFO",
                                                      "TcpExtTCPZeroWindow", "TcpExtTCPWantZero")):
            got[parts[0]] = int(parts[1])
    return got


def delta(a: dict, b: dict) -> dict:
    return {k: b[k] - a.get(k, 0) for k in b if b[k] - a.get(k, 0)}


def one_run(args, r: int) -> dict:
    flows = [FlowSpec("mp", "mptcp", args.cc, 0)]
    n_paths = 1 if args.single else 2
    if not args.alone:
        flows += [FlowSpec(f"t{k}", "tcp", "reno", k) for k in range(n_paths)]
    snap: dict = {}
    with Testbed([PathSpec(**DISJOINT) for _ in range(n_paths)], prefix=args.prefix,
                 quickack=False) as tb:
        n0 = {ns: nstat(tb, ns) for ns in (tb.ns_c, tb.ns_s)}

        def mid():
            if args.sniff:
                # Arrivals at the router from each client link (before any queue): how bursty
                # each flow's sender is.
                procs = [subprocess.Popen(
                    ["ip", "netns", "exec", tb.ns_r, sys.executable, str(SNIFF), f"c{k}", "4"],
                    stdout=subprocess.PIPE, text=True) for k in range(n_paths)]
                snap["bursts"] = [json.loads(p.communicate()[0] or "{}") for p in procs]
            snap["ss_client"] = tb.ns(tb.ns_c, "ss", "-tiMn", check=False).stdout
            snap["ss_server"] = tb.ns(tb.ns_s, "ss", "-tiMn", check=False).stdout
        t = threading.Timer(args.duration / 2 + (args.omit if args.engine == "iperf3" else 0), mid)
        t.start()
        try:
            if args.engine == "iperf3":
                out = tb.run_iperf3(flows, duration_s=args.duration, omit_s=args.omit,
                                    port=args.port)
                bps = {f.name: out[f.name]["bps"] for f in flows}
                extra = {f.name: {"retrans": out[f.name]["retransmits"], "cc": out[f.name]["cc"]}
                         for f in flows}
            else:
                raw = tb.run_flows(flows, duration_s=args.duration, port=args.port)
                rows, subs = records(tb, raw, flows)
                bps = {row["flow"]: row["goodput_bps"] for row in rows}
                extra = {}
                for f in flows:
                    fin = raw["senders"][f.name]["final"]
                    extra[f.name] = {
                        "acked_after_omit_bps": acked_rate_bps(raw, f.name, float(args.omit)),
                        "cc": raw["senders"][f.name]["cc"],
                        "subflows": [{k: x.get(k) for k in (
                            "local", "snd_cwnd", "snd_ssthresh", "total_retrans", "bytes_acked",
                            "rwnd_limited_us", "sndbuf_limited_us", "busy_time_us", "snd_wnd",
                            "ca_state", "unacked", "notsent_bytes", "total_rto")} for x in fin],
                        "mean_cwnd": [s["mean_cwnd"] for s in subs if s["flow"] == f.name],
                    }
        finally:
            t.join()
        n1 = {ns: nstat(tb, ns) for ns in (tb.ns_c, tb.ns_s)}
    res = {"run": r, "engine": args.engine, "cc": args.cc, "alone": args.alone,
           "mbps": {k: round(v / 1e6, 3) for k, v in bps.items()}, "extra": extra,
           "nstat_client": delta(n0[tb.ns_c], n1[tb.ns_c]),
           "nstat_server": delta(n0[tb.ns_s], n1[tb.ns_s])}
    if not args.alone:
        res["ratio"] = round(bps["mp"] / max(v for k, v in bps.items() if k != "mp"), 3)
    if args.ss:
        res.update(snap)
    if "bursts" in snap:
        res["bursts"] = snap["bursts"]
        if args.engine == "own":
            res["ports"] = {f.name: raw["senders"][f.name].get("local_port") for f in flows}
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", choices=("iperf3", "own"), required=True)
    ap.add_argument("--cc", default="reno")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--omit", type=int, default=3)
    ap.add_argument("--alone", action="store_true", help="MPTCP only, no TCP competitors")
    ap.add_argument("--single", action="store_true",
                    help="one path: a one-subflow MPTCP connection against one TCP")
    ap.add_argument("--sniff", action="store_true",
                    help="burst lengths of each flow's arrivals at the router (4 s at mid-run)")
    ap.add_argument("--ss", action="store_true", help="include ss -tiM at mid-run")
    ap.add_argument("--prefix", default="ppd-")
    ap.add_argument("--port", type=int, default=5601)
    args = ap.parse_args()
    # A pp_* algorithm is registered for the probe only and unregistered after, however it ends.
    loaded = args.cc.startswith("pp_")
    if loaded:
        loader.load((args.cc,), counting="bytes")
    try:
        for r in range(args.runs):
            print(json.dumps(one_run(args, r)), flush=True)
    finally:
        if loaded:
            loader.unload()


if __name__ == "__main__":
    main()
