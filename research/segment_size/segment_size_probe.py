#!/usr/bin/env python3
"""Why a kernel MPTCP data packet carries fewer payload bytes than the simulator's 1,448.

RSF Table 2's two-subflow scenarios on the kernel give 1,190-1,405 delivered payload bytes per
new data packet (``b`` of ``two_subflow_gap.py``), the simulator 1,448 (its MSS). This probe
captures every data segment the test bed's client (the sender) puts on its path devices, with
an ``AF_PACKET`` socket in the client's namespace (offloads are off there, so a captured
segment is a wire segment), and reads per segment: the TCP payload, the TCP option bytes, the
MPTCP DSS option (its length, and its mapping: data sequence number, subflow sequence number,
data-level length) and whether it is a TCP retransmission (its end at or below the highest end
the subflow had sent). ``ss -tni`` in the client's namespace gives each socket's ``mss``
(``tcpi_snd_mss``), ``nstat`` the MPTCP counters of both ends (``MPTcpExtMPTCPRetrans``: the
sender's MPTCP-level reinjections; ``MPTcpExtDuplicateData``: data the receiver got twice).

    flock /run/pathpool-kernel.lock python research/segment_size/segment_size_probe.py run --case s1 -o OUT
    python research/segment_size/segment_size_probe.py show OUT/*.json

Cases (two 10 Mbit/s, 150 ms paths, 1000-packet drop-tail queues as RSF Table 2; kernel Reno
on every subflow and TCP, so no BPF is loaded; delays as the report's default reading):

- ``s1``: five MPTCP connections download 4 MB each, no random loss (Table 2 scenario 1).
- ``s2``: the same with 2% Bernoulli loss on data (scenario 2).
- ``pair-bulk``: one MPTCP connection (both paths) and one TCP (path 1), bulk for 30 s.
- ``pair-file``: the same two, each a 4 MB download.
- ``pair-file-rmem`` / ``pair-file-wmem``: ``pair-file`` with the receiver's ``tcp_rmem`` /
  the sender's ``tcp_wmem`` starting at 4 MB (which buffer bounds the MPTCP chunks);
  ``s1-rmem``: ``s1`` with the receiver's.

``summarize`` (pure, tested) turns the captured segments into the numbers the README quotes.
"""

from __future__ import annotations

import argparse
import collections
import itertools
import json
import re
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

#: MPTCP option kind (RFC 8684 Section 3) and DSS subtype.
MPTCP_KIND = 30
DSS_SUBTYPE = 2
#: Client-to-server data segments only (the test bed's sender is the client).
SERVER_PORT_MIN = 5201


