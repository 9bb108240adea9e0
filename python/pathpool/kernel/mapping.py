"""Mapping a simulator scenario onto the namespace test bed (``pathpool run --backend linux``).

A pure function of the validated scenario (:attr:`pathpool.Scenario.spec`: SI units, defaults
filled, ``count`` expanded; nothing is parsed here): :func:`map_scenario` returns a :class:`TestbedPlan`
(the :class:`~pathpool.kernel.testbed.PathSpec` list, whether the paths share one bottleneck,
one :class:`~pathpool.kernel.testbed.FlowSpec` per flow, the duration and the BPF tunables) or
raises :class:`UnsupportedScenario`, a :class:`~pathpool.errors.ScenarioError` naming the
scenario field and what the test bed supports.

Rules (also on the manual's page "One scenario on both engines"):

- one test-bed path per distinct scenario path used by a flow; the paths of the MPTCP flow(s)
  come first, in the flow's order (MPTCP endpoints exist only for them), then the paths used
  only by TCP flows;
- a path's rate is the smallest rate of its links, its buffer that link's buffer (bytes are
  turned into 1500-byte packets), its forward one-way delay the sum of its links' delays, its
  reverse delay ``ack_delay``, or the sum of the ``ack_links``' delays, or the forward delay;
  its loss the combined Bernoulli loss ``1 - prod(1 - p_l)`` of its links;
- when every path crosses one common link, the test bed routes them all through one
  bottleneck with that link's rate and buffer (``shared_bottleneck``); a shared link that is
  not each path's slowest cannot be built;
- routes that share links without all sharing one (Khalili: type-1 users cross a shared access
  before their paths split, type-2 users join at link 2 only) are built link by link when each
  path crosses one or two links: a path's last link is its router link (``egress``; paths
  with the same last link share its rate limit and queue), a first link of two is a shared
  first hop (``access``, an IFB device before the split); a link in both roles, or a path of
  three or more links, cannot be built;
- algorithms: reno, lia, olia, balia, rsf-db, rsf-lb, ewtcp, coupled, semicoupled, max -> the
  pp_* BPF controls; cubic -> the
  kernel's own cubic (and, with ``kernel_tcp``, single-path reno counting segments -> the
  kernel's own reno). Their parameters become the loader's tunables (global: every flow using
  an algorithm must use the same values; EWTCP's ``a`` is written out, its default 1/n^2 with
  n = the flow's subflows, as pathpool-cc builds it);
- a flow's ``start`` (plus, if given, the start jitter the simulator draws for the seed:
  :func:`start_offsets`) and ``stop`` become the :class:`~pathpool.kernel.testbed.FlowSpec`'s
  ``start_s``/``stop_s`` on the run's clock; a stop at or after the run's end is no stop, and
  both stay out of the plan's description when they are the defaults (0, no stop), so the
  kernel cache keys of plans without late flows do not change.

One scenario, one meaning. A field the scenario does not write means its simulator default on
both engines where the test bed can do the same: a scenario without ``delayed_ack`` asks for the
simulator's default, an ACK per segment, so the test bed's receiver ACKs every segment too
(``quickack 1`` on its routes), and ``pathpool compare`` compares the same receivers. Where the
test bed cannot do what the simulator does (the default or the value written),
:func:`map_scenario` lists the field in :attr:`TestbedPlan.differences` with both meanings and,
when there is one, what to write for both to agree; ``pathpool compare`` prints one warning line
per such field. What the test bed cannot run at all is refused (:class:`UnsupportedScenario`).
Every field the mapping reads (Markdown, for the manual):

| field | default | simulator | Linux test bed | same meaning? |
|---|---|---|---|---|
| `duration` | (required) | simulated time | real time, at most `--max-duration` (`pathpool compare` runs the simulator for the same capped time) | yes |
| `papers` | `[1]` | one run per seed, its random streams | one run per seed; the seed only labels it (the kernel is not seeded) | no (nothing to seed) |
| `metrics.interval` | 0 (no series) | sampling interval of the time series | the senders' `tcp_info` sampling period (100 ms when 0): series, mean RTT and mean cwnd | series yes; the mean RTT is the mean of sampled `srtt` on the bed, of every RTT sample in the simulator |
| `links.rate` | (required) | rate of IP packets (a full segment is 1500 bytes) | `tbf` rate of IP packets (a size table leaves out the Ethernet header) | yes |
| `links.delay` | 0 | propagation delay | summed per path, emulated per direction by `pp_delayfwd` | yes (a shared first hop's delay comes after its queue: warned) |
| `links.buffer` | 100 packets | drop-tail, the packet in transmission included, in packets or bytes | `tbf` limit of that many 1500-byte IP packets; a size in bytes becomes 1500-byte packets | packets yes; bytes: warned |
| `links.loss` | 0 | Bernoulli on arrival at the link | nftables `numgen` per path where it enters the router (resolution 1e-4), the path's links combined, `1 - prod(1 - p)` | yes on a path's own links; on paths that share links, before every queue: warned |
| `links.gilbert` | none | Gilbert-Elliott loss | refused | - |
| `links.reorder` | none | reordering | refused | - |
| `paths.links` | (required) | the route | one test-bed path; shared links as in the rules above | yes, or refused |
| `paths.ack_links` | none | ACKs cross these links' rate limits and queues | only the sum of their delays | no: warned |
| `paths.ack_delay` | forward delay | uncongested return delay | the same return delay | yes |
| `flows.kind` | (required) | tcp, mptcp, rate | tcp, mptcp (a socket per flow); rate refused | yes |
| `flows.paths` | (required) | one subflow per path | MPTCP endpoints per host: every MPTCP flow over the same paths | yes, or refused |
| `flows.algorithm` | reno | pathpool-cc | its pp_* BPF port (cubic: the kernel's own; reno with `kernel_tcp`: the kernel's own) | yes (ports) |
| `flows.params` | `{}` | the algorithm's parameters | the loader's tunables (global: flows must agree) | yes, or refused |
| `flows.counting` | bytes | per acknowledged segment, or one step per ACK | the loader's `counting` tunable | yes |
| `flows.scheduler` | minrtt | `minrtt`: lowest smoothed RTT with room in its window (the out-of-tree kernels' default); `linux`: upstream's `mptcp_subflow_get_send` | upstream Linux's default scheduler (lowest linger time, bursts) | linux yes; minrtt: warned |
| `flows.send_buffer` | unlimited | `unlimited`: the application never waits; `linux`: `tcp_sndbuf_expand` buffers freed on DATA_ACK | the kernel's send buffers | linux yes; unlimited: warned |
| `flows.writer` | blocking | with `send_buffer = "linux"`: `blocking` fills the buffer; `poll` writes `write_size` bytes each time the socket polls writable | the bed's sender: non-blocking, `select()`, 64 KiB per `send()` (8 KiB with a stop) | poll yes; blocking (with linux buffers): warned |
| `flows.write_size` | 64 KiB | bytes per `send()` of a `poll` writer | 64 KiB, or 8 KiB for a flow that stops | yes |
| `flows.segmentation` | whole | `whole`: every segment full but a file's last; `linux` (with `scheduler = "linux"`): a subflow's data ends where the writer's data fragment it stops at ends, so fragment and write ends go out short unless the same subflow's next data continues them (Nagle with Minshall's check) | the kernel's segments (`mptcp_sendmsg_frag`) | linux yes; whole (MPTCP): warned |
| `flows.joins` | together | `together`: all subflows start with the connection; `linux`: each further subflow two round trips of its path after the first subflow's first ACK; `linux_peer_first`: two round trips after the start (the peer sent first) | the kernel's path manager and MP_JOIN handshakes, begun when the receiver's one-byte reply arrives, as the sender starts writing | linux_peer_first yes; linux, together: warned |
| `flows.slow_start_after_idle` | false | `true`: `tcp_cwnd_restart` after an idle RTO | the kernel's default (`tcp_slow_start_after_idle = 1`) | true yes; false: warned |
| `flows.reading` | none | `linux` sets scheduler, send_buffer, recovery, slow_start_after_idle, delayed_ack, joins, segmentation, receive_window, window_arithmetic and push_flag to Linux's | (read through the fields it sets) | linux yes |
| `flows.app` | bulk | bulk, or a file download | the same; a download ends when every byte is acknowledged, its time taken from the sender's first write to the receiver's last byte (the simulator's from its first segment's departure) | yes |
| `flows.size` | (file: required) | the download's bytes | the same | yes |
| `flows.start` | 0 | when the application starts | when the sender connects, on the run's clock; it writes after the handshake and the receiver's one-byte reply (so that lost MP_CAPABLE segments cannot make the connection TCP), and its rates leave that reply's round trip out | yes, to within the handshake's round trip |
| `flows.stop` | end of run | stop offering new data | stop writing and close; about 16 KiB unsent left (`TCP_NOTSENT_LOWAT`) | yes, to within that |
| `flows.start_jitter` | 0 | the start drawn per seed | the simulator's draw when the offsets are given (`start_offsets`), else each sender as its process comes up (about 8 ms per flow in the run; 0.06 ms when a flow starts late or stops early: `bed_start_spread`) | yes with the offsets, else warned |
| `flows.send_jitter` | 0.5 ms | each data packet leaves after a random delay up to it, in order | each data packet of the flow's paths held by `pp_delayfwd` a random time up to it, in order, before the path's queue (behind a shared access link, whose queue comes first, the path's ACKs instead: `PathSpec.jitter_ms`); flows sharing a path share its draw stream and take the largest of their values; `send_jitter=False`: the host's own timing (tens of microseconds) | yes (at most 1 s, else refused); flows on one path with different values, or `send_jitter=False`: warned |
| `flows.mss` | 1448 | payload per segment (timestamps only) | 1448, the veths' 1500-byte MTU; other values refused | yes |
| `flows.option_bytes` | 0 | further option bytes per data segment | the kernel's own: 28 (DSS with a 64-bit data ACK) on an MPTCP subflow, 0 on TCP | TCP yes; MPTCP with 0: warned (write 28) |
| `flows.receive_window` | fixed | `fixed`: `rcv_buffer` bytes from the data-level ACK at all times; `linux`: Linux's autotuning (a buffer from 128 KiB growing once per round trip by what the application read, the window half of it less what is held out of order, at most each subflow's `rcv_ssthresh`) | the kernel's autotuned receive buffer (`mptcp_rcv_space_adjust`, `tcp_rcv_space_adjust`) | linux yes; fixed: warned |
| `flows.rcv_buffer` | 4 MiB (fixed), 32 MiB (linux) | `fixed`: the window; `linux`: the most the buffer grows to | `net.ipv4.tcp_rmem[2]`: 32 MiB, Linux's default on a machine with memory to spare | 32 MiB with linux yes; else warned |
| `flows.delayed_ack` | false | false: an ACK per segment; true: every second in-order segment or 40 ms; linux: Linux's receiver (quick ACKs at the start, an ACK per more than one full segment, the adaptive timeout `ato`) | false: `quickack 1`, an ACK per segment; true and linux: the kernel's delayed ACKs | false and linux yes; true: warned |
| `flows.recovery` | rfc6675 | rfc6675: SACK recovery, DupThresh 3; linux: RACK-TLP and PRR | Linux's RACK-TLP and PRR | linux yes; rfc6675: warned |
| `flows.push_flag` | none | `none`: no data segment carries PSH; `linux`: each sending pass leaves in GSO packets of `tcp_tso_segs()` segments and each packet of two or more has PSH on its last, which the receiver's `delayed_ack = "linux"` reads as pushed | the kernel's own: TCP sockets use software GSO and `__tcp_transmit_skb` forces PSH on every multi-segment packet | linux yes; none (with delayed ACKs): warned |
| `flows.window_arithmetic` | real | `real`: a reduction keeps the algorithm's real-valued result; `linux`: whole segments after every reduction, the progress towards the next segment dropped | the kernel's `snd_cwnd`: pp_* return whole segments from `ssthresh` and drop their q16 fraction there and on an RTO (`tcp_init_cwnd_reduction`, `tcp_enter_loss`) | linux yes; real: warned |
| `flows.count` | 1 | that many flows | the same, expanded | yes |

Rates (goodput, throughput) are defined once for both engines in :mod:`pathpool.metrics`.
"""

