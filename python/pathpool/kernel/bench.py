"""``pathpool kernel bench``: per-call cost of the pp_* callbacks against a minimal BPF Reno.

With ``kernel.bpf_stats_enabled = 1`` the kernel accumulates, per BPF program, the number of
runs and the nanoseconds spent in them (``run_cnt``, ``run_time_ns``, read with ``bpftool prog
show``). The bench loads every pp_* control and the yardstick ``pp_minreno`` (its own four-line
cong_avoid, kernel/bpf/pp_minreno.bpf.c) in one loader, builds one test bed with two disjoint
paths and the kernel's delayed ACKs, and drives one MPTCP connection (two subflows, unmodified
iperf3 under mptcpize) per algorithm, all at the same time, so every program runs on the same
machine under the same load. It prints, per algorithm and callback, the calls counted during
the traffic, the nanoseconds per call and, where the yardstick has the same callback, the
ratio to it.

Two regimes (:data:`REGIMES`): ``paced`` (two 50 Mbit/s paths with 10 ms of delay, one
connection per control: each program runs a few hundred times a second per connection, so its
code and data are cold on nearly every call) and ``fast`` (two undelayed 1 Gbit/s paths and
several connections per control: thousands to tens of thousands of calls a second per program
(more with fewer controls per run), the warm-cache regime of a 10 Gbit/s sender). The yardstick runs in the same rounds in both.
"""

from __future__ import annotations

import json
import os
import platform
import re
import statistics
import subprocess
import tempfile
from pathlib import Path

from pathpool.kernel import loader
from pathpool.kernel.testbed import FlowSpec, PathSpec, Testbed

__all__ = ["PROBES", "REGIMES", "baseline_name", "build_baseline", "build_probes", "machine",
           "run_bench"]

STATS = Path("/proc/sys/kernel/bpf_stats_enabled")
#: Objects one pp_loader registers (kernel/loader/pp_loader.c MAX_OBJS).
MAX_OBJECTS = 16
#: Callback -> program name in each object (pp_ops.bpf.h, pp_minreno.bpf.c).
CALLBACKS = {
    "cong_avoid": ("pp_cong_avoid", "mr_cong_avoid"),
    "ssthresh": ("pp_ssthresh", "mr_ssthresh"),
    "undo_cwnd": ("pp_undo_cwnd", "mr_undo_cwnd"),
    "set_state": ("pp_set_state", None),
    "cwnd_event": ("pp_cwnd_event", None),
    "pkts_acked": ("pp_pkts_acked", None),
    "init": ("pp_init", None),
    "release": ("pp_release", None),
}


#: Bench-only variants of the yardstick (kernel/bpf/pp_probe.bpf.c, ``--probes``): minreno's
#: arithmetic plus one kind of a coupled control's extra per-ACK work each: the socket fields
#: pp_cong_avoid reads (``pq_sock``), those and pp_lia's map lookup, header read and own-slot
#: write (``pq_lines``; only the read: ``pq_hdr``, from a 16-entry map in the direct map:
#: ``pq_hdrsmall``; only the write: ``pq_slot``), or N
#: straight-line instructions (``pq_padN``). Their callbacks carry the yardstick's program
#: names.
PROBES = ("pq_sock", "pq_lines", "pq_hdr", "pq_hdrsmall", "pq_slot", "pq_pad100", "pq_pad300",
          "pq_pad600")


#: Regime -> (path rate Mbit/s (0 = unshaped), one-way delay ms, connections per control).
#: ``fast`` has no delay forwarder (RTTs of tens of microseconds) and 1 Gbit/s paths: their
#: queues still overflow, so the windows are probed and cwnd-limited ACKs take the full path.
#: (Unshaped, the connections were receive-window limited on this machine and nearly every
#: cong_avoid returned at the cwnd-limited test.)
REGIMES = {"paced": (50.0, 10.0, 1), "fast": (1000.0, 0.0, 4)}


def machine() -> str:
    """One line naming the CPU, its count and the kernel (for the table's caption)."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} CPUs, Linux {platform.release()}"


def baseline_name(algo: str) -> str:
    """The name a baseline revision's ``algo`` is registered under (``pp_lia`` -> ``pb_lia``)."""
    return "pb_" + algo.removeprefix("pp_")


