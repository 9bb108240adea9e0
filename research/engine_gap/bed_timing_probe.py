#!/usr/bin/env python3
"""How much timing noise the test bed has, and who loses packets at its first drop-tail queue.

The simulator's `send_jitter` (uniform in [0, 0.5 ms] by default) is the hosts' timing noise,
which `pathpool run --backend linux` now has the bed's forwarders add (`PathSpec.jitter_ms`;
write `send_jitter = "0"` on every flow to see the bed's own). This probe measures the bed's
noise, packet by packet, while it runs a scenario:

    flock /run/pathpool-kernel.lock python research/engine_gap/bed_timing_probe.py run \\
        SCENARIO --seed 1 --out DIR [--max-duration S]
    python research/engine_gap/bed_timing_probe.py analyse DIR

`run` starts `pathpool run SCENARIO --backend linux` and, as soon as its namespaces are up,
tcpdump (headers only, nanosecond stamps) on the client's first link (`p0`), the router's
ingress from it (`c0`), its first delay device (`df0`) and its link towards the server (`s0`).
`analyse` prints, from those captures:

- sender: for each ACK that advances a flow's cumulative point at the client, the time until
  that flow's next data packet leaves (the host's reaction, what `send_jitter` models; only on a
  flow that always has data ready: an application-limited one waits for data, not the host);
- forwarder: how much longer than its setting `pp_delayfwd` held each packet (the TUN device
  shows every packet twice: out to the forwarder, back in);
- ACKs: data packets per ACK, per flow (the receiver's delayed-ACK rate, per subflow);
- trains: per flow, runs of data packets closer together than `TRAIN_GAP_NS` at the router's
  ingress (what leaves the sender back to back);
- drops: the data packets that reached `c0` but never left on `s0` (the first path's queue),
  per flow, with the gap to the same flow's previous packet (a window increase sends two
  back to back; the second is the one a full queue drops).

Needs root, tcpdump, and no other test bed with the same namespace names (`pp-*`) running.
"""

from __future__ import annotations

import argparse
import json
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

NS_PREFIX = "pp-"
#: Gap (ns) that ends a train of one flow's packets at the router's ingress: under a tenth of
#: a full segment's time on the fastest link the scenarios use (1500 B at 100 Mbit/s, 120 us).
TRAIN_GAP_NS = 12_000
# Columns of a parsed capture.
T, SRC, SPORT, DST, DPORT, SEQ, ACK, PAYLOAD, IPID = range(9)


def read_pcap(path: Path) -> np.ndarray:
    """One row per IPv4/TCP packet of a nanosecond pcap (Ethernet or raw IP): time (ns), the
    last byte of the source and destination address, ports, seq, ack, payload bytes, IP id."""
    b = path.read_bytes()
    if len(b) < 24:
        return np.zeros((0, 9), dtype=np.int64)
    magic, = struct.unpack("<I", b[:4])
    if magic != 0xA1B23C4D:
        raise ValueError(f"{path}: not a nanosecond pcap (magic {magic:#x})")
    link, = struct.unpack("<I", b[20:24])
    off, rows = 24, []
    while off + 16 <= len(b):
        sec, nsec, incl, _ = struct.unpack("<IIII", b[off:off + 16])
        off += 16
        p = b[off:off + incl]
        off += incl
        ip = p[14:] if link == 1 else p
        if len(ip) < 40 or ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        ihl = (ip[0] & 15) * 4
        total, ipid = struct.unpack(">HH", ip[2:6])
        tcp = ip[ihl:]
        sport, dport, seq, ack = struct.unpack(">HHII", tcp[:12])
        doff = (tcp[12] >> 4) * 4
        rows.append((sec * 10**9 + nsec, ip[15], sport, ip[19], dport, seq, ack, total - ihl - doff, ipid))
    return np.array(rows, dtype=np.int64).reshape(-1, 9)


def reaction_times(cap: np.ndarray, server_port: int = 5201) -> dict[int, np.ndarray]:
    """Per client port: ns from each ACK that advances the cumulative point to the flow's next
    data packet (at most one data packet per ACK)."""
    out = {}
    for port in sorted(set(cap[:, SPORT].tolist()) - {server_port}):
        f = cap[((cap[:, SPORT] == port) & (cap[:, PAYLOAD] > 0))
                | ((cap[:, DPORT] == port) & (cap[:, SPORT] == server_port))]
        d, since, last_ack = [], None, None
        for r in f:
            if r[SPORT] == server_port:
                if r[ACK] != last_ack:
                    since, last_ack = r[T], r[ACK]
            elif since is not None:
                d.append(r[T] - since)
                since = None
        out[port] = np.array(d, dtype=np.int64)
    return out