from __future__ import annotations

import dataclasses
import math
from collections import Counter
from typing import Any

from pathpool.errors import ScenarioError
from pathpool.kernel.loader import WEIGHT_RANGE
from pathpool.kernel.testbed import (
    ACCESS_QUEUED,
    IP_MTU_BYTES,
    LINK_RATE,
    MAX_JITTER_MS,
    MAX_TESTBED_PATHS,
    AccessLink,
    FlowSpec,
    PathSpec,
)
from pathpool.kernel.transfer import BULK_CHUNK, STOP_CHUNK

__all__ = ["ALGORITHM_MAP", "MAX_FLOWS", "MAX_PATHS", "Difference", "TestbedPlan", "UnsupportedScenario",
           "as_testbed_runs", "map_scenario", "start_offsets"]

#: pathpool-cc name -> kernel congestion control name.
ALGORITHM_MAP: dict[str, str] = {
    "reno": "pp_reno", "lia": "pp_lia", "olia": "pp_olia", "balia": "pp_balia",
    "rsf-db": "pp_rsfdb", "rsf-lb": "pp_rsflb", "ewtcp": "pp_ewtcp", "coupled": "pp_coupled",
    "semicoupled": "pp_semicoupled", "max": "pp_max", "cubic": "cubic",
}
#: Test-bed paths (pp_* couple up to 8 subflows, Linux MPTCP's limit; one veth pair and delay
#: forwarders per path).
MAX_PATHS = MAX_TESTBED_PATHS
#: Concurrent flows: each is one sender process (several per client address, each its own
#: port). Khalili's N1 = 15 needs 20: on the 2-core machine one such bed's 20 senders took 4.4
#: CPU seconds in a 20 s run (0.19-0.24 s each, about 1% of a core), the machine 48% busy with
#: other work included.
MAX_FLOWS = 24
#: The veths' 1500-byte MTU less 52 header bytes: the only MSS the test bed can run (it happens
#: to be the simulator's default, ``pathpool.sim.scenario.DEFAULTS["mss"]``).
TESTBED_MSS = 1448
#: TCP option bytes beyond the timestamps in each of the kernel's data segments, by flow kind:
#: an MPTCP data segment carries a 26-byte DSS option, padded to 28 (Linux 6.18
#: ``mptcp_established_options_dss()``, net/mptcp/options.c: the mapping's 64-bit data sequence
#: number, subflow sequence number and length, and a 64-bit data ACK, which a connection uses
#: once it has received data mapped with a 64-bit sequence number, ``get_mapping_status()``,
#: net/mptcp/subflow.c: here the receiver's READY byte). Measured with tcpdump on the test
#: bed's paths: "mptcp 26 dss ack ... seq ... subseq ... len ..., nop, nop" on every data
#: segment, 1,420 payload bytes in a full one (24 bytes, with a 32-bit data ACK, before the
#: sender received anything). A scenario's ``option_bytes`` may state the kernel's
#: value or leave the simulator's default 0 (the kernel then carries its own); another value is
#: something the test bed cannot run.
KERNEL_OPTION_BYTES = {"tcp": 0, "mptcp": 28}
#: ``net.ipv4.tcp_rmem[2]``, the most a socket's autotuned receive buffer grows to: Linux 6.18
#: sets it to 32 MiB on a machine with 1 GiB of memory or more (``tcp_init``), as on the test
#: bed's; ``receive_window = "linux"`` takes it as ``rcv_buffer``'s default.
KERNEL_RMEM_MAX = 32 * 1024 * 1024
#: The senders' sampling period when the scenario writes no ``metrics.interval``.
DEFAULT_SAMPLE_MS = 100.0


