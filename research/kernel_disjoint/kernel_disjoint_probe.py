"""Probe: an MPTCP connection (2 subflows) on two disjoint drop-tail paths against a
Reno TCP on each path, with the kernel's own algorithms, on the test bed of
tests/kernel/test_fairness.py (10 Mbit/s, 10 ms one way, 30-packet queues, delayed ACKs).

Prints one JSON line per run: MPTCP total / better TCP, per-subflow diagnostics (tcp_info's
rwnd/sndbuf-limited time, cwnd, retransmissions), the client's and server's MPTcp* counters
(nstat deltas) and ``ss -tiM`` of the client at mid-run. Needs root; wrap in
``flock /run/pathpool-kernel.lock``.

    python research/kernel_disjoint/kernel_disjoint_probe.py --engine iperf3 --cc reno --runs 3
    python research/kernel_disjoint/kernel_disjoint_probe.py --engine own --cc cubic --runs 5 --alone
    python research/kernel_disjoint/kernel_disjoint_probe.py --engine iperf3 --cc reno --cwnd --wmem "4096 4194304 33554432"

``--cwnd`` attaches research/kernel_disjoint/cwnd_probe (a tracepoint program, built here on first use): per
sending socket, the share of ACKs in state Open on which the socket was not cwnd-limited in
the sense of Linux's tcp_is_cwnd_limited(), i.e. on which Reno/LIA grow nothing. ``--wmem``,
``--offload``, ``--client-qdisc`` and ``--rev-delay-only`` change one thing of the bed each
(the hypotheses a, b and c for its shortfall).
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
PROBE_SRC = Path(__file__).with_name("cwnd_probe")
PROBE_DIR = Path(__file__).resolve().parents[2] / "kernel" / "build" / "cwnd_probe"
DISJOINT = {"rate_mbps": 10.0, "delay_ms": 10.0, "queue_pkts": 30}
#: test_fairness.py's shared bottleneck: both paths through one 20 Mbit/s link, 66 packets.
SHARED = {"rate_mbps": 20.0, "delay_ms": 20.0, "queue_pkts": 66}


def build_probe() -> tuple[Path, Path]:
    """Compiles the cwnd-limited probe (BPF object + loader) next to the kernel's build."""
    PROBE_DIR.mkdir(parents=True, exist_ok=True)
    vmlinux = PROBE_DIR / "vmlinux.h"
    if not vmlinux.exists():
        with open(vmlinux, "w") as f:
            subprocess.run(["bpftool", "btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format",
                            "c"], stdout=f, check=True)
    obj, exe = PROBE_DIR / "pp_cwndprobe.bpf.o", PROBE_DIR / "pp_cwndprobe"
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-mcpu=v3", "-D__TARGET_ARCH_x86",
                    "-Wall", "-Werror", f"-I{PROBE_DIR}", "-c",
                    str(PROBE_SRC / "pp_cwndprobe.bpf.c"), "-o", str(obj)], check=True)
    subprocess.run(["cc", "-O2", "-Wall", "-Wextra", "-Werror", str(PROBE_SRC / "pp_cwndprobe.c"),
                    "-o", str(exe), "-lbpf", "-lelf", "-lz"], check=True)
    return obj, exe