def hold_excess(tun: np.ndarray, delay_ns: int) -> np.ndarray:
    """ns each packet spent in the delay forwarder beyond ``delay_ns`` (its two sightings on the
    TUN device, matched by source port, sequence number and IP id)."""
    seen: dict[tuple[int, int, int], int] = {}
    out = []
    for r in tun:
        k = (int(r[SPORT]), int(r[SEQ]), int(r[IPID]))
        if k in seen:
            out.append(r[T] - seen.pop(k) - delay_ns)
        else:
            seen[k] = int(r[T])
    return np.array(out, dtype=np.int64)


def drops(into: np.ndarray, out: np.ndarray, server_port: int = 5201) -> dict[int, dict]:
    """Data packets seen on ``into`` and never on ``out`` (up to the last packet ``out`` saw),
    per source port: how many of how many, and the gap (ns) to the flow's previous packet."""
    left = {(int(r[SPORT]), int(r[SEQ]), int(r[IPID])) for r in out[out[:, PAYLOAD] > 0]}
    end = out[:, T].max() if len(out) else 0
    res = {}
    data = into[(into[:, PAYLOAD] > 0) & (into[:, T] < end)]
    for port in sorted(set(data[:, SPORT].tolist()) - {server_port}):
        f = data[data[:, SPORT] == port]
        gap = np.diff(f[:, T], prepend=f[0, T] - 10**9)
        lost = np.array([(port, int(r[SEQ]), int(r[IPID])) not in left for r in f])
        res[port] = {"packets": len(f), "dropped": int(lost.sum()), "gaps_ns": gap[lost]}
    return res


def acks_per_flow(cap: np.ndarray, server_port: int = 5201) -> dict[int, dict]:
    """Per client port, on the client's link: data packets out, ACKs in (every packet from the
    server without payload) and data packets per ACK (2 for a receiver that delays every ACK,
    1 for one that ACKs every segment)."""
    out = {}
    for port in sorted(set(cap[:, SPORT].tolist()) - {server_port}):
        data = int(((cap[:, SPORT] == port) & (cap[:, PAYLOAD] > 0)).sum())
        acks = int(((cap[:, DPORT] == port) & (cap[:, SPORT] == server_port) & (cap[:, PAYLOAD] == 0)).sum())
        out[port] = {"data": data, "acks": acks, "per_ack": data / acks if acks else float("nan")}
    return out


def trains(cap: np.ndarray, gap_ns: int, server_port: int = 5201) -> dict[int, dict]:
    """Per client port: the flow's data packets cut into trains wherever the gap to the flow's
    previous data packet is at least ``gap_ns``; mean train length (packets) and the share of
    packets that are the third or later of their train (what a drop-tail queue drops first)."""
    out = {}
    for port in sorted(set(cap[:, SPORT].tolist()) - {server_port}):
        t = cap[(cap[:, SPORT] == port) & (cap[:, PAYLOAD] > 0), T]
        if not len(t):
            continue
        starts = np.flatnonzero(np.diff(t, prepend=t[0] - gap_ns) >= gap_ns)
        lengths = np.diff(np.append(starts, len(t)))
        out[port] = {"packets": len(t), "mean": float(lengths.mean()),
                     "third_on": float((lengths - 2).clip(min=0).sum() / len(t))}
    return out


def _read_all(d: Path, kind: str) -> np.ndarray:
    """Every capture of one kind of device (``p``: the client's links, ``c``: the router's
    ingress from them, ``s``: its links towards the server), merged in time order."""
    caps = [read_pcap(f) for f in sorted(d.glob(f"{kind}[0-9]*.pcap"))]
    cap = np.concatenate(caps) if caps else np.zeros((0, 9), dtype=np.int64)
    return cap[np.argsort(cap[:, T], kind="stable")]


def _pct(x: np.ndarray, qs=(50, 90, 99, 99.9)) -> str:
    if not len(x):
        return "none"
    return ", ".join(f"p{q:g} {np.percentile(x, q) / 1e3:.1f} us" for q in qs)