class UnsupportedScenario(ScenarioError):
    """A valid scenario that the Linux test bed cannot run; names the field and what is supported."""


@dataclasses.dataclass(frozen=True)
class Difference:
    """A scenario field that does not mean the same on the two engines for this scenario.

    Attributes
    ----------
    field : str
        The scenario field (``flows[0].recovery``, ``links[1].rate``).
    simulator : str
        What the simulator does with it.
    testbed : str
        What the test bed does instead.
    same_by : str
        What to write in the scenario for both engines to mean the same, or ``""`` when nothing
        can (the test bed has no equivalent).
    """

    field: str
    simulator: str
    testbed: str
    same_by: str = ""

    def line(self) -> str:
        """One line: field, both meanings, and the way to make them the same if there is one."""
        fix = f"; for the same on both: {self.same_by}" if self.same_by else ""
        return f"{self.field}: simulator: {self.simulator}; Linux test bed: {self.testbed}{fix}"


@dataclasses.dataclass
class TestbedPlan:
    """Everything needed to run one scenario on the test bed.

    Attributes
    ----------
    paths : list of PathSpec
        One per test-bed path, index = test-bed path number.
    path_names : list of str
        The scenario path each test-bed path stands for.
    shared_bottleneck : bool
        Every path goes through one bottleneck (``paths[0]``'s rate and buffer).
    bottleneck_links : list of str
        Scenario link emulated at each router link (``[shared]`` or one per path).
    flows : list of FlowSpec
        One per flow (``count`` expanded as ``name-0, name-1, ...``).
    flow_paths : dict
        Flow name -> scenario path names of its subflows, in subflow order.
    algorithms : dict
        Flow name -> pathpool-cc algorithm name.
    mptcp_paths : int
        Test-bed paths 0..mptcp_paths-1 carry MPTCP subflows (have endpoints).
    duration_s : float
        Run time: the scenario's duration capped by ``max_duration_s``.
    tunables : dict
        Loader tunables the flows need (``d_ms``, ``mu_pps``, ``loss_window``,
        ``balia_quantised``, ``counting``, ``ewtcp_a``, ``semicoupled_a``); only keys some flow
        sets.
    notes : list of str
        What the test bed does differently from the simulator for this scenario.
    quickack : bool
        The receiver acknowledges every segment (route attribute ``quickack 1``): when the
        flows' ``delayed_ack`` is false, written or not (the simulator's default, an ACK per
        segment). With ``delayed_ack = true`` or ``"linux"`` the receiver keeps the kernel's
        delayed ACKs (``"linux"`` is what they do).
    egress : list of int or None
        Router link of each test-bed path when paths share links without all sharing one
        (``bottleneck_links[j]`` names router link j); None: one per path, or the shared one.
    access : list of (str, AccessLink)
        Shared first hops (scenario link name, what the test bed builds).
    sample_ms : float
        The senders' ``tcp_info`` sampling period: the scenario's ``metrics.interval``, or
        :data:`DEFAULT_SAMPLE_MS` when it has none.
    differences : list of Difference
        The fields of this scenario that the two engines read differently (what ``pathpool
        compare`` warns about). Not part of :meth:`describe`: they follow from the scenario and
        the mapping's rules, not from what the test bed runs.
    """

    __test__ = False

    paths: list[PathSpec]
    path_names: list[str]
    shared_bottleneck: bool
    bottleneck_links: list[str]
    flows: list[FlowSpec]
    flow_paths: dict[str, list[str]]
    algorithms: dict[str, str]
    mptcp_paths: int
    duration_s: float
    tunables: dict[str, Any]
    notes: list[str]
    quickack: bool = False
    egress: list[int] | None = None
    access: list[tuple[str, AccessLink]] = dataclasses.field(default_factory=list)
    sample_ms: float = DEFAULT_SAMPLE_MS
    differences: list[Difference] = dataclasses.field(default_factory=list)

    def link_path(self, j: int) -> int:
        """A test-bed path that crosses router link ``j`` (its rate and queue are the link's)."""
        return self.egress.index(j) if self.egress is not None else (0 if self.shared_bottleneck else j)

    def kernel_algorithms(self) -> list[str]:
        """The pp_* controls the flows need (what must be registered)."""
        return sorted({f.cc for f in self.flows if f.cc.startswith("pp_")})

    def describe(self) -> dict[str, Any]:
        """JSON-friendly description (written into the linux backend's summary.json)."""
        return {
            "paths": [dict(p.describe(), scenario_path=n) for p, n in zip(self.paths, self.path_names)],
            "shared_bottleneck": self.shared_bottleneck,
            "bottleneck_links": self.bottleneck_links,
            "flows": [dict(f.describe(), algorithm=self.algorithms[f.name],
                           scenario_paths=self.flow_paths[f.name]) for f in self.flows],
            "duration_s": self.duration_s,
            "tunables": self.tunables,
            "notes": self.notes,
            "quickack": self.quickack,
            # What the links' rates count (IP packets): runs from when they counted Ethernet
            # frames have keys without it.
            "link_rate": LINK_RATE,
            # Only when used, so that the description (and the kernel cache key made from it)
            # of every plan that has neither stays what it was.
            **({"egress": self.egress} if self.egress is not None else {}),
            **({"access": [dict(vars(a), link=n, queued=ACCESS_QUEUED) for n, a in self.access]}
               if self.access else {}),
            **({"sample_ms": self.sample_ms} if self.sample_ms != DEFAULT_SAMPLE_MS else {}),
        }


def _buffer_pkts(link: dict[str, Any]) -> int:
    """A link's buffer in packets (a size becomes 1500-byte packets, at least one)."""
    if link["buffer_packets"] is not None:
        return int(link["buffer_packets"])
    return max(1, round(link["buffer_bytes"] / IP_MTU_BYTES))


# -- the mapping ----------------------------------------------------------------------------------

