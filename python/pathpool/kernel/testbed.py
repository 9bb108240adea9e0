"""A network-namespace test bed: client, router and server with K emulated paths.

Topology (addresses only inside namespaces this module creates)::

    client --p{k}/c{k} 10.77.k.0/24--> router --s{j}/r{j} 10.78.j.0/24--> server (10.79.0.1 on lo)

Path k has its own client link; on the router side it has its own link to the server
(``j = k``), or every path shares link 0 (``shared_bottleneck``), or path k leaves through
router link ``egress[k]`` (paths with the same entry share that link's rate limit and queue).
An :class:`AccessLink` is a rate limit and queue that some paths cross *before* they split
(Khalili's shared access): once routed, those paths' data is redirected into one IFB device
shaped by ``tbf``, then each packet goes on along its own path. Per path:

- rate: ``tbf`` on the router's egress towards the server (the data direction), with a
  drop-tail limit of ``queue_pkts`` full-size packets, both counting IP packets as the
  simulator's links do (a size table takes off the Ethernet header); the ACK direction is not
  rate limited;
- one-way delay per direction: a TUN device in the router served by ``pp_delayfwd``
  (no netem in this kernel); the router's policy rules send the path's traffic into it and
  route what comes back out onward;
- loss: nftables ``numgen random mod 10000 < p*10000 drop`` on the router's forward hook for
  packets arriving from the client link (Bernoulli, per packet; TSO/GSO/GRO are off on every
  veth so one drop is one MSS).

MPTCP: the client has one ``subflow`` endpoint per extra path and a policy rule per source
address, so subflow k leaves through path k.

Mapping a simulator scenario (``pathpool run SCENARIO --backend linux``): give one
:class:`PathSpec` per route of the MPTCP flow (bottleneck rate, sum of one-way propagation
delays per direction, loss probability, buffer in packets), ``shared_bottleneck=True`` when
the routes meet at one bottleneck link, then :func:`run_flows` with one :class:`FlowSpec` per
flow; :func:`records` returns rows in the simulator's FlowRecord/SubflowRecord schema.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Self

from pathpool.kernel.loader import FROM_SOURCE, RUNTIME_DIR, KernelError, LeftoverWarning

DELAYFWD = RUNTIME_DIR / "pp_delayfwd"
SERVER_ADDR = "10.79.0.1"
#: Paths of one test bed (Linux MPTCP's subflow limit; pp_* couple up to 8).
MAX_TESTBED_PATHS = 8
#: Largest :attr:`PathSpec.jitter_ms` (the forwarder holds a second of traffic at most).
MAX_JITTER_MS = 1000.0
#: ``pp_delayfwd``'s ring (its default), written out when a jitter follows it on the command line.
FWD_QUEUE_PKTS = 4096


@dataclasses.dataclass
class PathSpec:
    """One emulated path.

    Attributes
    ----------
    rate_mbps : float
        Bottleneck rate in the data direction (client to server), Mbit/s; 0 = unlimited.
    delay_ms : float
        One-way delay client to server, ms.
    rev_delay_ms : float or None
        One-way delay server to client, ms (None: same as ``delay_ms``).
    loss : float
        Bernoulli loss probability of data packets, in [0, 1).
    queue_pkts : int
        Drop-tail buffer of the bottleneck, full-size packets.
    jitter_ms : float
        Hosts' timing noise, ms, as the simulator's ``send_jitter``: each data packet is held a
        further random time drawn uniformly from [0, jitter_ms), in order, by the path's
        data-direction forwarder, before the path's queue. On a path behind an
        :class:`AccessLink`, whose queue comes before that forwarder, the packets towards the
        client (the ACKs) are held instead, which delays the data each of them releases alike.
        0 (default): the hosts' own timing only, tens of microseconds.
    """

    rate_mbps: float = 10.0
    delay_ms: float = 10.0
    rev_delay_ms: float | None = None
    loss: float = 0.0
    queue_pkts: int = 100
    jitter_ms: float = 0.0

    def describe(self) -> dict:
        """The fields as a dict; ``jitter_ms`` only when set, so that a plan without it
        describes (and hashes) as before it existed (kernel cache keys)."""
        d = dataclasses.asdict(self)
        if self.jitter_ms == 0:
            d.pop("jitter_ms")
        return d

    def validate(self, where: str) -> None:
        if self.rate_mbps < 0:
            raise ValueError(f"{where}.rate_mbps = {self.rate_mbps}: must be >= 0")
        if self.delay_ms < 0 or (self.rev_delay_ms is not None and self.rev_delay_ms < 0):
            raise ValueError(f"{where}: delays must be >= 0 ms")
        if not 0.0 <= self.loss < 1.0:
            raise ValueError(f"{where}.loss = {self.loss}: must be in [0, 1)")
        if self.queue_pkts < 1:
            raise ValueError(f"{where}.queue_pkts = {self.queue_pkts}: must be >= 1")
        if not 0.0 <= self.jitter_ms <= MAX_JITTER_MS:
            raise ValueError(f"{where}.jitter_ms = {self.jitter_ms}: must be in [0, {MAX_JITTER_MS:g}] ms")


#: ``net.mptcp.syn_retrans_before_tcp_fallback`` in the client namespace: the most SYN
#: retransmissions the setting allows (a u8), so that a connection never drops MP_CAPABLE.
SYN_RETRANS_BEFORE_FALLBACK = 255

#: Where the test bed queues an access link's packets, recorded in every plan that has one (and
#: so in its kernel cache key): after the router's IP receive. Runs made when the queue sat at
#: the router's ingress, where TCP small queues kept each socket's packets in it to about two
#: (:meth:`Testbed._access`), have keys without it and are never reused.
ACCESS_QUEUED = "after-ip-receive"

#: What a link's rate and drop-tail limit count: IP packets, as the simulator's links do (a full
#: segment is 1500 bytes). ``tbf`` counts ``qdisc_pkt_len``, which on the router's veth links is
#: the Ethernet frame (14 bytes more: 0.9% less payload rate for the same setting); a size table
#: (``stab overhead -14``) takes the header off. Plans record it, so the runs made while tbf
#: counted frames have other cache keys and are never reused.
LINK_RATE = "ip-packets"
IP_MTU_BYTES = 1500
ETH_HEADER_BYTES = 14


@dataclasses.dataclass
class AccessLink:
    """A shared first hop: the data of ``paths`` crosses one ``tbf`` of ``rate_mbps`` with a
    drop-tail limit of ``queue_pkts`` packets before the paths split (IFB, after the router's
    IP receive and before each path's delay; no delay of its own)."""

    rate_mbps: float
    queue_pkts: int
    paths: tuple[int, ...]


@dataclasses.dataclass
class FlowSpec:
    """One transfer: ``kind`` "mptcp" (all paths) or "tcp" (on ``path``), with algorithm ``cc``;
    ``size_bytes`` > 0 makes it a download of that many bytes (0: bulk for the whole run).
    ``start_s``: when it connects, ``stop_s``: when it stops writing and closes (None: at the
    run's end), both seconds on the run's clock (:meth:`Testbed.run_flows`)."""

    name: str
    kind: str = "mptcp"
    cc: str = "pp_lia"
    path: int = 0
    size_bytes: int = 0
    start_s: float = 0.0
    stop_s: float | None = None

    @property
    def timed(self) -> bool:
        """Starts after the run's start or stops before its end."""
        return self.start_s != 0 or self.stop_s is not None

    def describe(self) -> dict:
        """The fields as a dict; ``start_s``/``stop_s`` only when not the defaults, so that a
        plan whose flows all run from start to end describes (and hashes) as before they
        existed (kernel cache keys, :meth:`pathpool.reproduce.kernel.KernelJob.key`)."""
        d = dataclasses.asdict(self)
        if self.start_s == 0:
            d.pop("start_s")
        if self.stop_s is None:
            d.pop("stop_s")
        return d


#: ``tc`` size table under a qdisc on an Ethernet device: its rate and limit count IP lengths.
_IP_LENGTHS = ("stab", "overhead", str(-ETH_HEADER_BYTES), "linklayer", "ethernet")


def _tbf(rate_mbps: float, queue_pkts: int, ip_lengths: bool) -> list[str]:
    """``tc qdisc`` arguments after ``root`` for a drop-tail ``tbf`` of ``rate_mbps`` holding
    ``queue_pkts`` full IP packets, with a bucket of about 1 ms of data (two packets at least);
    ``ip_lengths``: the device's packets carry an Ethernet header, which the size table leaves
    out."""
    burst = max(2 * IP_MTU_BYTES, int(rate_mbps * 1e6 / 8 / 1000))
    return [*(_IP_LENGTHS if ip_lengths else ()), "tbf", "rate", f"{rate_mbps}mbit", "burst", str(burst),
            "limit", str(queue_pkts * IP_MTU_BYTES)]


def _run(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise KernelError(f"`{' '.join(cmd)}` failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


class Testbed:
    """The namespaces and emulation of one test bed; use as a context manager (always torn down).

    Parameters
    ----------
    paths
        One :class:`PathSpec` per path (K = len(paths)).
    shared_bottleneck
        Route every path through router link 0, whose rate/queue are those of ``paths[0]``.
    prefix
        Namespace name prefix; the namespaces are ``{prefix}c``, ``{prefix}r``, ``{prefix}s``.
    mptcp_paths
        Paths ``0..mptcp_paths-1`` carry an MPTCP connection's subflows (an MPTCP endpoint per
        extra path); the others only carry TCP flows. Default: every path.
    quickack
        The receiver (server) acknowledges every segment (route attribute ``quickack 1``), as
        the simulator does by default (``delayed_ack = false``). The pp_* controls count one
        window step per ACK (v0.95, pathpool-cc), so with delayed ACKs their growth rate per
        RTT depends on how often the receiver ACKs, and a Linux MPTCP receiver ACKs more often
        than a TCP one (measured 1.0-1.6 vs 1.8 segments per ACK): that alone shifts the
        MPTCP/TCP share. False: the kernel's delayed ACKs.
    egress
        Router link of each path (default: ``k``, or 0 for every path with
        ``shared_bottleneck``); a link's rate and queue are those of the first path on it, and
        every path on it must give the same.
    access
        Shared first hops (:class:`AccessLink`); a path crosses at most one.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, paths: list[PathSpec], shared_bottleneck: bool = False, prefix: str = "pp-",
                 mptcp_paths: int | None = None, quickack: bool = True,
                 egress: list[int] | None = None, access: tuple[AccessLink, ...] | list[AccessLink] = ()):
        if not paths:
            raise ValueError("a test bed needs at least one path")
        if len(paths) > MAX_TESTBED_PATHS:
            raise ValueError(f"{len(paths)} paths: at most {MAX_TESTBED_PATHS} (Linux MPTCP's subflow "
                             f"limit; pp_* couple up to {MAX_TESTBED_PATHS})")
        for k, p in enumerate(paths):
            p.validate(f"paths[{k}]")
        self.paths = paths
        self.mptcp_paths = len(paths) if mptcp_paths is None else mptcp_paths
        if not 0 <= self.mptcp_paths <= len(paths):
            raise ValueError(f"mptcp_paths = {mptcp_paths}: must be in 0..{len(paths)}")
        self.shared = shared_bottleneck
        K = len(paths)
        if egress is not None and shared_bottleneck:
            raise ValueError("give egress or shared_bottleneck, not both")
        self.egress = list(egress) if egress is not None else [0 if shared_bottleneck else k for k in range(K)]
        if len(self.egress) != K or not all(0 <= j < K for j in self.egress):
            raise ValueError(f"egress = {egress}: one router link in 0..{K - 1} per path")
        for k, j in enumerate(self.egress):
            first = self.link_spec(j)
            if (paths[k].rate_mbps, paths[k].queue_pkts) != (first.rate_mbps, first.queue_pkts):
                raise ValueError(f"paths[{k}]: router link {j} is shared, its rate and queue must be "
                                 "those of the link's first path")
        self.access = list(access)
        self._clsact: set[str] = set()
        seen: set[int] = set()
        for i, a in enumerate(self.access):
            if a.rate_mbps <= 0 or a.queue_pkts < 1 or not a.paths:
                raise ValueError(f"access[{i}]: rate > 0, queue >= 1 packet and at least one path")
            if len({paths[k].delay_ms > 0 for k in a.paths if 0 <= k < K}) > 1:
                raise ValueError(f"access[{i}].paths = {a.paths}: all with a delay or all without (the "
                                 "access counts packets from the delay devices without a link-layer header)")
            for k in a.paths:
                if not 0 <= k < K or k in seen:
                    raise ValueError(f"access[{i}].paths = {a.paths}: paths in 0..{K - 1}, each in one "
                                     "access link at most")
                seen.add(k)
        self.quickack = quickack
        self.prefix = prefix
        self.ns_c, self.ns_r, self.ns_s = f"{prefix}c", f"{prefix}r", f"{prefix}s"
        self.fwd_procs: list[subprocess.Popen] = []
        self.created: list[str] = []   # only these are deleted by down()

    # -------------------------------------------------------------- helpers
    def ns(self, ns: str, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        return _run(["ip", "netns", "exec", ns, *cmd], check=check)

    def client_addr(self, k: int) -> str:
        return f"10.77.{k}.1"

    def _link(self, k: int) -> int:
        return self.egress[k]

    def link_spec(self, j: int) -> PathSpec:
        """The path whose rate and queue router link ``j`` has (the first path on it)."""
        return self.paths[self.egress.index(j)]

    # -------------------------------------------------------------- up/down
    def __enter__(self) -> Self:
        try:
            self.up()
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.down()

    def check_free(self) -> None:
        """Raise :class:`TestbedBusy` (one line, naming ``pathpool testbed down``) if a namespace
        of this test bed exists already."""
        taken = [n for n in (self.ns_c, self.ns_r, self.ns_s) if n in _namespaces()]
        if taken:
            raise TestbedBusy(f"namespace {taken[0]} exists: a test bed with prefix "
                              f"{self.prefix!r} is up (or was left by a process that could not "
                              f"tear it down); end it with `pathpool testbed down --prefix "
                              f"{self.prefix}`")

    def up(self) -> None:
        """Create namespaces, links, emulation and MPTCP endpoints."""
        if os.geteuid() != 0:
            raise KernelError("the test bed needs root (network namespaces, tc, nftables)")
        if not DELAYFWD.exists():
            raise KernelError(f"{DELAYFWD} missing: " + ("run `make -C kernel runtime`" if FROM_SOURCE
                              else "this installation has no prebuilt kernel part"))
        self.check_free()
        for n in (self.ns_c, self.ns_r, self.ns_s):
            _run(["ip", "netns", "add", n])
            self.created.append(n)
        C, R, S = self.ns_c, self.ns_r, self.ns_s
        K = len(self.paths)
        links = sorted({self._link(k) for k in range(K)})
        for k in range(K):
            _run(["ip", "link", "add", f"p{k}", "netns", C, "type", "veth", "peer", "name", f"c{k}",
                  "netns", R])
        for j in links:
            _run(["ip", "link", "add", f"s{j}", "netns", R, "type", "veth", "peer", "name", f"r{j}",
                  "netns", S])
        for n in (C, R, S):
            self.ns(n, "ip", "link", "set", "lo", "up")
            self.ns(n, "sysctl", "-qw", "net.mptcp.enabled=1")
        # Linux (6.12 on, net/mptcp/ctrl.c mptcp_active_detect_blackhole) sends a connection's
        # third SYN without MP_CAPABLE after two timeouts, and the connection is then plain
        # TCP: a scenario's MPTCP flow whose SYNs meet a full drop-tail queue twice would not be
        # one. The bed keeps asking for MPTCP (the simulator has no such fallback); kernels
        # without the setting have no fallback either.
        self.ns(C, "sysctl", "-qw", f"net.mptcp.syn_retrans_before_tcp_fallback={SYN_RETRANS_BEFORE_FALLBACK}",
                check=False)
        self.ns(R, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        for key in ("all", "default"):
            self.ns(R, "sysctl", "-qw", f"net.ipv4.conf.{key}.rp_filter=0")
        for k in range(K):
            self._addr(C, f"p{k}", f"10.77.{k}.1/24")
            self._addr(R, f"c{k}", f"10.77.{k}.2/24")
        for j in links:
            self._addr(R, f"s{j}", f"10.78.{j}.1/24")
            self._addr(S, f"r{j}", f"10.78.{j}.2/24")
        self.ns(S, "ip", "addr", "add", f"{SERVER_ADDR}/32", "dev", "lo")
        # Client: path k's source address leaves through p{k}.
        self.ns(C, "ip", "route", "add", "default", "via", "10.77.0.2", "dev", "p0")
        for k in range(K):
            self.ns(C, "ip", "rule", "add", "from", self.client_addr(k), "table", str(100 + k),
                    "priority", str(100 + k))
            self.ns(C, "ip", "route", "add", "default", "via", f"10.77.{k}.2", "dev", f"p{k}",
                    "table", str(100 + k))
        # Server: replies to path k go back over its link.
        for k in range(K):
            j = self._link(k)
            self.ns(S, "ip", "route", "add", f"10.77.{k}.0/24", "via", f"10.78.{j}.1", "dev", f"r{j}",
                    *(["quickack", "1"] if self.quickack else []))
        self.ns(R, "ip", "route", "add", f"{SERVER_ADDR}/32", "via", "10.78.0.2", "dev", "s0")
        for k, p in enumerate(self.paths):
            self._router_path(k, p)
        for j in links:
            p = self.link_spec(j)
            if p.rate_mbps > 0:
                self.ns(R, "tc", "qdisc", "replace", "dev", f"s{j}", "root",
                        *_tbf(p.rate_mbps, p.queue_pkts, ip_lengths=True))
        self._loss()
        devs_r = [f"c{k}" for k in range(K)] + [f"s{j}" for j in links]
        for i, a in enumerate(self.access):
            devs_r.append(self._access(i, a))
        # Offloads off: one drop must be one MSS, and the queue must count real packets.
        for n, devs in ((C, [f"p{k}" for k in range(K)]),
                        (R, devs_r),
                        (S, [f"r{j}" for j in links])):
            for d in devs:
                self.ns(n, "ethtool", "-K", d, "tso", "off", "gso", "off", "gro", "off", check=False)
                self.ns(n, "ip", "link", "set", d, "up")
        # MPTCP: one subflow endpoint per extra path.
        self.ns(C, "ip", "mptcp", "limits", "set", "subflows", str(K), "add_addr_accepted", str(K))
        self.ns(S, "ip", "mptcp", "limits", "set", "subflows", str(K), "add_addr_accepted", str(K))
        for k in range(1, self.mptcp_paths):
            self.ns(C, "ip", "mptcp", "endpoint", "add", self.client_addr(k), "dev", f"p{k}",
                    "subflow")

    def _access(self, i: int, a: AccessLink) -> str:
        """Shared first hop ``i``: an IFB device ``ia{i}`` shaped by tbf, fed by a redirect of
        the data of its paths where the router sends it on: the egress of path k's delay
        device (``df{k}``), or of its router link for a path without delay (data from path k's
        client subnet only). IFB hands each packet back to that device's egress afterwards, so
        the access's queue comes before the path's delay and link, as in the scenario.

        The queue must come after the router's IP receive: ``ip_rcv_core`` (net/ipv4/ip_input.c,
        6.18) orphans a packet from the socket that sent it. Queued before that (a redirect at
        the client link's ingress), every queued packet stays charged to its sender's socket,
        and TCP small queues (``tcp_small_queue_check``, net/ipv4/tcp_output.c) keep about two
        packets of each socket in the queue: a drop-tail queue that never overflows and shares
        its link socket by socket, which no queue on another host does."""
        R, dev = self.ns_r, f"ia{i}"
        self.ns(R, "ip", "link", "add", dev, "type", "ifb")
        # Redirected from a delay device (TUN: no link-layer header) a packet is counted as its IP
        # length; from a router link (veth) with its Ethernet header, which the size table takes
        # off. The test bed refuses an access whose paths mix the two (__init__).
        undelayed = self.paths[a.paths[0]].delay_ms <= 0
        self.ns(R, "tc", "qdisc", "replace", "dev", dev, "root",
                *_tbf(a.rate_mbps, a.queue_pkts, ip_lengths=undelayed))
        for k in a.paths:
            out = f"df{k}" if self.paths[k].delay_ms > 0 else f"s{self._link(k)}"
            if out not in self._clsact:
                self.ns(R, "tc", "qdisc", "add", "dev", out, "clsact")
                self._clsact.add(out)
            self.ns(R, "tc", "filter", "add", "dev", out, "egress", "protocol", "ip", "u32", "match", "ip",
                    "src", f"10.77.{k}.0/24", "action", "mirred", "egress", "redirect", "dev", dev)
        return dev

    def access_stats(self) -> dict[int, dict]:
        """Cumulative ``tbf`` counters of each access link, as :meth:`link_stats`."""
        return {i: st for i in range(len(self.access))
                if (st := self._tbf_stats(f"ia{i}")) is not None}

    def _tbf_stats(self, dev: str) -> dict | None:
        proc = self.ns(self.ns_r, "tc", "-s", "-j", "qdisc", "show", "dev", dev, check=False)
        try:
            q = next(x for x in json.loads(proc.stdout) if x.get("kind") == "tbf")
        except (ValueError, StopIteration):
            return None
        return {"packets": int(q.get("packets", 0)), "bytes": int(q.get("bytes", 0)),
                "drops": int(q.get("drops", 0))}

    def _addr(self, ns: str, dev: str, cidr: str) -> None:
        self.ns(ns, "ip", "addr", "add", cidr, "dev", dev)
        self.ns(ns, "ip", "link", "set", dev, "up")

    def _delay_dev(self, name: str, delay_ms: float, jitter_ms: float = 0.0) -> None:
        # `ip netns exec` execs the forwarder, so this process is its parent: it exits when we
        # die (PR_SET_PDEATHSIG), however we die.
        jitter = [str(FWD_QUEUE_PKTS), str(round(jitter_ms * 1000))] if jitter_ms > 0 else []
        proc = subprocess.Popen(
            ["ip", "netns", "exec", self.ns_r, str(DELAYFWD), name, str(round(delay_ms * 1000)), *jitter],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            env=dict(os.environ, PP_PARENT_PID=str(os.getpid())))
        self.fwd_procs.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline().decode().strip()
        if line != "ready":
            raise KernelError(f"delay forwarder {name} did not start: "
                              f"{proc.stderr.read().decode() if proc.stderr else ''}")
        self.ns(self.ns_r, "ip", "link", "set", name, "up")
        self.ns(self.ns_r, "sysctl", "-qw", f"net.ipv4.conf.{name}.rp_filter=0")

    def _router_path(self, k: int, p: PathSpec) -> None:
        R = self.ns_r
        j = self._link(k)
        out_table = str(300 + k)
        self.ns(R, "ip", "route", "add", "default", "via", f"10.78.{j}.2", "dev", f"s{j}",
                "table", out_table)
        self.ns(R, "sysctl", "-qw", f"net.ipv4.conf.c{k}.rp_filter=0")
        # The send jitter before the path's queue: on the data's forwarder, unless an access
        # link's queue comes first (then on the ACKs', below).
        behind = any(k in a.paths for a in self.access)
        if p.delay_ms > 0 or (p.jitter_ms > 0 and not behind):
            dev = f"df{k}"
            self._delay_dev(dev, p.delay_ms, 0.0 if behind else p.jitter_ms)
            self.ns(R, "ip", "route", "add", "default", "dev", dev, "table", str(200 + k))
            self.ns(R, "ip", "rule", "add", "iif", f"c{k}", "table", str(200 + k), "priority", "100")
            self.ns(R, "ip", "rule", "add", "iif", dev, "table", out_table, "priority", "101")
        else:
            self.ns(R, "ip", "rule", "add", "iif", f"c{k}", "table", out_table, "priority", "100")
        rev = p.delay_ms if p.rev_delay_ms is None else p.rev_delay_ms
        if rev > 0 or (p.jitter_ms > 0 and behind):
            dev = f"dr{k}"
            self._delay_dev(dev, rev, p.jitter_ms if behind else 0.0)
            self.ns(R, "ip", "route", "add", "default", "dev", dev, "table", str(400 + k))
            self.ns(R, "ip", "rule", "add", "to", f"10.77.{k}.0/24", "iif", f"s{j}", "table",
                    str(400 + k), "priority", "102")
            # Out of the delay device: the main table's connected route to c{k}.

    def _loss(self) -> None:
        rules = []
        for k, p in enumerate(self.paths):
            if p.loss > 0:
                n = round(p.loss * 10000)
                rules.append(f'    iifname "c{k}" numgen random mod 10000 < {n} drop')
        if not rules:
            return
        script = "table inet pathpool {\n  chain pp_forward {\n    type filter hook forward priority 0;\n" + \
            "\n".join(rules) + "\n  }\n}\n"
        with tempfile.NamedTemporaryFile("w", suffix=".nft", delete=False) as f:
            f.write(script)
        try:
            self.ns(self.ns_r, "nft", "-f", f.name)
        finally:
            os.unlink(f.name)

    def down(self) -> None:
        """Stop the forwarders and delete the namespaces (idempotent)."""
        for proc in self.fwd_procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.fwd_procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.fwd_procs.clear()
        delete_namespaces(self.created)
        self.created.clear()

    # -------------------------------------------------------------- traffic
    def _py(self, ns: str, *args: str) -> list[str]:
        return ["ip", "netns", "exec", ns, sys.executable, "-m", "pathpool.kernel.transfer", *args]

    def run_flows(self, flows: list[FlowSpec], duration_s: float = 4.0, port: int = 5201,
                  sample_ms: float = 100.0) -> dict:
        """Run ``flows`` for ``duration_s`` seconds; returns raw sender/receiver JSON.

        Flows that all start at 0 and never stop start at once, each sender timing its run
        from its own connect. If any flow starts later or stops early, every process gets one
        epoch (``CLOCK_MONOTONIC``, shared by the namespaces) a little ahead of now, for the
        senders to come up: each sender connects at epoch + ``start_s``, stops at epoch +
        ``stop_s`` (or + ``duration_s``) and stamps its samples from the epoch, on the sample
        grid; the receiver reports per connection the bytes it had received at each flow's
        end and its first/last byte times on that clock (``"epoch"`` in the result: True).
        """
        for f in flows:
            if f.kind not in ("mptcp", "tcp"):
                raise ValueError(f"flow {f.name}: kind {f.kind!r}; allowed: mptcp, tcp")
            if not 0 <= f.path < len(self.paths):
                raise ValueError(f"flow {f.name}: path {f.path} out of range 0..{len(self.paths) - 1}")
            if not 0 <= f.start_s < duration_s or (f.stop_s is not None and not f.start_s < f.stop_s):
                raise ValueError(f"flow {f.name}: start {f.start_s} s, stop {f.stop_s} s; need 0 <= start "
                                 f"< stop and start < the run's {duration_s} s")
        timed = any(f.timed for f in flows)
        # Python and the socket setup take 0.1-0.3 s per sender on the 2-core machine.
        lead = 1.0 + 0.25 * len(flows) if timed else 0.0
        epoch = time.monotonic() + lead
        ends = sorted({min(f.stop_s, duration_s) if f.stop_s is not None else duration_s for f in flows})
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
        recv_args = ["recv", "--addr", SERVER_ADDR, "--port", str(port), "--conns", str(len(flows)),
                     "--timeout", str(duration_s + 15 + lead), "--window", str(duration_s)]
        if timed:
            recv_args += ["--epoch", repr(epoch), "--marks", ",".join(repr(t) for t in ends)]
        recv = subprocess.Popen(self._py(self.ns_s, *recv_args), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env)
        try:
            assert recv.stderr is not None
            if recv.stderr.readline().decode().strip() != "listening":
                raise KernelError(f"receiver failed: {recv.stderr.read().decode()}")
            senders = []
            for f in flows:
                args = ["send", "--dst", SERVER_ADDR, "--port", str(port), "--duration",
                        str(duration_s), "--cc", f.cc, "--bind", self.client_addr(f.path),
                        "--sample-ms", str(sample_ms)]
                if f.kind == "mptcp":
                    args.append("--mptcp")
                if f.size_bytes:
                    args += ["--bytes", str(int(f.size_bytes))]
                if timed:
                    args += ["--epoch", repr(epoch), "--start", repr(f.start_s)]
                    if f.stop_s is not None and f.stop_s < duration_s:
                        args += ["--stop", repr(f.stop_s)]
                senders.append(subprocess.Popen(self._py(self.ns_c, *args), stdout=subprocess.PIPE,
                                                stderr=subprocess.PIPE, env=env))
            out = {}
            for f, s in zip(flows, senders):
                o, e = s.communicate(timeout=duration_s + lead + 30)
                if s.returncode != 0:
                    raise KernelError(f"sender {f.name} failed: {e.decode().strip()}")
                out[f.name] = json.loads(o)
            ro, re_ = recv.communicate(timeout=duration_s + lead + 30)
            if recv.returncode != 0:
                raise KernelError(f"receiver failed: {re_.decode().strip()}")
            return {"senders": out, "receiver": json.loads(ro), "duration_s": duration_s,
                    "epoch": timed}
        finally:
            if recv.poll() is None:
                recv.kill()
                recv.wait()

    def run_iperf3(self, flows: list[FlowSpec], duration_s: float = 15.0, port: int = 5301,
                   omit_s: int = 0) -> dict[str, dict]:
        """Run unmodified ``iperf3`` for ``flows`` at once: an MPTCP flow through ``mptcpize run``
        (client and server), a TCP flow as it is; each client sets its algorithm with ``iperf3
        -C`` (``TCP_CONGESTION``, which on an MPTCP socket covers every subflow).

        Returns ``{name: {"bps": receiver goodput bit/s, "cc": algorithm the client reports,
        "retransmits": int, "raw": iperf3 JSON}}``; ``omit_s`` seconds of slow start are left
        out of ``bps`` (``iperf3 -O``).

        Examples
        --------
        >>> with Testbed([PathSpec(10, 10), PathSpec(10, 20)]) as tb:   # doctest: +SKIP
        ...     tb.run_iperf3([FlowSpec("m", "mptcp", "pp_lia")], duration_s=5)["m"]["bps"]
        """
        late = [f.name for f in flows if f.timed]
        if late:
            raise ValueError(f"flows {late} start late or stop early: run_iperf3 runs every flow for the "
                             "whole run; run_flows runs start_s/stop_s")
        for tool in ("iperf3", "mptcpize"):
            if shutil.which(tool) is None:
                raise KernelError(f"{tool} missing: scripts/install-system-deps.sh installs it")
        servers, clients = [], []
        try:
            for k, f in enumerate(flows):
                wrap = ["mptcpize", "run"] if f.kind == "mptcp" else []
                servers.append(subprocess.Popen(
                    ["ip", "netns", "exec", self.ns_s, *wrap, "iperf3", "-s", "-1", "-B",
                     SERVER_ADDR, "-p", str(port + k)],
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL))
            for k in range(len(flows)):
                self._wait_listening(port + k)
            for k, f in enumerate(flows):
                wrap = ["mptcpize", "run"] if f.kind == "mptcp" else []
                clients.append(subprocess.Popen(
                    ["ip", "netns", "exec", self.ns_c, *wrap, "iperf3", "-c", SERVER_ADDR, "-p",
                     str(port + k), "-B", self.client_addr(f.path), "-t", f"{duration_s:g}",
                     "-O", str(omit_s), "-C", f.cc, "-J"],
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL))
            out = {}
            for f, c in zip(flows, clients):
                o, e = c.communicate(timeout=duration_s + omit_s + 30)
                try:
                    res = json.loads(o)
                except ValueError:
                    raise KernelError(f"iperf3 {f.name}: no JSON ({e.decode().strip()})") from None
                if c.returncode != 0 or "error" in res:
                    raise KernelError(f"iperf3 {f.name} failed: {res.get('error', e.decode())}")
                end = res["end"]
                out[f.name] = {"bps": float(end["sum_received"]["bits_per_second"]),
                               "cc": end.get("sender_tcp_congestion", ""),
                               "retransmits": int(end["sum_sent"].get("retransmits", 0)),
                               "raw": res}
            return out
        finally:
            for p in clients + servers:
                if p.poll() is None:
                    p.kill()
                p.wait()

    def _wait_listening(self, port: int, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            # MPTCP listeners show up among the TCP ones (-t) on 6.x; -M lists them too.
            for flag in ("-t", "-M"):
                out = self.ns(self.ns_s, "ss", "-Hln", flag, check=False).stdout
                if f":{port} " in out or out.rstrip().endswith(f":{port}"):
                    return
            time.sleep(0.05)
        raise KernelError(f"iperf3 server on port {port} did not start")

    def link_stats(self) -> dict[int, dict]:
        """Cumulative ``tbf`` counters of each rate-limited router link: ``{j: {"packets",
        "bytes", "drops"}}`` (j = router link, 0 for a shared bottleneck)."""
        out = {}
        for j in sorted(set(self.egress)):
            if self.link_spec(j).rate_mbps <= 0:
                continue
            st = self._tbf_stats(f"s{j}")
            if st is not None:
                out[j] = st
        return out

    def path_of(self, local_addr: str) -> int:
        """Path index of a client source address."""
        parts = local_addr.split(".")
        return int(parts[2]) if parts[:2] == ["10", "77"] else -1

    def measure_owd(self, path: int, count: int = 200, interval_ms: float = 5.0,
                    port: int = 6001, towards_client: bool = False) -> list[float]:
        """One-way delays (ms) of ``count`` small UDP packets client to server over ``path`` (or
        server to client: the ACK direction, ``towards_client``)."""
        env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
        near, far = (self.ns_c, self.client_addr(path)), (self.ns_s, SERVER_ADDR)
        (rx_ns, rx_addr), (tx_ns, tx_addr) = (near, far) if towards_client else (far, near)
        recv = subprocess.Popen(
            self._py(rx_ns, "owd-recv", "--addr", rx_addr, "--port", str(port), "--count",
                     str(count), "--timeout", "5"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        try:
            assert recv.stderr is not None
            recv.stderr.readline()
            send = subprocess.run(
                self._py(tx_ns, "owd-send", "--dst", rx_addr, "--port", str(port), "--bind",
                         tx_addr, "--count", str(count), "--interval-ms",
                         str(interval_ms)),
                capture_output=True, env=env, timeout=60, check=False)
            if send.returncode != 0:
                raise KernelError(f"owd sender failed: {send.stderr.decode()}")
            ro, _ = recv.communicate(timeout=30)
            return json.loads(ro)["owd_ms"]
        finally:
            if recv.poll() is None:
                recv.kill()
                recv.wait()


def receiver_connection(raw: dict, flow: str, addr: str) -> dict:
    """The receiver's row for sender ``flow`` (bound to ``addr``): same client address and port.

    Raises
    ------
    KernelError
        The receiver did not report the connection: the run is incomplete and must not be
        recorded (its goodput would read as 0 while the sender had data acknowledged).
    """
    port = raw["senders"][flow]["local_port"]
    for c in raw["receiver"]["connections"]:
        if c["peer"] == addr and c["port"] == port:
            return c
    raise KernelError(f"flow {flow}: the receiver reported no connection from {addr}:{port} "
                      f"({len(raw['receiver']['connections'])} reported for {len(raw['senders'])} senders)")


def records(tb: Testbed, raw: dict, flows: list[FlowSpec], seed: int = 0) -> tuple[list[dict], list[dict]]:
    """Flow and subflow rows in the simulator's schema (crates/pathpool-sim/src/output.rs).

    Goodput is what the receiver got per connection; per-subflow numbers come from the
    sender's final ``tcp_info`` (bytes_acked, bytes_sent, retransmissions, lost) and the mean of
    the sampled RTT and cwnd. Fields the kernel does not expose per subflow (RTO count) are NaN.
    """
    nan = float("nan")
    dur = raw["duration_s"]
    flow_rows, sub_rows = [], []
    for f in flows:
        s = raw["senders"][f.name]
        final = s["final"]
        c = receiver_connection(raw, f.name, tb.client_addr(f.path))
        delivered = c["bytes"]
        # The receiver's clock: first byte to last byte (the sender's buffer drains after it
        # stops writing), so goodput is never above the paths' capacity.
        rdur = c["duration_s"] if c["duration_s"] > 0 else dur
        sent_pk = sum(x.get("data_segs_out", 0) for x in final)
        retr = sum(x.get("total_retrans", 0) for x in final)
        flow_rows.append({
            "seed": seed, "flow": f.name, "kind": f.kind, "algorithm": s["cc"],
            "n_subflows": len(final), "start_s": 0.0, "end_s": rdur, "delivered_bytes": delivered,
            "goodput_bps": delivered * 8 / rdur,
            "throughput_bps": sum(x.get("bytes_sent", 0) for x in final) * 8 / dur,
            "sent_packets": sent_pk, "retransmitted_packets": retr,
            "lost_packets": sum(x.get("lost", 0) for x in final), "rto_count": nan,
            "completion_time_s": nan,
        })
        for i, x in enumerate(final):
            rtts = [sf["rtt_us"] for smp in s["samples"] for sf in smp["subflows"]
                    if sf.get("local") == x.get("local") and sf.get("rtt_us")]
            cwnds = [sf["snd_cwnd"] for smp in s["samples"] for sf in smp["subflows"]
                     if sf.get("local") == x.get("local")]
            sub_rows.append({
                "seed": seed, "flow": f.name, "subflow": i,
                "path": f"path{tb.path_of(x.get('local', ''))}",
                "acked_bytes": x.get("bytes_acked", 0),
                "goodput_bps": x.get("bytes_acked", 0) * 8 / dur,
                "throughput_bps": x.get("bytes_sent", 0) * 8 / dur,
                "sent_packets": x.get("data_segs_out", 0),
                "retransmitted_packets": x.get("total_retrans", 0),
                "lost_packets": x.get("lost", 0), "loss_events": nan, "rto_count": nan,
                "mean_rtt_s": (sum(rtts) / len(rtts) / 1e6) if rtts else nan,
                "min_rtt_s": x.get("min_rtt_us", 0) / 1e6 if x.get("min_rtt_us") else nan,
                "mean_cwnd": (sum(cwnds) / len(cwnds)) if cwnds else nan,
            })
    return flow_rows, sub_rows


def acked_rate_bps(raw: dict, flow: str, start_s: float, end_s: float | None = None) -> float:
    """Bytes the subflows of ``flow`` had acknowledged between two sample times, in bit/s.

    Read from the sender's ``tcp_info`` samples (``tcpi_bytes_acked`` summed over subflows):
    from the first sample at or after ``start_s`` to the last one at or before ``end_s`` (None:
    the last sample). Skipping the first seconds leaves out slow start, whose overshoot hands
    the first seconds to whichever flow the first losses spare; a subflow that appears in the
    window counts from zero.

    Raises
    ------
    ValueError
        If fewer than two samples fall in the window.
    """
    smp = [s for s in raw["senders"][flow]["samples"]
           if s["t"] >= start_s and (end_s is None or s["t"] <= end_s)]
    if len(smp) < 2:
        raise ValueError(f"flow {flow}: fewer than two samples between {start_s} s and {end_s} s")
    first = {sf.get("local"): sf.get("bytes_acked", 0) for sf in smp[0]["subflows"]}
    acked = sum(sf.get("bytes_acked", 0) - first.get(sf.get("local"), 0) for sf in smp[-1]["subflows"])
    return acked * 8 / (smp[-1]["t"] - smp[0]["t"])


def write_results(out_dir: Path, flow_rows: list[dict], sub_rows: list[dict], meta: dict) -> None:
    """Write flows.csv, subflows.csv and summary.json atomically (temp file, then rename)."""
    import csv

    out_dir.mkdir(parents=True, exist_ok=True)
    for name, rows in (("flows.csv", flow_rows), ("subflows.csv", sub_rows)):
        tmp = out_dir / f".{name}.tmp"
        with open(tmp, "w", newline="") as fh:
            if rows:
                w = csv.DictWriter(fh, fieldnames=list(rows[0]))
                w.writeheader()
                w.writerows(rows)
        tmp.replace(out_dir / name)
    tmp = out_dir / ".summary.json.tmp"
    tmp.write_text(json.dumps({"flows": flow_rows, "subflows": sub_rows, **meta}, indent=2))
    tmp.replace(out_dir / "summary.json")


def namespace_sockets(name: str) -> list[str]:
    """``ss`` lines of the TCP and MPTCP sockets open in namespace ``name`` that hold state
    (congestion control, a namespace reference): every one except TIME-WAIT entries, which
    keep neither and go with the namespace."""
    out = _run(["ip", "netns", "exec", name, "ss", "-tanMH"], check=False).stdout
    return [line for line in out.splitlines() if line.strip() and "TIME-WAIT" not in line]


def delete_namespaces(names: list[str], timeout_s: float = 5.0) -> dict[str, list[str]]:
    """Delete the namespaces ``names`` and everything in them, sockets included; returns the
    sockets (``ss`` lines) that were still open when ``timeout_s`` ran out, per namespace
    (empty when everything went), and warns (:class:`LeftoverWarning`) about them.

    Deleting a namespace only drops its name: processes and sockets inside keep it alive, and
    a socket keeps its congestion control (a pp_* control's pp_conns entry and, after the
    unload, its struct_ops map). So, in this order: processes are killed
    (:func:`kill_namespace_pids`); every link is set down, so from then on no packet moves
    between the namespaces (no MP_JOIN can add a subflow to a connection, no FIN or RST
    arrives to start another state); then every TCP socket is aborted (``ss -K``,
    SOCK_DESTROY: the kernel's tcp_abort, a reset and tcp_done), in every namespace, until
    none is left but TIME-WAIT entries. An MPTCP connection whose subflows were aborted
    closes through its worker a moment later, so the passes repeat (bounded) until ``ss``
    lists no MPTCP socket either. Without the abort, connections still closing when the test
    bed ended stayed as orphans retransmitting into the deleted namespace until
    tcp_orphan_retries or MPTCP's close timeout gave up (measured: 60-130 s).

    Examples
    --------
    >>> delete_namespaces(["ppx-c", "ppx-r", "ppx-s"])   # doctest: +SKIP
    {}
    """
    names = [n for n in names if Path(f"/run/netns/{n}").exists()]
    kill_namespace_pids(names)
    for n in names:
        try:
            links = json.loads(_run(["ip", "-j", "-n", n, "link", "show"], check=False).stdout)
        except ValueError:
            links = []
        for dev in (link["ifname"] for link in links if link.get("ifname", "lo") != "lo"):
            _run(["ip", "-n", n, "link", "set", dev, "down"], check=False)
    left: dict[str, list[str]] = {}
    deadline = time.monotonic() + timeout_s
    while True:
        for n in names:
            _run(["ip", "netns", "exec", n, "ss", "-K", "-tanH"], check=False)
        left = {n: s for n in names if (s := namespace_sockets(n))}
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    for n in names:
        _run(["ip", "netns", "del", n], check=False)
    if left:
        warnings.warn(f"sockets outlived the test bed's teardown ({timeout_s:g} s of aborts), "
                      f"keeping their deleted namespaces alive: "
                      + "; ".join(f"{n}: {' | '.join(' '.join(x.split()) for x in s)}"
                                  for n, s in left.items()), LeftoverWarning, stacklevel=2)
    return left


def kill_namespace_pids(names: list[str], timeout_s: float = 5.0) -> list[int]:
    """SIGTERM every process inside the namespaces ``names``, then SIGKILL what is left after
    ``timeout_s``; returns the pids found."""
    pids: list[int] = []
    for n in names:
        out = _run(["ip", "netns", "pids", n], check=False).stdout
        pids += [int(x) for x in out.split() if x.isdigit()]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = []
        for pid in pids:
            try:
                os.kill(pid, sig)
                alive.append(pid)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + timeout_s
        while alive and time.monotonic() < deadline:
            alive = [p for p in alive if _alive(p)]
            time.sleep(0.02)
        if not alive:
            break
    return pids


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (our own child not yet reaped) counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class TestbedBusy(KernelError):
    """The namespaces of a test bed with this prefix exist already."""


def _namespaces() -> list[str]:
    return [line.split()[0] for line in _run(["ip", "netns", "list"], check=False).stdout.splitlines()
            if line.strip()]


def reclaim(prefix: str) -> bool:
    """Delete what a dead holder of ``prefix`` left (``pathpool testbed up`` killed with
    SIGKILL: its forwarders followed it, its empty namespaces stay). Only when the holder the
    pid file names is dead; a live holder's test bed, or namespaces no holder recorded, are
    left alone. Returns True if something was reclaimed."""
    pf = holder_pidfile(prefix)
    try:
        holder = int(pf.read_text().strip())
    except (OSError, ValueError):
        return False
    if _alive(holder):
        return False
    names = [n for n in _namespaces() if n.startswith(prefix)]
    delete_namespaces(names)
    pf.unlink(missing_ok=True)
    return wait_gone(prefix) and bool(names)


def holder_pidfile(prefix: str) -> Path:
    """Where ``pathpool testbed up`` records its pid (``pathpool testbed down`` reads it)."""
    return Path(os.environ.get("PATHPOOL_RUNDIR", "/run/pathpool")) / f"testbed-{prefix}pid"


def teardown(prefix: str = "pp-", timeout_s: float = 10.0) -> bool:
    """End every test bed with ``prefix`` from any process (``pathpool testbed down``).

    The holder (``pathpool testbed up``, pid in :func:`holder_pidfile`) gets SIGTERM and tears
    its own test bed down; whatever is then still running inside the namespaces is killed and
    the namespaces are deleted (their nftables tables and TUN devices go with them). Returns
    True once no namespace with ``prefix`` is left.

    Examples
    --------
    >>> teardown("pp-")   # doctest: +SKIP
    True
    """
    pf = holder_pidfile(prefix)
    try:
        holder = int(pf.read_text().strip())
    except (OSError, ValueError):
        holder = None
    if holder is not None and holder != os.getpid() and _alive(holder):
        try:
            os.kill(holder, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + timeout_s
        while _alive(holder) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(holder):
            os.kill(holder, signal.SIGKILL)
    names = [line.split()[0] for line in
             _run(["ip", "netns", "list"], check=False).stdout.splitlines()
             if line and line.split()[0].startswith(prefix)]
    delete_namespaces(names)
    pf.unlink(missing_ok=True)
    return wait_gone(prefix)


def wait_gone(prefix: str = "pp-", timeout_s: float = 5.0) -> bool:
    """True once no namespace with ``prefix`` is left."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        names = _run(["ip", "netns", "list"], check=False).stdout
        if not any(line.split()[0].startswith(prefix) for line in names.splitlines() if line):
            return True
        time.sleep(0.05)
    return False