def analyse(d: Path) -> None:
    meta = json.loads((d / "probe.json").read_text())
    client = _read_all(d, "p")
    for port, v in reaction_times(client).items():
        print(f"sender, port {port}: {len(v)} ACK -> data: {_pct(v)}; over 0.5 ms: {(v > 500_000).mean():.4f}")
    for port, r in acks_per_flow(client).items():
        print(f"acks, port {port}: {r['data']} data packets, {r['acks']} ACKs, {r['per_ack']:.2f} per ACK")
    into = _read_all(d, "c")
    for port, r in trains(into, TRAIN_GAP_NS).items():
        print(f"trains (gap < {TRAIN_GAP_NS / 1e3:g} us), port {port}: mean {r['mean']:.2f} packets; "
              f"third or later of a train {r['third_on']:.1%}")
    h = hold_excess(read_pcap(d / "df0.pcap"), int(meta["delay_ms"] * 1e6))
    print(f"forwarder df0, {len(h)} packets held beyond {meta['delay_ms']:g} ms: {_pct(h)}; max {h.max() / 1e3:.0f} us"
          if len(h) else "forwarder df0: no packets")
    for port, r in drops(into, _read_all(d, "s")).items():
        g = r["gaps_ns"]
        close = float((g < 1_000_000).mean()) if len(g) else float("nan")
        print(f"drops, port {port}: {r['dropped']} of {r['packets']}; {close:.0%} within 1 ms of the flow's "
              "previous packet")


def _netns() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], check=False, capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _devices(ns: str) -> list[str]:
    out = subprocess.run(["ip", "netns", "exec", ns, "ip", "-br", "link"], check=False, capture_output=True,
                         text=True).stdout
    return [line.split()[0].split("@")[0] for line in out.splitlines() if line.strip()]


def _up(ns: str, dev: str) -> bool:
    out = subprocess.run(["ip", "netns", "exec", ns, "ip", "link", "show", dev], check=False, capture_output=True,
                         text=True)
    # A veth is "state UP"; a TUN device (the delay forwarder's) "state UNKNOWN" once up.
    return out.returncode == 0 and ("state UP" in out.stdout or "state UNKNOWN" in out.stdout)


def run(a: argparse.Namespace) -> None:
    from pathpool.kernel.mapping import map_scenario

    plan = map_scenario(a.scenario, max_duration_s=a.max_duration)
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / "probe.json").write_text(json.dumps({"scenario": str(a.scenario), "seed": a.seed,
                                                  "delay_ms": plan.paths[0].delay_ms}))
    if any(n.startswith(NS_PREFIX) for n in _netns()):
        raise SystemExit("a test bed is up already (namespaces pp-*): stop it first")
    bed = subprocess.Popen([str(Path(sys.executable).parent / "pathpool"), "run", str(a.scenario), "--backend", "linux",
                            "--seeds", str(a.seed), "--max-duration", str(a.max_duration), "-q", "--no-progress",
                            "-o", str(a.out / "run")])
    dumps = []
    try:
        r, c = NS_PREFIX + "r", NS_PREFIX + "c"
        deadline = time.monotonic() + 60
        while not (set(_netns()) >= {r, c} and _up(r, "df0") and _up(c, "p0")):
            if bed.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the test bed did not come up")
            time.sleep(0.01)
        router = [dev for dev in _devices(r) if dev[0] in "cs" and dev[1:].isdigit()] + ["df0"]
        for ns, devs in ((r, router), (c, [f"p{k}" for k in range(len(plan.paths))])):
            for dev in devs:
                dumps.append(subprocess.Popen(
                    ["ip", "netns", "exec", ns, "tcpdump", "-i", dev, "-s", "96", "-U", "-n",
                     "--time-stamp-precision=nano", "-w", str(a.out / f"{dev}.pcap"), "tcp"],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        if bed.wait() != 0:
            raise SystemExit(f"pathpool run failed ({bed.returncode})")
    finally:
        for p in [bed, *dumps]:
            if p.poll() is None:
                p.terminate()
        for p in [bed, *dumps]:
            p.wait()
    analyse(a.out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run a scenario on the bed with captures, then analyse")
    r.add_argument("scenario", type=Path)
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--max-duration", type=float, default=130.0, help="the run's cap, s")
    r.add_argument("--out", type=Path, required=True)
    r.set_defaults(func=run)
    n = sub.add_parser("analyse", help="analyse the captures of a run")
    n.add_argument("out", type=Path)
    n.set_defaults(func=lambda a: analyse(a.out))
    a = ap.parse_args(argv)
    a.func(a)


if __name__ == "__main__":
    main()