@dataclasses.dataclass
class _Mapping:
    """What the sections of :func:`map_scenario` share: the validated scenario, its links and
    paths by name, and the notes and differences found so far."""

    sc: Any
    max_duration_s: float
    start_offsets: dict[str, int] | None
    kernel_tcp: bool
    send_jitter: bool = True
    links: dict[str, tuple[int, dict]] = dataclasses.field(default_factory=dict)
    paths: dict[str, tuple[int, dict]] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)
    differences: list[Difference] = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        spec = self.sc.spec
        self.links = {ln["name"]: (i, ln) for i, ln in enumerate(spec["links"])}
        self.paths = {p["name"]: (i, p) for i, p in enumerate(spec["paths"])}

    @property
    def duration_s(self) -> float:
        return min(self.sc.duration_s, self.max_duration_s)

    def unsupported(self, field: str, message: str, allowed: str) -> UnsupportedScenario:
        return UnsupportedScenario(f"the Linux test bed cannot run this: {message}", origin=self.sc.origin,
                                   field=field, allowed=allowed)

    def differ(self, field: str, simulator: str, testbed: str, same_by: str = "") -> None:
        if all(d.field != field for d in self.differences):
            self.differences.append(Difference(field, simulator, testbed, same_by))

    def path_links(self, name: str) -> list[str]:
        return list(self.paths[name][1]["links"])

    def start_s(self, fl: dict) -> float:
        return fl["start_s"] + (self.start_offsets or {}).get(fl["name"], 0) / 1e9


def map_scenario(scenario: Any, max_duration_s: float = 10.0, kernel_tcp: bool = False,
                 start_offsets: dict[str, int] | None = None, send_jitter: bool = True) -> TestbedPlan:
    """Map a scenario onto the test bed.

    Parameters
    ----------
    scenario : path, dict or pathpool.Scenario
        Anything :func:`pathpool.load_scenario` accepts; it is validated first, so a bad scenario
        raises the simulator's own :class:`~pathpool.errors.ScenarioError`.
    max_duration_s : float
        Cap on the run time (the test bed runs in real time).
    kernel_tcp : bool
        Single-path ``reno`` flows that count acknowledged segments run the kernel's own
        ``reno`` (Linux ``tcp_reno_cong_avoid`` -> ``tcp_cong_avoid_ai(tp, w, acked)``, 6.x)
        instead of ``pp_reno``, so that the pp_* counting tunable (global) can be ``acks``
        for the multipath flows beside them (``--ack-reading papers``). Default False: pp_reno.
    start_offsets : dict, optional
        Flow name -> start jitter in ns, added to the flow's ``start``: the offsets the
        simulator draws for one seed (:func:`start_offsets`). None: every flow starts at its
        ``start`` (the scenario's ``start_jitter`` is not emulated, and noted).
    send_jitter : bool
        The flows' ``send_jitter`` as timing noise on the test bed too (default): each path's
        data packets are held a random time up to the largest ``send_jitter`` of the flows on it,
        before the path's queue (:attr:`~pathpool.kernel.testbed.PathSpec.jitter_ms`). False: the hosts'
        own timing only (what the kernel runs of ``pathpool reproduce --kernel-send-jitter off``
        had), a difference that is warned.

    Returns
    -------
    TestbedPlan
        With :attr:`TestbedPlan.differences`: the fields this scenario uses that the two
        engines read differently (the table in this module's docstring).

    Raises
    ------
    UnsupportedScenario
        Naming the field (``flows[1].app``, ``links[2].gilbert``, ...) and what is supported.
    """
    from pathpool.sim.scenario import load_scenario

    if not (max_duration_s > 0 and math.isfinite(max_duration_s)):
        raise ValueError(f"max_duration_s = {max_duration_s}: must be a positive number of seconds")
    m = _Mapping(load_scenario(scenario), max_duration_s, start_offsets, kernel_tcp, send_jitter)
    flows_raw = _check_flows(m)
    quickack = _ack_policy(m, flows_raw)
    order, n_mptcp = _path_order(m, flows_raw)
    shared, egress, egress_links, access = _sharing(m, order)
    specs, bottlenecks = _path_specs(m, order, shared, egress)
    _path_jitter(m, flows_raw, order, specs)
    flows, fpaths, algos, tunables = _flow_specs(m, flows_raw, order)
    _link_differences(m, order)
    duration = m.duration_s
    if duration < m.sc.duration_s:
        m.notes.append(f"duration capped at {duration:g} s (scenario: {m.sc.duration_s:g} s)")
    spec = m.sc.spec
    return TestbedPlan(
        paths=specs, path_names=order, shared_bottleneck=shared,
        bottleneck_links=[bottlenecks[0]] if shared else egress_links if egress is not None else bottlenecks,
        flows=flows, egress=egress,
        access=[(n, AccessLink(rate_mbps=m.links[n][1]["rate_bps"] / 1e6,
                               queue_pkts=_buffer_pkts(m.links[n][1]), paths=tuple(ks)))
                for n, ks in access.items()],
        flow_paths=fpaths, algorithms=algos, mptcp_paths=n_mptcp,
        duration_s=duration, tunables=tunables, notes=sorted(set(m.notes), key=m.notes.index),
        quickack=quickack,
        sample_ms=spec["metrics_interval_s"] * 1e3 if spec["metrics_interval_s"] > 0 else DEFAULT_SAMPLE_MS,
        differences=m.differences,
    )


def _check_flows(m: _Mapping) -> list[tuple[int, str, dict]]:
    """The flows (``count`` expanded) as ``(entry index, name, spec)``, after checking what the
    test bed can run; notes and differences of their fields."""
    flows_raw: list[tuple[int, str, dict]] = []
    copies = Counter(fl["index"] for fl in m.sc.spec["flows"])
    for fl in m.sc.spec["flows"]:
        i = fl["index"]
        f = f"flows[{i}]"
        kind = fl["kind"]
        if kind not in ("tcp", "mptcp"):
            raise m.unsupported(f"{f}.kind", f"kind = {kind!r}", "tcp, mptcp")
        if fl["app"] not in ("bulk", "file"):
            raise m.unsupported(f"{f}.app", f"app = {fl['app']!r}", "bulk, file")
        if m.start_s(fl) >= m.duration_s:
            raise m.unsupported(f"{f}.start", "the flow starts after the test bed's run ends",
                                f"start < {m.duration_s:g} s")
        if fl["mss"] != TESTBED_MSS:
            raise m.unsupported(f"{f}.mss", f"mss = {fl['mss']} (the veths have a 1500-byte MTU)",
                                str(TESTBED_MSS))
        own = KERNEL_OPTION_BYTES[kind]
        if fl["option_bytes"] not in (0, own):
            raise m.unsupported(f"{f}.option_bytes", f"option_bytes = {fl['option_bytes']} (the kernel "
                                f"carries its own options: {own} bytes on a {kind} data segment)",
                                f"0 or {own}" if own else "0")
        if fl["scheduler"] not in ("minrtt", "linux"):
            raise m.unsupported(f"{f}.scheduler", f"scheduler = {fl['scheduler']!r} (the kernel's "
                                "default MPTCP scheduler is used)", "linux, minrtt")
        algo = fl["algorithm"]
        if algo not in ALGORITHM_MAP:
            raise m.unsupported(f"{f}.algorithm", f"algorithm {algo!r} has no kernel version",
                                ", ".join(ALGORITHM_MAP))
        written = fl["written"]
        if ((fl["start_jitter_s"] and m.start_offsets is None)
                or ("send_jitter" in written and fl["send_jitter_s"] and not m.send_jitter)
                or "rcv_buffer" in written or fl["delayed_ack"] is True or "recovery" in written):
            base = fl["name"].rsplit("-", 1)[0] if copies[i] > 1 else fl["name"]
            m.notes.append(f"{f} ({base}): start_jitter, send_jitter, rcv_buffer, delayed_ack and "
                           "recovery are the kernel's own on the test bed")
        _flow_differences(m, f, fl)
        flows_raw.append((i, fl["name"], fl))
    if len(flows_raw) > MAX_FLOWS:
        raise m.unsupported("flows", f"{len(flows_raw)} flows (count included)", f"at most {MAX_FLOWS} flows")
    return flows_raw