def parse_segment(pkt: bytes) -> dict | None:
    """One IPv4/TCP packet (from its IP header) as a dict, or None if it is not TCP.

    Fields: ``src``, ``dst`` ("addr:port"), ``seq``, ``payload`` (bytes of TCP data, from the IP
    total length), ``opt`` (TCP option bytes), ``flags``, and for an MPTCP DSS option
    ``dss_len`` (its length field) and, with a mapping, ``dsn``, ``ssn``, ``dll``
    (RFC 8684 Section 3.3: data sequence number, subflow sequence number, data-level length).

    Examples
    --------
    >>> ip = bytes([0x45, 0, 0, 60]) + bytes(5) + bytes([6]) + bytes(2) + bytes([10, 0, 0, 1, 10, 0, 0, 2])
    >>> tcp = struct.pack("!HHIIBBHHH", 1000, 5201, 7, 0, 5 << 4, 0x10, 0, 0, 0)
    >>> parse_segment(ip + tcp + bytes(20))["payload"]
    20
    """
    if len(pkt) < 40 or pkt[0] >> 4 != 4 or pkt[9] != 6:
        return None
    ihl = (pkt[0] & 15) * 4
    total = struct.unpack_from("!H", pkt, 2)[0]
    sport, dport, seq = struct.unpack_from("!HHI", pkt, ihl)
    doff = (pkt[ihl + 12] >> 4) * 4
    out = {"src": f"{socket.inet_ntoa(pkt[12:16])}:{sport}", "dst": f"{socket.inet_ntoa(pkt[16:20])}:{dport}",
           "seq": seq, "payload": total - ihl - doff, "opt": doff - 20, "flags": pkt[ihl + 13]}
    i, end = ihl + 20, min(ihl + doff, len(pkt))
    while i < end:
        kind = pkt[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= end or pkt[i + 1] < 2:
            break
        n = pkt[i + 1]
        if kind == MPTCP_KIND and n >= 4 and pkt[i + 2] >> 4 == DSS_SUBTYPE:
            out["dss_len"] = n
            fl = pkt[i + 3]
            j = i + 4
            if fl & 0x01:                       # A: data ACK present, a: 8 bytes
                j += 8 if fl & 0x02 else 4
            if fl & 0x04:                       # M: mapping present, m: 8-byte DSN
                if fl & 0x08:
                    out["dsn"] = struct.unpack_from("!Q", pkt, j)[0]
                    j += 8
                else:
                    out["dsn"] = struct.unpack_from("!I", pkt, j)[0]
                    j += 4
                out["ssn"], out["dll"] = struct.unpack_from("!IH", pkt, j)
        i += n
    return out


def summarize(segs: list[dict], mss: int) -> dict:
    """Per sender direction (src>dst) and in total: data segments, TCP retransmissions (a
    segment whose end is not above the highest end sent before on its subflow), the payload
    of new segments (mean, the share below ``mss`` and their mean, the most common sizes), TCP
    option bytes, and the MPTCP mappings: how many, their mean data-level length, and how many
    new sub-MSS segments are the last segment of their mapping (ends at ssn + dll; the
    subflow's first captured data segment is taken to start a mapping, as the first data of a
    subflow does).

    ``segs`` are :func:`parse_segment` dicts in capture order, data segments only (payload > 0).

    Examples
    --------
    >>> s = [{"src": "a", "dst": "b", "seq": 0, "payload": 100, "opt": 12},
    ...      {"src": "a", "dst": "b", "seq": 100, "payload": 50, "opt": 12},
    ...      {"src": "a", "dst": "b", "seq": 100, "payload": 50, "opt": 12}]
    >>> summarize(s, 100)["all"]["new"], summarize(s, 100)["all"]["retrans"]
    (2, 1)
    """
    per: dict[str, dict] = {}
    hi: dict[str, int] = {}
    base: dict[str, int] = {}
    base_ssn: dict[str, int] = {}
    for s in segs:
        k = f"{s['src']}>{s['dst']}"
        st = per.setdefault(k, {"n": 0, "retrans": 0, "new_bytes": 0, "sizes": collections.Counter(),
                                "opt": collections.Counter(), "maps": {}, "tail_small": 0})
        st["n"] += 1
        st["opt"][s["opt"]] += 1
        if k not in base:
            base[k] = s["seq"]
        rel = (s["seq"] - base[k]) % (1 << 32)
        end = rel + s["payload"]
        if k in hi and end <= hi[k]:
            st["retrans"] += 1
            continue
        hi[k] = max(hi.get(k, 0), end)
        st["new_bytes"] += s["payload"]
        st["sizes"][s["payload"]] += 1
        if "dll" in s:
            # The subflow's first data segment starts a mapping: its ssn is relative offset 0.
            b = base_ssn.setdefault(k, (s["ssn"] - rel) % (1 << 32))
            m = st["maps"].setdefault((s["dsn"], s["ssn"], s["dll"]), [0, 0, 0])
            m[0] += 1                                         # new segments in this mapping
            m[1] = (s["ssn"] - b) % (1 << 32) + s["dll"]      # its end, relative
            m[2] = s["dll"]
            if s["payload"] < mss:
                m.append(end)
    out = {}
    tot = {"n": 0, "retrans": 0, "new_bytes": 0, "sizes": collections.Counter(), "opt": collections.Counter(),
           "maps": {}, "tail_small": 0}
    for k, st in list(per.items()) + [("all", tot)]:
        if k != "all":
            for key in ("n", "retrans", "new_bytes"):
                tot[key] += st[key]
            tot["sizes"] += st["sizes"]
            tot["opt"] += st["opt"]
            for mk, mv in st["maps"].items():
                tot["maps"][(k, *mk)] = mv
        new = st["n"] - st["retrans"]
        small = {p: c for p, c in st["sizes"].items() if p < mss}
        n_small = sum(small.values())
        maps = st["maps"].values()
        # A sub-MSS new segment at the end of its mapping: the mapping's data ran out there.
        tails = sum(1 for m in maps for e in m[3:] if e == m[1])
        out[k] = {
            "segments": st["n"], "retrans": st["retrans"], "new": new,
            "mean_new_payload": round(st["new_bytes"] / new, 1) if new else None,
            "below_mss": n_small, "share_below_mss": round(n_small / new, 4) if new else None,
            "mean_below_mss": round(sum(p * c for p, c in small.items()) / n_small, 1) if n_small else None,
            "top_sizes": st["sizes"].most_common(5), "option_bytes": st["opt"].most_common(3),
            "mappings": len(st["maps"]),
            "mean_mapping_bytes": round(sum(m[2] for m in maps) / len(st["maps"]), 1) if st["maps"] else None,
            "below_mss_at_mapping_end": tails,
        }
    return out


def sniff(seconds: float, out: Path) -> None:
    """Capture the namespace's outgoing TCP data segments to server ports for ``seconds`` (or
    until SIGTERM) and write them, with the socket's drop count, to ``out`` (JSON)."""
    import signal

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    # ETH_P_ALL: a socket for ETH_P_IP alone is not given outgoing packets (dev_queue_xmit_nit
    # only feeds the ptype_all taps).
    s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0003))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.settimeout(0.2)
    segs, end = [], time.monotonic() + seconds
    while not stop.is_set() and time.monotonic() < end:
        try:
            data, addr = s.recvfrom(128)
        except TimeoutError:
            continue
        if addr[2] != socket.PACKET_OUTGOING or addr[1] != 0x0800:
            continue
        p = parse_segment(data)
        if p and p["payload"] > 0 and int(p["dst"].rsplit(":", 1)[1]) >= SERVER_PORT_MIN:
            p["dev"] = addr[0]
            segs.append(p)
    packets, drops = struct.unpack("II", s.getsockopt(263, 6, 8))  # SOL_PACKET, PACKET_STATISTICS
    out.write_text(json.dumps({"segments": segs, "socket_packets": packets, "socket_drops": drops}))