class CwndProbe:
    """The probe's loader for the length of one run; ``stop()`` returns its per-socket rows."""

    def __init__(self, built: tuple[Path, Path], port_lo: int, port_hi: int):
        obj, exe = built
        self.proc = subprocess.Popen([str(exe), str(obj), str(port_lo), str(port_hi)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            self.proc.kill()
            raise RuntimeError("cwnd probe did not load")

    def stop(self) -> list[dict]:
        out, _ = self.proc.communicate(input="", timeout=30)
        return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def summarise_probe(rows: list[dict], flows: list[FlowSpec], port: int) -> list[dict]:
    """One row per data-carrying socket: flow, path address, not-cwnd-limited shares."""
    out = []
    for x in rows:
        k = x["dport"] - port
        if not 0 <= k < len(flows) or x["acked_bytes"] < 1_000_000:
            continue  # iperf3's control connection, or another bed's socket
        acks = max(x["acks"], 1)  # ACKs in state Open
        out.append({
            "flow": flows[k].name, "mptcp": x["mptcp"], "saddr": x["saddr"], "mss": x["mss"],
            "acks": x["acks"],
            "segs_per_ack": round(x["acked_bytes"] / max(x["mss"], 1) / acks, 3),
            "not_limited": round(x["not_limited"] / acks, 4),
            "not_limited_ss": x["not_limited_ss"],
            "not_limited_qempty": round(x["not_limited_qempty"] / acks, 4),
            "not_limited_qfull": round(x["not_limited_qfull"] / acks, 4),
            "acked_not_limited": round(x["acked_bytes_not_limited"] / max(x["acked_bytes"], 1), 4),
            "qempty": round(x["qempty_acks"] / acks, 4),
            "mean_cwnd": round(x["cwnd_sum"] / acks, 2),
            "mean_inflight": round(x["inflight_sum"] / acks, 2),
            "mean_srtt_ms": round(x["srtt_sum"] / acks / 1000, 2),
            "recoveries": x["recoveries"], "losses": x["losses"],
            "total_retrans": x["total_retrans"], "reordering": x["reordering"],
            "dsack_dups": x["dsack_dups"], "reord_seen": x["reord_seen"],
            # Of all ACKs that advance snd_una (any state): within 100 us of the previous one,
            # and covering more than 2 segments.
            "close_acks": round(x["close_acks"] / max(sum(x["state_acks"]), 1), 4),
            "stretch_acks": round(x["stretch_acks"] / max(sum(x["state_acks"]), 1), 4),
            # Share of the acknowledged bytes by state: Open, Disorder, CWR, Recovery, Loss.
            "acked_by_state": [round(v / max(sum(x["state_acked"]), 1), 4)
                               for v in x["state_acked"]],
        })
    return sorted(out, key=lambda r: (r["flow"], r["saddr"]))


def adjust_bed(tb: Testbed, args, n_paths: int) -> None:
    """Applies the one change of the bed a hypothesis run asks for (client side only)."""
    if args.swap:
        tb.ns(tb.ns_c, "ip", "mptcp", "endpoint", "flush")
        tb.ns(tb.ns_c, "ip", "mptcp", "endpoint", "add", tb.client_addr(0), "dev", "p0", "subflow")
    if args.wmem:
        tb.ns(tb.ns_c, "sysctl", "-qw", f"net.ipv4.tcp_wmem={args.wmem}")
    for k in range(n_paths):
        if args.offload == "on":
            tb.ns(tb.ns_c, "ethtool", "-K", f"p{k}", "tso", "on", "gso", "on")
        if args.client_qdisc:
            tb.ns(tb.ns_c, "tc", "qdisc", "replace", "dev", f"p{k}", "root", args.client_qdisc)


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
    # --swap: the MPTCP connection starts on path 1 and joins path 0 (which path carries the
    # MP_JOIN subflow, to tell a path's effect from the joined subflow's).
    flows = [FlowSpec("mp", "mptcp", args.cc, 1 if args.swap else 0)]
    n_paths = 1 if args.single else 2
    if args.shared:
        flows.append(FlowSpec("t0", "tcp", "reno", 0))
    elif not args.alone:
        flows += [FlowSpec(f"t{k}", "tcp", "reno", k) for k in range(n_paths)]
    snap: dict = {}
    spec = dict(DISJOINT)
    if args.random_loss:
        # 1% independent loss and queues that never fill (tests/kernel/test_fairness.py's
        # DISJOINT_RANDOM): no overflow, so no drop-tail phase effects.
        spec.update(queue_pkts=200, loss=0.01)
    if args.rev_delay_only:
        # The whole RTT on the ACK path: data packets reach the bottleneck without passing a
        # delay forwarder (hypothesis c: the forwarder treats subflows differently).
        spec.update(delay_ms=0.0, rev_delay_ms=2 * DISJOINT["delay_ms"])
    if args.shared:
        spec = dict(SHARED)
    with Testbed([PathSpec(**spec) for _ in range(n_paths)], prefix=args.prefix,
                 quickack=False, shared_bottleneck=args.shared) as tb:
        adjust_bed(tb, args, n_paths)
        n0 = {ns: nstat(tb, ns) for ns in (tb.ns_c, tb.ns_s)}
        probe = CwndProbe(args.built, args.port, args.port + len(flows) - 1) if args.cwnd else None

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
            probe_rows = probe.stop() if probe else []
        n1 = {ns: nstat(tb, ns) for ns in (tb.ns_c, tb.ns_s)}
    res = {"run": r, "engine": args.engine, "cc": args.cc, "alone": args.alone,
           "mbps": {k: round(v / 1e6, 3) for k, v in bps.items()}, "extra": extra,
           "nstat_client": delta(n0[tb.ns_c], n1[tb.ns_c]),
           "nstat_server": delta(n0[tb.ns_s], n1[tb.ns_s])}
    if not args.alone:
        res["ratio"] = round(bps["mp"] / max(v for k, v in bps.items() if k != "mp"), 3)
    if args.cwnd:
        res["cwnd_probe"] = summarise_probe(probe_rows, flows, args.port)
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
    ap.add_argument("--cwnd", action="store_true",
                    help="count ACKs on which each sending socket is not cwnd-limited (needs "
                         "--engine iperf3: sockets are told apart by server port)")
    ap.add_argument("--wmem", help="client namespace net.ipv4.tcp_wmem, e.g. '4096 4194304 "
                                   "33554432' (hypothesis a: the msk send buffer)")
    ap.add_argument("--offload", choices=("off", "on"), default="off",
                    help="TSO/GSO on the client's links (hypothesis b: burst sizes)")
    ap.add_argument("--client-qdisc", help="qdisc on the client's links, e.g. fq (pacing: "
                                           "hypothesis b)")
    ap.add_argument("--rev-delay-only", action="store_true",
                    help="forward delay 0, the 20 ms RTT on the ACK path (hypothesis c)")
    ap.add_argument("--shared", action="store_true",
                    help="test_fairness.py's shared bottleneck instead: MPTCP (2 subflows) "
                         "and one TCP through one 20 Mbit/s link")
    ap.add_argument("--random-loss", action="store_true",
                    help="1%% random loss, 200-packet queues (losses independent of the queue)")
    ap.add_argument("--swap", action="store_true",
                    help="MPTCP's first subflow on path 1, the joined one on path 0")
    ap.add_argument("--prefix", default="ppd-")
    ap.add_argument("--port", type=int, default=5601)
    args = ap.parse_args()
    if args.cwnd and args.engine != "iperf3":
        ap.error("--cwnd needs --engine iperf3")
    args.built = build_probe() if args.cwnd else None
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