def _flow_differences(m: _Mapping, f: str, fl: dict) -> None:
    """The fields of flow entry ``f`` that the test bed reads otherwise than the simulator."""
    if fl["kind"] == "mptcp" and fl["option_bytes"] == 0:
        m.differ(f"{f}.option_bytes", "0: no option bytes beyond the timestamps, 1448 payload bytes "
                 "per full segment", f"the kernel's {KERNEL_OPTION_BYTES['mptcp']}-byte DSS option on every "
                 f"data segment, {TESTBED_MSS - KERNEL_OPTION_BYTES['mptcp']} payload bytes",
                 f"option_bytes = {KERNEL_OPTION_BYTES['mptcp']}")
    if fl["kind"] == "mptcp" and fl["scheduler"] != "linux":
        m.differ(f"{f}.scheduler", "minrtt: the subflow with the lowest smoothed RTT and room in its "
                 "window (the out-of-tree kernels' default)", "upstream Linux's default scheduler "
                 "(mptcp_subflow_get_send: lowest linger time, bursts of connection-level data)",
                 'scheduler = "linux"')
    if fl["send_buffer"] != "linux":
        m.differ(f"{f}.send_buffer", f"{fl['send_buffer']}: the application's data is never held back by "
                 "a send buffer", "the kernel's send buffers (tcp_sndbuf_expand; an MPTCP connection's is "
                 "tcp_wmem[0] plus its subflows'), freed on (DATA_)ACK", 'send_buffer = "linux"')
    if fl["kind"] == "mptcp" and len(fl["paths"]) > 1 and fl["joins"] != "linux_peer_first":
        m.differ(f"{f}.joins", JOINS_READ[fl["joins"]],
                 "the in-kernel path manager opens the further subflows once the connection is fully "
                 "established, which the receiver's one-byte reply makes it before the sender writes; "
                 "each carries data after its MP_JOIN handshake (two round trips)",
                 'joins = "linux_peer_first"')
    if fl["kind"] == "mptcp" and fl["segmentation"] != "linux":
        m.differ(f"{f}.segmentation", "whole: every segment full but a file's last",
                 "the kernel cuts a subflow's data where the writer's data fragment it stops at "
                 "ends, so fragment and write ends go out as short segments (mptcp_sendmsg_frag)",
                 'segmentation = "linux"')
    if fl["send_buffer"] == "linux" and fl["writer"] != "poll":
        m.differ(f"{f}.writer", f"{fl['writer']}: blocking writes fill the send buffer",
                 "the test bed's sender writes 64 KiB whenever select() says the socket is writable "
                 "(queued data near two thirds of the buffer)", 'writer = "poll"')
    if not fl["slow_start_after_idle"]:
        m.differ(f"{f}.slow_start_after_idle", "false: the window survives an idle period",
                 "net.ipv4.tcp_slow_start_after_idle = 1 (Linux's default): tcp_cwnd_restart after an "
                 "idle RTO", "slow_start_after_idle = true")
    if fl["recovery"] != "linux":
        m.differ(f"{f}.recovery", f"{fl['recovery']}: SACK loss recovery, DupThresh 3, no tail loss probe",
                 "Linux's RACK-TLP and PRR", 'recovery = "linux"')
    if fl["window_arithmetic"] != "linux":
        m.differ(f"{f}.window_arithmetic", "real: a window reduction keeps a fraction of a segment",
                 "whole segments after every reduction (ssthresh a u32; tcp_init_cwnd_reduction and "
                 "tcp_enter_loss zero snd_cwnd_cnt; the pp_* controls drop their fraction there)",
                 'window_arithmetic = "linux"')
    if fl["push_flag"] != "linux" and fl["delayed_ack"] is not False:
        m.differ(f"{f}.push_flag", "none: no data segment carries PSH, so only a short one marks the "
                 "receiver's pending ACK pushed",
                 "PSH on the last segment of every GSO packet of more than one segment "
                 "(__tcp_transmit_skb), which the kernel's delayed ACKs read (tcp_measure_rcv_mss, "
                 "tcp_cleanup_rbuf)", 'push_flag = "linux"')
    if fl["receive_window"] != "linux":
        m.differ(f"{f}.receive_window", f"fixed: a connection-level receive window of {fl['rcv_buffer_bytes']} "
                 "bytes at all times", "the kernel's receive buffer, autotuned from net.ipv4.tcp_rmem "
                 "(mptcp_rcv_space_adjust, tcp_rcv_space_adjust)", 'receive_window = "linux"')
    elif fl["rcv_buffer_bytes"] != KERNEL_RMEM_MAX:
        m.differ(f"{f}.rcv_buffer", f"an autotuned receive buffer of at most {fl['rcv_buffer_bytes']} bytes",
                 f"at most net.ipv4.tcp_rmem[2] = {KERNEL_RMEM_MAX} bytes (Linux's default)",
                 f"rcv_buffer = {KERNEL_RMEM_MAX}")
    if fl["send_jitter_s"] > 0 and not m.send_jitter:
        m.differ(f"{f}.send_jitter", f"each data packet leaves the host after a random delay up to "
                 f"{fl['send_jitter_s'] * 1e3:g} ms", "the host's own timing, nothing added",
                 "the test bed's send jitter (map_scenario's send_jitter=True; pathpool reproduce "
                 "--kernel-send-jitter scenario)")
    if fl["start_jitter_s"] > 0 and m.start_offsets is None:
        m.differ(f"{f}.start_jitter", f"the start drawn in [start, start + {fl['start_jitter_s']:g} s] "
                 "for each seed", "every run starts the flow at its start",
                 "start offsets from pathpool.kernel.mapping.start_offsets (as pathpool reproduce "
                 "--kernel-start-jitter scenario does)")
    # "linux" is the kernel's own receiver: no difference.
    if fl["delayed_ack"] is True:
        m.differ(f"{f}.delayed_ack", "true: an ACK for every second in-order segment or after 40 ms, "
                 "out-of-order data at once", "Linux's delayed ACKs, which also acknowledge every "
                 "segment while in quick-ACK mode (a connection's start, after an idle gap or a "
                 "duplicate) and adapt their timeout (40-200 ms)", 'delayed_ack = "linux"')


def _ack_policy(m: _Mapping, flows_raw: list[tuple[int, str, dict]]) -> bool:
    """Whether the receiver acknowledges every segment (route attribute ``quickack 1``): each
    flow's ``delayed_ack`` as the simulator reads it, written or its default (false: an ACK per
    segment, so a scenario without the key means per-segment ACKs on both engines; true and
    "linux": the kernel's delayed ACKs). One route attribute serves every flow, so the flows
    must agree."""
    by_value: dict[bool, list[int]] = {}
    for i, _n, fl in flows_raw:
        by_value.setdefault(bool(fl["delayed_ack"]), []).append(i)
    if len(by_value) > 1:
        on, off = sorted(set(by_value[True])), sorted(set(by_value[False]))
        raise m.unsupported(f"flows[{on[0]}].delayed_ack", "flows disagree on delayed_ack (true or linux on "
                            f"flows {on}, false or not written on flows {off}); the test bed's receiver "
                            "has one ACK policy for every flow", "the same delayed_ack for every flow")
    return not by_value or False in by_value