_FIVE = [(f"conn-{i}", "mptcp", 4_000_000) for i in range(5)]
_PAIR_FILE = [("mp", "mptcp", 4_000_000), ("tcp", "tcp", 4_000_000)]
CASES = {
    "s1": {"loss": 0.0, "flows": _FIVE, "duration": 120.0},
    "s2": {"loss": 0.02, "flows": _FIVE, "duration": 120.0},
    "pair-bulk": {"loss": 0.0, "flows": [("mp", "mptcp", 0), ("tcp", "tcp", 0)], "duration": 30.0},
    "pair-file": {"loss": 0.0, "flows": _PAIR_FILE, "duration": 60.0},
    # Counterfactuals of pair-file: the sender's send buffer, or the receiver's receive
    # buffer, starting at 4 MB (Linux default: 16 kB / 128 kB, autotuned up to 4 MB / 6 MB).
    "pair-file-wmem": {"loss": 0.0, "flows": _PAIR_FILE, "duration": 60.0,
                       "sysctl": [("c", "net.ipv4.tcp_wmem=4096 4194304 33554432")]},
    "pair-file-rmem": {"loss": 0.0, "flows": _PAIR_FILE, "duration": 60.0,
                       "sysctl": [("s", "net.ipv4.tcp_rmem=4096 4194304 33554432")]},
    "s1-rmem": {"loss": 0.0, "flows": _FIVE, "duration": 120.0,
                "sysctl": [("s", "net.ipv4.tcp_rmem=4096 4194304 33554432")]},
}

_SS_MSS = re.compile(r"\bmss:(\d+)")


def _ss_poll(tb, stop: threading.Event, seen: dict) -> None:
    """Every second: each client socket's ``mss`` (``tcpi_snd_mss``) from ``ss -tni``."""
    while not stop.wait(1.0):
        out = tb.ns(tb.ns_c, "ss", "-tniH", check=False).stdout
        lines = out.splitlines()
        for a, b in itertools.pairwise(lines):
            f = a.split()
            m = _SS_MSS.search(b)
            if len(f) >= 5 and m and f[4].endswith(":" + str(SERVER_PORT_MIN)):
                seen.setdefault(f"{f[3]}>{f[4]}", set()).add(int(m.group(1)))


def _nstat(tb, ns: str) -> dict:
    out = tb.ns(ns, "nstat", "-az", check=False).stdout
    return {f[0]: int(f[1]) for f in (ln.split() for ln in out.splitlines()) if f and f[0].startswith("MPTcpExt")}