def build_baseline(rev: str, algorithms: tuple[str, ...], out: Path) -> list[Path]:
    """Build git revision ``rev``'s BPF objects of ``algorithms`` under ``pb_*`` names.

    The revision's ``kernel/`` is exported into ``out`` (``git archive``), each
    ``PP_DEFINE_OPS(pp_X, "pp_X")`` renamed to ``pb_X`` (registered names must be unique), and
    built with its own Makefile, so the bench can register old and new code side by side.

    Examples
    --------
    >>> objs = build_baseline("main", ("pp_lia",), Path("/tmp/b"))   # doctest: +SKIP
    >>> [o.name for o in objs]   # doctest: +SKIP
    ['pp_lia.bpf.o']
    """
    archive = subprocess.run(["git", "-C", str(loader.REPO), "archive", rev, "kernel"],
                             capture_output=True, check=False)
    if archive.returncode:
        raise loader.KernelError(f"--baseline {rev}: git archive failed: "
                                 f"{archive.stderr.decode(errors='replace').strip()}")
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive.stdout, check=True)
    kdir = out / "kernel"
    for algo in algorithms:
        src = kdir / "bpf" / f"{algo}.bpf.c"
        text, n = re.subn(rf'PP_DEFINE_OPS\({algo}, "{algo}"\)',
                          f'PP_DEFINE_OPS({baseline_name(algo)}, "{baseline_name(algo)}")',
                          src.read_text())
        if n != 1:
            raise loader.KernelError(f"--baseline {rev}: {src.name} has no PP_DEFINE_OPS({algo})")
        src.write_text(text)
    made = subprocess.run(["make", "-C", str(kdir), "bpf"], capture_output=True, text=True,
                          check=False)
    if made.returncode:
        raise loader.KernelError(f"--baseline {rev}: build failed: {made.stderr.strip()[-500:]}")
    return [kdir / "build" / f"{algo}.bpf.o" for algo in algorithms]


def build_probes() -> list[Path]:
    """Build the bench-only probe objects (``make -C kernel probes``); their paths in
    :data:`PROBES` order.

    Examples
    --------
    >>> [p.name for p in build_probes()][:1]   # doctest: +SKIP
    ['pq_sock.bpf.o']
    """
    loader.build(("probes",))
    return [loader.BUILD_DIR / f"{n}.bpf.o" for n in PROBES]


def _prog_fields(ids: list[int], *fields: str) -> dict[int, tuple[int, ...]]:
    """Program id -> its integer ``fields`` from ``bpftool prog show`` (0 where absent); a
    bpftool failure raises, since the bench cannot go on without it."""
    out = subprocess.run(["bpftool", "prog", "show", "-j"], capture_output=True, text=True,
                         check=True).stdout
    want = set(ids)
    return {p["id"]: tuple(int(p.get(f, 0)) for f in fields) for p in json.loads(out) if p["id"] in want}