def _path_order(m: _Mapping, flows_raw: list[tuple[int, str, dict]]) -> tuple[list[str], int]:
    """Test-bed paths: the MPTCP flows' paths first, in order (all MPTCP flows must use the same
    list because MPTCP endpoints are per host, not per connection), then the paths only TCP
    flows use. Also returns how many carry MPTCP subflows."""
    mp_paths: list[str] | None = None
    for i, _n, fl in flows_raw:
        if fl["kind"] != "mptcp":
            continue
        ps = list(fl["paths"])
        if len(ps) > MAX_PATHS:
            raise m.unsupported(f"flows[{i}].paths", f"{len(ps)} subflows", f"at most {MAX_PATHS} paths "
                                "per MPTCP flow (pp_* couple up to 8 subflows)")
        if len(set(ps)) != len(ps):
            raise m.unsupported(f"flows[{i}].paths", "a path listed twice (two subflows over one route)",
                                "distinct paths")
        if mp_paths is None:
            mp_paths = ps
        elif ps != mp_paths:
            raise m.unsupported(f"flows[{i}].paths", f"MPTCP flows over different paths ({ps} vs "
                                f"{mp_paths}); MPTCP endpoints are per host", "every MPTCP flow over "
                                "the same paths, in the same order")
    order = list(mp_paths or [])
    for _i, _n, fl in flows_raw:
        if fl["kind"] == "tcp" and fl["paths"][0] not in order:
            order.append(fl["paths"][0])
    if len(order) > MAX_PATHS:
        raise m.unsupported("paths", f"the flows use {len(order)} paths ({', '.join(order)})",
                            f"at most {MAX_PATHS} paths in all")
    return order, len(mp_paths or [])


def _sharing(m: _Mapping, order: list[str]) -> tuple[bool, list[int] | None, list[str], dict[str, list[int]]]:
    """How the paths share links: ``(shared, egress, egress_links, access)``. ``shared``: one
    link every path crosses (the slowest common one is the bottleneck and must be every path's
    slowest); else, when some paths share links, ``egress`` (each path's router link, its last
    link, named by ``egress_links``) and ``access`` (a shared first hop -> the paths crossing it)."""
    common = set(m.path_links(order[0]))
    for p in order[1:]:
        common &= set(m.path_links(p))
    shared = len(order) > 1 and bool(common)
    egress: list[int] | None = None
    egress_links: list[str] = []
    access: dict[str, list[int]] = {}
    if len(order) > 1 and not shared and any(
            set(m.path_links(order[a])) & set(m.path_links(order[b]))
            for a in range(len(order)) for b in range(a + 1, len(order))):
        # Partial sharing: each path's last link is its router link, a first link of two a
        # shared first hop crossed before the split.
        egress = []
        for k, p in enumerate(order):
            ls = m.path_links(p)
            if len(ls) > 2:
                raise m.unsupported(f"paths[{m.paths[p][0]}].links", f"path {p!r} crosses {len(ls)} links "
                                    "and shares some of them with other paths (parking lot)",
                                    "disjoint paths, one link that every path crosses, or paths of one "
                                    "or two links (a shared first hop, then the path's own or shared link)")
            if ls[-1] not in egress_links:
                egress_links.append(ls[-1])
            egress.append(egress_links.index(ls[-1]))
            if len(ls) == 2:
                access.setdefault(ls[0], []).append(k)
        both_roles = sorted(set(access) & set(egress_links))
        if both_roles:
            ln = both_roles[0]
            raise m.unsupported(f"links[{m.links[ln][0]}]", f"link {ln!r} is the first hop of one path and "
                                "the last of another (parking lot)", "a link is either a shared first "
                                "hop or a path's last link")
    if shared:
        bl = min(common, key=lambda n: (m.links[n][1]["rate_bps"], n))
        brate = m.links[bl][1]["rate_bps"]
        for p in order:
            for ln in m.path_links(p):
                r = m.links[ln][1]["rate_bps"]
                if ln not in common and r < brate:
                    raise m.unsupported(f"links[{m.links[ln][0]}].rate",
                                        f"link {ln!r} of path {p!r} ({r / 1e6:g} Mbit/s) is slower than "
                                        f"the shared bottleneck {bl!r} ({brate / 1e6:g} Mbit/s)",
                                        "rate limits only at the shared link")
    return shared, egress, egress_links, access


def _path_specs(m: _Mapping, order: list[str], shared: bool,
                egress: list[int] | None) -> tuple[list[PathSpec], list[str]]:
    """One :class:`PathSpec` per test-bed path, and the scenario link each path's router link
    emulates."""
    specs: list[PathSpec] = []
    bottlenecks: list[str] = []
    common = set.intersection(*(set(m.path_links(p)) for p in order))
    for p in order:
        pi, pd = m.paths[p]
        ls = m.path_links(p)
        ack_links = list(pd["ack_links"] or [])
        for ln in ls + ack_links:
            li, ld = m.links[ln]
            if ld["gilbert"] is not None:
                raise m.unsupported(f"links[{li}].gilbert", f"Gilbert-Elliott loss on link {ln!r}",
                                    "Bernoulli loss (links[].loss) only")
            if ld["reorder"] is not None:
                raise m.unsupported(f"links[{li}].reorder", f"reordering on link {ln!r} (the test bed "
                                    "delivers every path's packets in order)", "no reorder table")
        for ln in ack_links:
            li, ld = m.links[ln]
            if ld["loss"] > 0:
                raise m.unsupported(f"links[{li}].loss", f"loss on ACK link {ln!r} of path {p!r}",
                                    "loss on data links only")
        if egress is not None:
            bl = ls[-1]
        elif shared:
            bl = min(common, key=lambda n: (m.links[n][1]["rate_bps"], n))
        else:
            bl = min(ls, key=lambda n: (m.links[n][1]["rate_bps"], ls.index(n)))
        bottlenecks.append(bl)
        fwd = sum(m.links[ln][1]["delay_s"] for ln in ls)
        if pd["ack_links"] is None:
            # ack_delay as given, or the simulator's default: the forward delay again.
            rev = pd["ack_delay_s"]
        else:
            rev = sum(m.links[ln][1]["delay_s"] for ln in ack_links)
            m.notes.append(f"path {p!r}: ACK links give only their delay (no rate limit or queue on "
                           "the test bed's return direction)")
            m.differ(f"paths[{pi}].ack_links", "the ACKs cross these links' rate limits and queues "
                     "(shared with the data crossing them)", "only the sum of their delays",
                     "ack_delay instead of ack_links")
        keep = 1.0
        for ln in ls:
            keep *= 1.0 - m.links[ln][1]["loss"]
        loss = 1.0 - keep
        if loss >= 1.0:
            raise m.unsupported(f"paths[{pi}].links", f"path {p!r} loses every packet", "loss < 1")
        if loss > 0 and round(loss * 10000) == 0:
            raise m.unsupported(f"paths[{pi}].links", f"path {p!r} loss {loss:g} is below the test "
                                "bed's resolution", "loss 0 or >= 0.0001 (nftables numgen mod 10000)")
        specs.append(PathSpec(
            rate_mbps=m.links[bl][1]["rate_bps"] / 1e6,
            delay_ms=fwd * 1e3,
            rev_delay_ms=rev * 1e3,
            loss=loss,
            queue_pkts=_buffer_pkts(m.links[bl][1]),
        ))
        if (shared or egress is not None) and loss > 0:
            m.notes.append(f"path {p!r}: its links' loss is applied per path before the bottleneck")
            for ln in ls:
                if m.links[ln][1]["loss"] > 0 and len(ls) > 1:
                    m.differ(f"links[{m.links[ln][0]}].loss", "packets are lost on arrival at this link",
                             "each path's loss is applied where it enters the router, before any queue")
        if egress is not None and len(ls) == 2 and m.links[ls[0]][1]["delay_s"] > 0:
            m.notes.append(f"path {p!r}: the delay of its first hop {ls[0]!r} is applied after that "
                           "hop's queue, with the path's own")
            m.differ(f"links[{m.links[ls[0]][0]}].delay", "this link's delay, before the next link's queue",
                     "added with the path's own delay, after the next link's queue")
    return specs, bottlenecks