def run_case(case: str, out_dir: Path, prefix: str = "pz-") -> Path:
    """Run one case on a fresh test bed with the capture on; write OUT/CASE.json."""
    from pathpool.kernel.testbed import FlowSpec, PathSpec, Testbed

    c = CASES[case]
    paths = [PathSpec(rate_mbps=10, delay_ms=150, rev_delay_ms=0.1, loss=c["loss"], queue_pkts=1000)] * 2
    flows = [FlowSpec(name=n, kind=k, cc="reno", path=0, size_bytes=b) for n, k, b in c["flows"]]
    out_dir.mkdir(parents=True, exist_ok=True)
    cap = out_dir / f"{case}.capture.json"
    with Testbed(paths, prefix=prefix) as tb:
        for side, kv in c.get("sysctl", []):
            tb.ns(tb.ns_c if side == "c" else tb.ns_s, "sysctl", "-qw", kv)
        n0c, n0s = _nstat(tb, tb.ns_c), _nstat(tb, tb.ns_s)
        sn = subprocess.Popen(["ip", "netns", "exec", tb.ns_c, sys.executable, __file__, "sniff",
                               str(c["duration"] + 30), str(cap)])
        time.sleep(1.0)
        stop, mss = threading.Event(), {}
        th = threading.Thread(target=_ss_poll, args=(tb, stop, mss), daemon=True)
        th.start()
        try:
            raw = tb.run_flows(flows, duration_s=c["duration"])
        finally:
            stop.set()
            th.join()
            sn.terminate()
            sn.wait(timeout=30)
        n1c, n1s = _nstat(tb, tb.ns_c), _nstat(tb, tb.ns_s)
    capd = json.loads(cap.read_text())
    cap.unlink()
    senders = {}
    for name, s in raw["senders"].items():
        senders[name] = {"done_s": s.get("done_s"), "written_bytes": s["written_bytes"],
                         "final": [{k: x.get(k) for k in ("local", "remote", "data_segs_out", "bytes_sent",
                                                            "total_retrans", "bytes_retrans", "bytes_acked")}
                                   for x in s["final"]]}
    allmss = sorted({m for v in mss.values() for m in v})
    res = {"case": case, "paths": "2 x 10 Mbit/s, 150 ms, 1000 packets", "loss": c["loss"],
           "flows": c["flows"], "cc": "reno", "sysctl": c.get("sysctl", []), "mss_by_socket": {k: sorted(v) for k, v in mss.items()},
           "socket_drops": capd["socket_drops"], "socket_packets": capd["socket_packets"],
           "nstat_client": {k: n1c.get(k, 0) - n0c.get(k, 0) for k in n1c if n1c.get(k, 0) != n0c.get(k, 0)},
           "nstat_server": {k: n1s.get(k, 0) - n0s.get(k, 0) for k in n1s if n1s.get(k, 0) != n0s.get(k, 0)},
           "senders": senders, "segments": capd["segments"], "all_mss": allmss}
    p = out_dir / f"{case}.json"
    p.write_text(json.dumps(res))
    return p


def show(path: Path) -> dict:
    """The summary of one run's capture, split into the MPTCP subflows and the TCP."""
    r = json.loads(path.read_text())
    segs = r["segments"]
    mp = [s for s in segs if "dss_len" in s]
    tcp = [s for s in segs if "dss_len" not in s]
    mss_mp = max((s["payload"] for s in mp), default=0)
    mss_tcp = max((s["payload"] for s in tcp), default=0)
    return {"case": r["case"], "mss_by_socket": r["mss_by_socket"], "socket_drops": r["socket_drops"],
            "nstat_client": r["nstat_client"], "nstat_server": r["nstat_server"],
            "mptcp": summarize(mp, mss_mp)["all"] if mp else None, "mptcp_max_payload": mss_mp,
            "tcp": summarize(tcp, mss_tcp)["all"] if tcp else None, "tcp_max_payload": mss_tcp}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run cases on the kernel (root; under the kernel lock)")
    r.add_argument("--case", action="append", choices=sorted(CASES), required=True)
    r.add_argument("-o", "--out", type=Path, required=True)
    s = sub.add_parser("show", help="summarize captured runs")
    s.add_argument("files", nargs="+", type=Path)
    n = sub.add_parser("sniff", help="(internal) the capture, run in the client's namespace")
    n.add_argument("seconds", type=float)
    n.add_argument("out", type=Path)
    a = ap.parse_args(argv)
    if a.cmd == "run":
        for case in a.case:
            p = run_case(case, a.out)
            print(json.dumps(show(p)))
    elif a.cmd == "show":
        for p in a.files:
            print(json.dumps(show(p), indent=1))
    else:
        sniff(a.seconds, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