def _prog_sizes(ids: list[int]) -> dict[int, tuple[int, int]]:
    """Program id -> (BPF instructions after the verifier's rewrites, bytes of x86 code)."""
    return {i: (xlated // 8, jited)
            for i, (xlated, jited) in _prog_fields(ids, "bytes_xlated", "bytes_jited").items()}


def _prog_stats(ids: list[int]) -> dict[int, tuple[int, int]]:
    """Program id -> (run_time_ns, run_cnt) since bpf_stats_enabled was set."""
    return _prog_fields(ids, "run_time_ns", "run_cnt")


def run_bench(duration_s: float = 10.0, algorithms: tuple[str, ...] = loader.ALGORITHMS,
              rate_mbps: float | None = None, counting: str = "bytes", rounds: int = 1,
              baseline: str | None = None, regime: str = "paced", conns: int | None = None,
              cpu: int | None = None, probes: bool = False) -> dict:
    """Measure ns per call of every callback of ``algorithms`` and of the yardstick.

    Parameters
    ----------
    duration_s
        Traffic time (all connections at once).
    algorithms
        pp_* controls to measure (default: all of :data:`loader.ALGORITHMS`).
    rate_mbps
        Rate of each of the two test-bed paths (default: the regime's; 0 = unshaped).
    counting
        The controls' counting tunable (``"bytes"`` or ``"acks"``).
    rounds
        Traffic rounds, each on a fresh test bed with every algorithm and the yardstick at
        once (so every ratio compares programs that ran side by side).
    baseline
        A git revision: its controls are built (:func:`build_baseline`) and run beside the
        current ones as ``pb_*`` in every round, so a change is measured old against new in
        the same traffic; their rows carry ``"baseline": rev``.
    regime
        ``"paced"`` or ``"fast"`` (:data:`REGIMES`): the paths' rate and delay and the default
        connections per control.
    conns
        MPTCP connections (two subflows each) per control and for the yardstick (default: the
        regime's).
    cpu
        Run every iperf3 (and so, on the veth test bed, the packet processing it causes) on
        this CPU only (the bench's own affinity while it starts them, inherited); None: any.
    probes
        Also run the bench-only :data:`PROBES` (the yardstick plus one kind of extra work
        each) as further connections in every round, to split a control's cost into parts.

    Returns
    -------
    dict
        ``{"machine": str, "duration_s": float, "rounds": int, "rows": [{"algorithm",
        "callback", "calls", "ns_per_call", "ratio", "ratios", "insns", "bytes_jited"}]}``:
        ``insns`` / ``bytes_jited`` are the loaded program's size (after the verifier, in x86
        code), ``calls``,
        ``ns_per_call`` and ``ratio`` are medians over the rounds, ``ratios`` the ratio of
        each round; ``ratio`` is ``None`` where the yardstick has no such callback;
        ``"traffic"``: per control, its connections' goodput (Mbit/s) and retransmissions in
        each round. With a
        baseline, ``"baseline": rev`` and, per row of the current code, ``"vs_baseline"``: the
        median over rounds of its ns per call over the baseline's in the same round, and
        ``"vs_baselines"``, that quotient per round.

    Raises
    ------
    KernelError
        Not root, pp_* already registered, or a load/traffic failure. The loader and the test
        bed are gone and ``bpf_stats_enabled`` is restored whatever happens.

    Examples
    --------
    >>> r = run_bench(5.0)   # doctest: +SKIP
    >>> [x["ratio"] for x in r["rows"] if x["callback"] == "cong_avoid"]   # doctest: +SKIP
    """
    if rounds < 1:
        raise ValueError(f"rounds {rounds}; allowed: an integer >= 1")
    if regime not in REGIMES:
        raise ValueError(f"regime {regime!r}; allowed: {', '.join(REGIMES)}")
    reg_rate, delay_ms, reg_conns = REGIMES[regime]
    rate_mbps = reg_rate if rate_mbps is None else rate_mbps
    conns = reg_conns if conns is None else conns
    if conns < 1:
        raise ValueError(f"conns {conns}; allowed: an integer >= 1")
    probe_names = PROBES if probes else ()
    n_objs = len(algorithms) * (2 if baseline else 1) + 1 + len(probe_names)
    if n_objs > MAX_OBJECTS:
        raise ValueError(f"{len(algorithms)} algorithms{' and their baseline' if baseline else ''} "
                         f"and the yardstick are {n_objs} objects; allowed: at most "
                         f"{MAX_OBJECTS} (one loader"
                         f"{', with the probes' if probes else ''}): measure them in groups "
                         "with --algorithms")
    if cpu is not None and cpu not in os.sched_getaffinity(0):
        raise ValueError(f"cpu {cpu}; allowed: one of {sorted(os.sched_getaffinity(0))}")
    base_names = tuple(baseline_name(a) for a in algorithms) if baseline else ()
    with tempfile.TemporaryDirectory(prefix="pp-baseline-") as tmp:
        extra = tuple(build_baseline(baseline, tuple(algorithms), Path(tmp))) if baseline else ()
        extra += tuple(build_probes()) if probes else ()
        old = STATS.read_text().strip()
        got = loader.load(tuple(algorithms) + (loader.YARDSTICK,), counting=counting,
                          extra_objects=extra)
    samples: list[tuple[dict, dict]] = []
    traffic: dict[str, dict] = {}
    try:
        STATS.write_text("1\n")
        ids = [i for progs in got.prog_ids.values() for i in progs.values()]
        sizes = _prog_sizes(ids)
        # Connections interleaved by control (a, b, ..., a, b, ...), so no control's
        # connections all start first or last.
        names = (*algorithms, *base_names, *probe_names, loader.YARDSTICK)
        flows = [FlowSpec(a if conns == 1 else f"{a}#{c}", "mptcp", a, 0)
                 for c in range(conns) for a in names]
        paths = [PathSpec(rate_mbps, delay_ms, queue_pkts=100),
                 PathSpec(rate_mbps, delay_ms, queue_pkts=100)]
        affinity = os.sched_getaffinity(0)
        for r in range(rounds):
            with Testbed(paths, prefix="ppb-", quickack=False) as tb:
                # With a baseline, every other round starts the baseline's connections first,
                # so start order favours neither side. (It did not explain why pp_reno cost
                # 1.32-1.37x pb_reno, though its cong_avoid only does less: see the README.)
                run = flows
                if baseline and r % 2:
                    order = [*base_names, *algorithms, *probe_names, loader.YARDSTICK]
                    run = sorted(flows, key=lambda f: order.index(f.cc))
                before = _prog_stats(ids)
                try:
                    if cpu is not None:
                        os.sched_setaffinity(0, {cpu})
                    res = tb.run_iperf3(run, duration_s=duration_s)
                finally:
                    os.sched_setaffinity(0, affinity)
                samples.append((before, _prog_stats(ids)))
                # Losses say the windows were probed (cwnd-limited ACKs take the full path);
                # a loss-free control ran early returns only.
                for f in run:
                    t = traffic.setdefault(f.cc, {"mbps": [0.0] * rounds,
                                                  "retransmits": [0] * rounds})
                    t["mbps"][r] += res[f.name]["bps"] / 1e6
                    t["retransmits"][r] += res[f.name]["retransmits"]
    finally:
        STATS.write_text(f"{old}\n")
        # Every test bed is down and its sockets aborted: the maps must go too.
        loader.unload(wait_freed_s=5.0)

    def cost(algo: str, prog: str | None, before: dict, after: dict) -> tuple[int, float | None]:
        pid = got.prog_ids.get(algo, {}).get(prog or "")
        if pid is None or pid not in after:
            return 0, None
        t = after[pid][0] - before.get(pid, (0, 0))[0]
        n = after[pid][1] - before.get(pid, (0, 0))[1]
        return n, (t / n if n else None)

    def median(xs: list) -> float | None:
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else None

    rows = []
    for algo in (*algorithms, *base_names, *probe_names, loader.YARDSTICK):
        for cb, (pp_prog, mr_prog) in CALLBACKS.items():
            prog = mr_prog if algo == loader.YARDSTICK or algo in probe_names else pp_prog
            if prog is None:
                continue
            calls, nss, ratios, vs_base = [], [], [], []
            for before, after in samples:
                n, ns = cost(algo, prog, before, after)
                _, base = cost(loader.YARDSTICK, mr_prog, before, after) if mr_prog else (0, None)
                calls.append(n)
                nss.append(ns)
                ratios.append((ns / base) if ns is not None and base else None)
                if baseline and algo in algorithms:
                    _, old_ns = cost(baseline_name(algo), prog, before, after)
                    vs_base.append((ns / old_ns) if ns is not None and old_ns else None)
            insns, jited = sizes.get(got.prog_ids.get(algo, {}).get(prog, -1), (None, None))
            row = {"algorithm": algo, "callback": cb, "calls": median(calls),
                   "ns_per_call": median(nss), "ratio": median(ratios), "ratios": ratios,
                   "insns": insns, "bytes_jited": jited}
            if baseline and algo in algorithms:
                row["vs_baseline"] = median(vs_base)
                row["vs_baselines"] = vs_base
            rows.append(row)
    return {"machine": machine(), "duration_s": duration_s, "counting": counting,
            "rounds": rounds, "baseline": baseline, "regime": regime, "rate_mbps": rate_mbps,
            "delay_ms": delay_ms, "conns": conns, "cpu": cpu, "probes": list(probe_names),
            "traffic": traffic, "rows": rows}