def _path_jitter(m: _Mapping, flows_raw: list[tuple[int, str, dict]], order: list[str],
                 specs: list[PathSpec]) -> None:
    """Each test-bed path's timing noise: the largest ``send_jitter`` of the flows on it (the
    test bed holds all of a path's data in one forwarder); flows on one
    path asking for different values are warned."""
    if not m.send_jitter:
        return
    for k, p in enumerate(order):
        on = [(i, fl["send_jitter_s"]) for i, _, fl in flows_raw if p in fl["paths"]]
        if not on:
            continue
        specs[k].jitter_ms = max(j for _, j in on) * 1e3
        for i, j in on:
            if j * 1e3 > MAX_JITTER_MS:
                raise m.unsupported(f"flows[{i}].send_jitter", f"send_jitter = {j:g} s (the test bed's "
                                    "forwarder holds a packet up to 1 s more)", f"at most {MAX_JITTER_MS / 1e3:g} s")
            if j * 1e3 != specs[k].jitter_ms:
                m.differ(f"flows[{i}].send_jitter", f"{j * 1e3:g} ms for this flow's data",
                         f"{specs[k].jitter_ms:g} ms, the largest of the flows on path {p!r} (one "
                         "forwarder holds all of a path's data)", "the same send_jitter for every "
                         "flow on a path")


def _link_differences(m: _Mapping, order: list[str]) -> None:
    """The link field every test bed reads otherwise: a buffer in bytes."""
    used = dict.fromkeys(ln for p in order for ln in m.path_links(p))
    for ln in used:
        li, ld = m.links[ln]
        if ld["buffer_packets"] is None:
            m.differ(f"links[{li}].buffer", f"{ld['buffer_bytes']} bytes (short packets take less room)",
                     f"{_buffer_pkts(ld)} full-size packets", "a buffer in packets (\"50pkt\")")


def _flow_specs(m: _Mapping, flows_raw: list[tuple[int, str, dict]], order: list[str]
                ) -> tuple[list[FlowSpec], dict[str, list[str]], dict[str, str], dict[str, Any]]:
    """One :class:`FlowSpec` per flow, each flow's scenario paths and algorithm, and the
    loader's tunables (global: every flow that sets one must agree)."""
    flows: list[FlowSpec] = []
    algos: dict[str, str] = {}
    fpaths: dict[str, list[str]] = {}
    tun: dict[str, Any] = {}
    tun_src: dict[str, str] = {}

    def set_tun(key: str, value: Any, field: str) -> None:
        if key in tun and tun[key] != value:
            raise m.unsupported(field, f"{key} = {value} here but {tun[key]} in {tun_src[key]}; the "
                                "kernel's tunables are global", "the same parameters for every flow")
        tun[key] = value
        tun_src[key] = field

    for i, name, fl in flows_raw:
        algo = fl["algorithm"]
        params = dict(fl["params"])
        f = f"flows[{i}].params"
        if algo == "lia" and params.get("alpha_every_ack", False):
            raise m.unsupported(f"{f}.alpha_every_ack", "alpha recomputed on every ACK (pp_lia "
                                "recomputes it when v0.95 does)", "alpha_every_ack = false")
        if algo == "balia" and params.get("variant", "continuous") == "kernel":
            set_tun("balia_quantised", True, f"{f}.variant")
        elif algo == "balia":
            set_tun("balia_quantised", False, f"{f}.variant")
        own_reno = m.kernel_tcp and fl["kind"] == "tcp" and algo == "reno" and fl["counting"] == "bytes"
        if algo != "cubic" and not own_reno:
            set_tun("counting", fl["counting"], f"flows[{i}].counting")
        if algo == "rsf-db":
            set_tun("d_ms", float(params.get("d", 0.1)) * 1e3, f"{f}.d")
        if algo in ("ewtcp", "semicoupled"):
            # EWTCP's default as pathpool-cc builds it: 1/n^2, n = the flow's subflows.
            weight = float(params.get("a", 1.0 / len(fl["paths"]) ** 2 if algo == "ewtcp" else 1.0))
            lo, hi = WEIGHT_RANGE
            if not lo <= weight <= hi:
                raise m.unsupported(f"{f}.a", f"{algo} a = {weight:g} (the BPF arithmetic's domain)",
                                    f"{lo:g} <= a <= {hi:g}")
            set_tun(f"{algo}_a", weight, f"{f}.a")
        if algo == "rsf-lb":
            set_tun("mu_pps", float(params.get("mu", 4.0)), f"{f}.mu")
            set_tun("loss_window", float(params.get("loss_window", 1000.0)), f"{f}.loss_window")
        size = int(fl["size_bytes"] or 0) if fl["app"] == "file" else 0
        # The simulator's start (+ the drawn jitter) and stop; a stop at or after the run's end
        # is no stop.
        start = m.start_s(fl)
        stop = fl["stop_s"] if fl["stop_s"] is not None and fl["stop_s"] < m.duration_s else None
        if stop is not None and stop <= start:
            raise m.unsupported(f"flows[{i}].stop", f"the flow stops ({stop:g} s) before it starts "
                                f"({start:g} s with its start jitter)", "stop after start")
        if fl["kind"] == "mptcp":
            flows.append(FlowSpec(name, "mptcp", ALGORITHM_MAP[algo], 0, size, start, stop))
            fpaths[name] = list(fl["paths"])
        else:
            p = fl["paths"][0]
            flows.append(FlowSpec(name, "tcp", "reno" if own_reno else ALGORITHM_MAP[algo],
                                  order.index(p), size, start, stop))
            fpaths[name] = [p]
        algos[name] = algo
    return flows, fpaths, algos, tun


def start_offsets(scenario: Any, seed: int) -> dict[str, int]:
    """Each flow's start jitter in ns as the simulator draws it for ``seed`` (Rust:
    ``pathpool._core.start_offsets``, the flow's own random stream), for :func:`map_scenario`.

    Examples
    --------
    >>> start_offsets("scenarios/khalili/n1_5.toml", 1)["type1-0"]   # doctest: +SKIP
    803245113
    """
    from pathpool import _core
    from pathpool.sim.scenario import load_scenario

    sc = load_scenario(scenario)
    return dict(_core.start_offsets(sc.text, sc.origin, int(seed)))


#: How far apart the test bed's senders begin when it starts flows at their written starts,
#: per flow in the run (s). A run whose flows all start at 0 and never stop early launches one
#: sender process after another and each connects as it comes up: measured with the senders'
#: connect times on the shared clock (Linux 6.18, 2-core AMD EPYC KVM), 5 flows 6.6-35 ms from
#: first to last (8 runs, TCP and MPTCP; a uniform spread of about 37 ms fits), 20 flows
#: 65-314 ms (3 runs, about 200 ms); about 8 ms per flow. A run with a late or early-stopping
#: flow (``FlowSpec.timed``) starts every sender on one clock: 5 flows within 0.2-0.3 ms
#: (3 runs), about 0.06 ms per flow.
BED_START_SPREAD_PER_FLOW_S = 0.008
BED_TIMED_START_SPREAD_PER_FLOW_S = 0.00006

#: The flow fields ``reading = "linux"`` decides (its written values are removed so it does).
#: What the simulator's ``joins`` values mean, for the mapping's lines.
JOINS_READ = {"together": "together: every subflow starts with the connection",
              "linux": "linux: the further subflows' handshakes begin when the first subflow's first "
                       "ACK comes back, one round trip of its path after the start"}

_LINUX_READING_FIELDS = ("scheduler", "send_buffer", "slow_start_after_idle", "recovery", "joins",
                         "segmentation", "receive_window", "rcv_buffer", "window_arithmetic", "push_flag")


def as_testbed_runs(scenario: Any, *, start_jitter: bool = True) -> list[str]:
    """Overrides (``pathpool run --set`` form) under which the simulator runs ``scenario`` as the
    test bed runs it: every field of :attr:`TestbedPlan.differences` that has a way to agree,
    written that way.

    For each window-based flow entry: ``reading = "linux"`` decides the scheduler, the send
    buffer, restart after idle, loss recovery, the segmentation, the receive window, the
    window arithmetic and the PSH marks (values
    the scenario writes for them, and for ``rcv_buffer``, are removed); an MPTCP flow's subflows
    join as after the receiver's one-byte reply (``joins = "linux_peer_first"``); ``delayed_ack`` stays what the test bed makes of it (``false``: an ACK per segment
    on both; ``true`` or ``"linux"``: the kernel's own delayed ACKs, so ``"linux"``); MPTCP
    flows carry the kernel's 28 bytes of DSS option (``option_bytes = 28``); every window-based flow
    writes as the bed's sender does (``writer = "poll"``, :func:`testbed_write_size` bytes per
    ``send()``).

    The send jitter stays as written: it is the hosts' timing noise, which the test bed
    realises too (each path's data held up to it, :func:`map_scenario`'s ``send_jitter``). The
    bed's own noise is tens of microseconds; without noise drop-tail queues shared by several
    flows fall into phase effects (Khalili's N1 = 15 with LIA in the simulator, 8 seeds: the
    type-2 users' total 4.10 Mbit/s without send jitter, 6.54 with its 0.5 ms; on the bed, two
    uncoupled Reno subflows beside one Reno flow at one 20 Mbit/s queue with Linux's delayed
    ACKs, 8 runs: 0.96 of the TCP's rate without the hold, 1.13 with it, the simulator 1.60). The start jitter
    follows what the bed does with it: kept when the bed starts each flow at the simulator's
    draw for the seed (:func:`start_offsets`; ``pathpool compare``, ``pathpool reproduce
    --kernel-start-jitter scenario``); when the bed starts every flow at its written start
    (``--kernel-start-jitter off``, the default) its senders still begin as their processes
    come up, so each flow's start is drawn over :func:`bed_start_spread` instead. Flows started
    at exactly the same instant are a symmetric case no host produces, and the simulator's
    drop-tail queues resolve it differently: RSF Table 2 scenario 0 (five TCP downloads sharing
    one queue, 30 seeds) gives 2.11 Mbit/s (2.02-2.20 per seed) started together and 2.20
    (2.19-2.21; two downloads done at 12.2 s, three at 16.3-16.9 s) with any spread from 5 to
    64 ms, as the kernel's runs (2.27 Mbit/s; two done at 11.1-12.6 s, three at 16.0-17.7 s).
    What stays different has no setting in the
    simulator: ``ack_links``' queues, loss on shared links (see the module's table).

    Parameters
    ----------
    scenario : Scenario, str or path
        A scenario as :func:`pathpool.sim.scenario.load_scenario` takes it.
    start_jitter : bool
        Whether the bed starts the flows at the simulator's start-jitter draws (True) or at
        their written starts (False: the simulator's flows then start there too).

    Returns
    -------
    list of str
        Overrides to append to the scenario's own (the last written wins).

    Examples
    --------
    >>> from pathpool.data import scenarios_dir
    >>> ov = as_testbed_runs(scenarios_dir() / "examples" / "two_paths.toml")
    >>> [o for o in ov if o.startswith(("flows.0.", "~flows.0."))]   # doctest: +NORMALIZE_WHITESPACE
    ['~flows.0.scheduler', 'flows.0.reading="linux"', 'flows.0.delayed_ack=false',
     'flows.0.option_bytes=28', 'flows.0.joins="linux_peer_first"', 'flows.0.writer="poll"',
     'flows.0.write_size=65536']
    """
    from pathpool.sim.scenario import flow_entries, load_scenario, override

    sc = load_scenario(scenario)
    spread = bed_start_spread(sc.spec)
    out: list[str] = []
    for i, fl in flow_entries(sc.spec):
        if fl["kind"] == "rate":
            continue
        at = f"flows.{i}"
        out += [f"~{at}.{k}" for k in _LINUX_READING_FIELDS if k in fl["written"]]
        out.append(override(f"{at}.reading", "linux"))
        out.append(override(f"{at}.delayed_ack", False if fl["delayed_ack"] is False else "linux"))
        if fl["kind"] == "mptcp":
            out.append(override(f"{at}.option_bytes", KERNEL_OPTION_BYTES["mptcp"]))
            out.append(override(f"{at}.joins", "linux_peer_first"))
        out.append(override(f"{at}.writer", "poll"))
        out.append(override(f"{at}.write_size", testbed_write_size(fl, sc.spec["duration_s"])))
        if not start_jitter:
            out.append(override(f"{at}.start_jitter", spread))
    return out


def bed_start_spread(spec: dict) -> float:
    """Seconds over which the test bed's senders begin when it starts a scenario's flows at
    their written starts (:data:`BED_START_SPREAD_PER_FLOW_S`): the simulator draws each flow's
    start uniformly over it (``start_jitter``), as the bed's process start-up spreads them.

    Examples
    --------
    >>> from pathpool.sim.scenario import load_scenario
    >>> from pathpool.data import scenario_path
    >>> round(bed_start_spread(load_scenario(scenario_path("rsf2020/table2_s0_single_path")).spec), 6)
    0.04
    """
    flows = [fl for fl in spec["flows"] if fl["kind"] != "rate"]
    duration = spec["duration_s"]
    timed = any(fl["start_s"] > 0 or (fl["stop_s"] is not None and fl["stop_s"] < duration) for fl in flows)
    per_flow = BED_TIMED_START_SPREAD_PER_FLOW_S if timed else BED_START_SPREAD_PER_FLOW_S
    return per_flow * len(flows)


def testbed_write_size(fl: dict, duration_s: float) -> int:
    """Bytes per ``send()`` of the test bed's sender (:mod:`pathpool.kernel.transfer`) for flow
    entry ``fl``: 64 KiB, or 8 KiB for a flow that stops before the run ends (which also sets
    ``TCP_NOTSENT_LOWAT``, not modelled by the simulator)."""
    stops = fl["stop_s"] is not None and fl["stop_s"] < duration_s
    return STOP_CHUNK if stops else BULK_CHUNK
