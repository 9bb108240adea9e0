"""``pathpool run SCENARIO --backend linux``: a simulator scenario on the real kernel.

:func:`run_linux` maps the scenario onto the namespace test bed (:mod:`pathpool.kernel.mapping`),
loads the pp_* congestion controls it needs (unless pathpool's loader already runs with the
same tunables), runs the flows once per seed in real time, and returns a
:class:`pathpool.Results` in the simulator's schema, so that every tool that reads simulator
results (``pathpool compare``, ``pathpool.read_results``) reads these too.

What the kernel cannot report is left empty (NaN / null), never invented: per-packet network
counters of a flow (received, dropped, in flight), ACK counts, loss marks (``tcp_info`` has no
cumulative lost count), reinjections. ``seed`` labels the repetition (the kernel is not seeded).
``summary.json`` carries ``"backend": "linux"`` and the test-bed plan.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pathpool import metrics
from pathpool.kernel import loader
from pathpool.kernel.loader import KernelError
from pathpool.kernel.mapping import KERNEL_OPTION_BYTES, TestbedPlan, map_scenario, start_offsets
from pathpool.sim.results import Results

__all__ = ["BACKEND_KEY", "START_OFFSETS_KEY", "LinuxResults", "download_time", "jittered", "results_from_raw", "run_linux",
           "seed_plan"]

#: Key of summary.json naming the backend ("linux"; simulator results have none).
BACKEND_KEY = "backend"
#: Key of summary.json's ``testbed`` saying the flows started at the simulator's start-jitter
#: draws for each seed (absent: at their ``start``).
START_OFFSETS_KEY = "start_offsets"
#: Most a flow's connect may begin after its start on the run's clock before the run counts as
#: failed (the sender process was not up in time). When the handshake ends is the network's
#: business: a SYN lost in a full queue costs the 1 s initial RTO, as on any Linux host.
LATE_CONNECT_S = 0.5


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else math.nan


def download_time(sender: dict, conn: dict) -> float:
    """Seconds from the sender's first write to the receiver's last byte of one connection.

    Both ends stamp ``CLOCK_MONOTONIC``, which the test bed's namespaces share: the sender's
    first write is at ``t0_mono + connected_s`` (after the receiver's READY byte), the last byte
    is the receiver's last progress note. The receiver's own ``duration_s`` starts at its first
    data read, one one-way delay later, which the simulator's download time includes (its data
    leaves at the flow's start). Raw runs from before the sender reported ``t0_mono`` fall back
    to ``duration_s``.

    Examples
    --------
    >>> download_time({"t0_mono": 100.0, "connected_s": 0.0},
    ...               {"duration_s": 1.9, "progress": [[100.05, 0], [102.0, 4_000_000]]})
    2.0
    """
    t0, prog = sender.get("t0_mono"), conn.get("progress")
    if t0 is None or not prog:
        return float(conn["duration_s"])
    return float(prog[-1][0] - (t0 + float(sender.get("connected_s", 0.0))))


def _send_queue_bytes(x: dict, option_bytes: int) -> float | None:
    """Payload bytes a subflow holds, from one tcp_info sample: its segments out and not yet
    acknowledged, each a full one (``unacked`` x (``snd_mss`` less ``option_bytes``, which
    ``tcpi_snd_mss`` does not count: MPTCP's DSS)), plus the bytes queued and not yet sent
    (``notsent_bytes``), what the simulator's ``send_queue_bytes`` counts (None: a sample from
    before the sender read ``snd_mss``).

    >>> _send_queue_bytes({"unacked": 10, "snd_mss": 1448, "notsent_bytes": 500}, 28)
    14700.0
    """
    if "snd_mss" not in x or "unacked" not in x:
        return None
    return float(x["unacked"] * (x["snd_mss"] - option_bytes) + x.get("notsent_bytes", 0))


def _bytes_read(conn: dict, sender: dict):
    """Bytes the receiver's application had read by time ``t`` of ``sender``'s samples: the
    receiver's last progress note at or before ``t`` (notes are on the same monotonic clock;
    never interpolated, which would spread a stalled connection's burst over its stall), or None
    for a run recorded without them."""
    import numpy as np

    prog, t0 = conn.get("progress"), sender.get("t0_mono")
    if not prog or t0 is None:
        return None
    at = np.array([p[0] - t0 for p in prog], dtype=float)
    got = np.array([p[1] for p in prog], dtype=float)

    def read_by(t: float) -> float:
        k = int(np.searchsorted(at, t, side="right")) - 1
        return float(got[k]) if k >= 0 else 0.0

    return read_by


def results_from_raw(plan: TestbedPlan, runs: list[dict], scenario: Any) -> Any:
    """Turn test-bed runs into a :class:`pathpool.Results` (the simulator's tables).

    Parameters
    ----------
    plan : TestbedPlan
    runs : list of dict
        One per seed: ``{"seed", "raw"`` (from :meth:`Testbed.run_flows`) ``, "links_before",
        "links_after"`` (from :meth:`Testbed.link_stats`) ``, "wall_s"}``, and ``"plan"`` when
        that run's flows were not ``plan``'s (the seed's start jitter: :func:`run_linux`).
    scenario : pathpool.Scenario
        The scenario that was mapped (its text is written as scenario.toml).

    Returns
    -------
    pathpool.Results
    """
    import pyarrow as pa

    from pathpool.kernel.testbed import receiver_connection
    from pathpool.sim.results import jain_index
    from pathpool.sim.scenario import Scenario
    from pathpool.sim.schema import arrow_schema, column_names

    tables: dict[str, dict[str, list]] = {
        t: {c: [] for c in column_names(t)} for t in ("flows", "subflows", "links", "series", "stats")}

    def add(table: str, row: dict) -> None:
        cols = tables[table]
        for c in cols:
            cols[c].append(row.get(c))

    def path_index(local: str) -> int:
        parts = local.split(".")
        return int(parts[2]) if parts[:2] == ["10", "77"] else -1

    for run in runs:
        seed, raw = run["seed"], run["raw"]
        dur = raw["duration_s"]
        goodputs = []
        sent_total = 0
        for f in run.get("plan", plan).flows:
            s = raw["senders"][f.name]
            final = s["final"]
            c = receiver_connection(raw, f.name, f"10.77.{f.path}.1")
            # Bytes the receiver got in its first `dur` seconds (flows that all start at 0 and
            # run to the end).
            delivered = c.get("bytes_in_window", c["bytes"])
            start, stop = 0.0, None
            if raw.get("epoch"):
                # On the run's clock: a flow that starts late or stops early counts the bytes
                # received by its end (the receiver's mark there), from its start plus the round
                # trip the bed's sender waited for the receiver's READY before writing (a cost of
                # the bed, not of the scenario; the connect before it is any client's, and counts).
                # The flow's start_s is that interval's start (goodput = delivered / (end - start)).
                start = f.start_s + float(s.get("ready_wait_s", 0.0))
                stop = f.stop_s if f.stop_s is not None and f.stop_s < dur else None
                end = stop if stop is not None else dur
                delivered = next((b for t, b in c["at_marks"] if t == end), c["bytes"])
            completion = math.nan
            done_at = None
            # A download (the simulator's app = "file") is complete when the receiver got every
            # byte; it is then measured to its completion (download time: from the sender's
            # first write to the receiver's last byte, as the simulator's runs from the first
            # segment's departure to the last delivery), else, like any flow, by what arrived
            # within its interval (a lower bound, as the simulator's).
            if f.size_bytes and c["bytes"] >= f.size_bytes and c["duration_s"] > 0:
                delivered = c["bytes"]
                completion = download_time(s, c)
                done_at = start + completion
            # One interval for the flow and its subflows (pathpool.metrics).
            span = metrics.active_interval(start, dur, stop, done_at)
            option_bytes = KERNEL_OPTION_BYTES[f.kind]
            wires = [metrics.wire_bytes(x.get("bytes_sent", 0), x.get("data_segs_out", 0), option_bytes)
                     for x in final]
            sent = sum(x.get("data_segs_out", 0) for x in final)
            sent_total += sent
            rtos = [x["total_rto"] for x in final if "total_rto" in x]
            gp = metrics.rate_bps(delivered, span)
            goodputs.append(gp)
            add("flows", {
                "seed": seed, "flow": f.name, "kind": f.kind, "algorithm": plan.algorithms[f.name],
                "n_subflows": len(final), "start_s": span.start_s, "end_s": span.end_s,
                "delivered_bytes": delivered, "goodput_bps": gp,
                "throughput_bps": metrics.rate_bps(sum(wires), span),
                "sent_packets": sent,
                "retransmitted_packets": sum(x.get("total_retrans", 0) for x in final),
                "rto_count": sum(rtos) if len(rtos) == len(final) else None,
                "completion_time_s": completion,
            })
            names = plan.flow_paths[f.name]
            seen: dict[str, int] = {}
            for x, wire in zip(final, wires):
                k = path_index(x.get("local", ""))
                pname = plan.path_names[k] if 0 <= k < len(plan.path_names) else f"testbed-path{k}"
                # Subflow index = position of its path in the flow's path list (the simulator's
                # numbering); a second subflow over one path (not expected) gets a new index.
                idx = names.index(pname) if pname in names and pname not in seen else len(names) + len(seen)
                seen[pname] = idx
                mine = [sf for smp in s["samples"] for sf in smp["subflows"]
                        if sf.get("local") == x.get("local")]
                rtts = [sf["rtt_us"] / 1e6 for sf in mine if sf.get("rtt_us")]
                add("subflows", {
                    "seed": seed, "flow": f.name, "subflow": idx, "path": pname,
                    "acked_bytes": x.get("bytes_acked", 0),
                    # The final sample is taken at the flow's end (a download's: when every
                    # byte is acknowledged).
                    "goodput_bps": metrics.rate_bps(x.get("bytes_acked", 0), span),
                    "throughput_bps": metrics.rate_bps(wire, span),
                    "sent_packets": x.get("data_segs_out", 0),
                    "retransmitted_packets": x.get("total_retrans", 0),
                    "rto_count": x.get("total_rto"),
                    "mean_rtt_s": _mean(rtts),
                    "min_rtt_s": x["min_rtt_us"] / 1e6 if x.get("min_rtt_us") else math.nan,
                    "mean_cwnd": _mean([sf["snd_cwnd"] for sf in mine if "snd_cwnd" in sf]),
                })
            # Time series at the sender's samples (every 100 ms): cwnd and srtt per subflow, and
            # the flow's goodput as the simulator defines it: bytes the receiver's application
            # read (in order, at the connection level) in the interval, from the receiver's
            # progress notes on the same clock. A subflow's acknowledged bytes are not that: an
            # MPTCP connection stalled behind one subflow still has its others' data acknowledged.
            read_at = _bytes_read(c, s)
            prev_t = span.start_s
            prev_read = read_at(prev_t) if read_at else 0.0
            for smp in s["samples"]:
                t = smp["t"]
                for x in smp["subflows"]:
                    k = path_index(x.get("local", ""))
                    pname = plan.path_names[k] if 0 <= k < len(plan.path_names) else ""
                    idx = names.index(pname) if pname in names else -1
                    for metric, v in (("cwnd", x.get("snd_cwnd")),
                                      ("srtt_s", x["rtt_us"] / 1e6 if x.get("rtt_us") else None),
                                      ("send_queue_bytes", _send_queue_bytes(x, option_bytes))):
                        if v is not None:
                            add("series", {"seed": seed, "time_s": t, "entity": "subflow",
                                           "id": f"{f.name}/{idx}", "metric": metric,
                                           "value": float(v)})
                if t > prev_t and read_at:
                    now_read = read_at(t)
                    add("series", {"seed": seed, "time_s": t, "entity": "flow", "id": f.name,
                                   "metric": "goodput_bps", "value": (now_read - prev_read) * 8 / (t - prev_t)})
                    prev_read = now_read
                prev_t = t
        # Router links, then shared first hops (IFB; no delay of their own on the bed).
        counters = [(plan.bottleneck_links[j] if j < len(plan.bottleneck_links) else f"router{j}",
                     plan.paths[plan.link_path(j)].rate_mbps, plan.paths[plan.link_path(j)].delay_ms,
                     run["links_before"].get(j), after) for j, after in sorted(run["links_after"].items())]
        counters += [(plan.access[i][0], plan.access[i][1].rate_mbps, 0.0,
                      run.get("access_before", {}).get(i), after)
                     for i, after in sorted(run.get("access_after", {}).items())]
        for name, rate_mbps, delay_ms, before, after in counters:
            before = before or {"packets": 0, "bytes": 0, "drops": 0}
            rate = rate_mbps * 1e6
            add("links", {
                "seed": seed, "link": name, "rate_bps": rate,
                "delay_s": delay_ms / 1e3,
                "utilisation": min(1.0, (after["bytes"] - before["bytes"]) * 8 / (rate * dur)),
                "forwarded_packets": after["packets"] - before["packets"],
                "queue_drops": after["drops"] - before["drops"],
            })
        add("stats", {"seed": seed, "simulated_s": dur, "data_packets": sent_total,
                      "wall_s": run["wall_s"], "jain_goodput": jain_index(goodputs)})

    frames = {t: pa.table(cols, schema=arrow_schema(t)).to_pandas() for t, cols in tables.items()}
    seeds = tuple(r["seed"] for r in runs)
    sc = Scenario(name=scenario.name, origin=scenario.origin, seeds=seeds,
                  duration_s=plan.duration_s, text=scenario.text)
    return LinuxResults(scenario=sc, seeds=seeds, wall_s=sum(r["wall_s"] for r in runs),
                                  testbed=plan.describe(), kernel=platform.release(), **frames)


#: Columns the kernel cannot fill (NaN in the tables, null in summary.json).
_UNKNOWN_TOTALS = ("lost_packets", "events", "ack_packets", "packets_in_network_end")


@dataclasses.dataclass
class LinuxResults(Results):
    """:class:`pathpool.Results` of the Linux backend: its summary says ``"backend": "linux"``
    (with the kernel release and the test-bed plan) and keeps the counts the kernel does not
    give (``lost_packets``, ``events``, ...) null."""

    testbed: dict = dataclasses.field(default_factory=dict)
    kernel: str = ""

    def _summary_deterministic(self) -> dict[str, Any]:
        # The simulator's summary, computed on a copy where the unknown counts are 0, with those
        # counts then set back to null.
        flows = self.flows.copy()
        flows["lost_packets"] = flows["lost_packets"].fillna(0)
        stats = self.stats.copy()
        for c in ("events", "ack_packets", "packets_in_network_end"):
            stats[c] = stats[c].fillna(0)
        shadow = Results(scenario=self.scenario, seeds=self.seeds, flows=flows,
                         subflows=self.subflows, links=self.links, series=self.series,
                         stats=stats, wall_s=self.wall_s)
        out = Results._summary_deterministic(shadow)
        for row in out["per_seed"]:
            for k in _UNKNOWN_TOTALS:
                row[k] = None
        for k in _UNKNOWN_TOTALS:
            if k in out["totals"]:
                out["totals"][k] = None
        out[BACKEND_KEY] = "linux"
        out["kernel"] = self.kernel
        out["testbed"] = self.testbed
        return out


def ensure_loaded(need: Sequence[str], tunables: dict[str, Any]) -> bool:
    """Make the pp_* controls ``need`` available with ``tunables``; True if this call loaded
    them (and must unload). A loader already running with the same tunables is reused."""
    if not need:
        return False
    have = loader.registered()
    if all(n in have for n in need):
        state = loader.TUNABLES_FILE
        current = json.loads(state.read_text()) if state.exists() else {}
        differ = {k: (v, current.get(k)) for k, v in tunables.items()
                  if current.get(k, loader.TUNABLE_DEFAULTS.get(k)) != v}
        if differ:
            raise KernelError(
                "pp_* are already loaded with other tunables than the scenario asks for "
                + ", ".join(f"{k}: scenario {a}, loaded {b}" for k, (a, b) in differ.items())
                + "; `pathpool kernel unload` first and the run loads them itself")
        return False
    if have:
        raise KernelError(f"only {have} registered, the scenario needs {need}: "
                          "`pathpool kernel unload` first and the run loads them itself")
    loader.load(tuple(need), **tunables)
    return True


def testbed_for(plan: TestbedPlan, prefix: str = "pp-") -> Any:
    """The :class:`~pathpool.kernel.testbed.Testbed` a plan runs on (not yet up)."""
    from pathpool.kernel.testbed import Testbed

    return Testbed(plan.paths, shared_bottleneck=plan.shared_bottleneck, prefix=prefix,
                   mptcp_paths=plan.mptcp_paths, quickack=plan.quickack, egress=plan.egress,
                   access=[a for _n, a in plan.access])


def run_once(tb: Any, plan: TestbedPlan, seed: int) -> dict:
    """One repetition of the plan's flows on the test bed ``tb`` (up): the run record
    :func:`results_from_raw` takes. Checks that every flow ran the algorithm asked for (an
    MPTCP socket silently keeps the default for an unregistered name)."""
    before, access_before = tb.link_stats(), tb.access_stats()
    t0 = time.monotonic()
    raw = tb.run_flows(plan.flows, duration_s=plan.duration_s, sample_ms=plan.sample_ms)
    wall = time.monotonic() - t0
    from pathpool.kernel.testbed import receiver_connection

    for f in plan.flows:
        receiver_connection(raw, f.name, tb.client_addr(f.path))   # complete or not recorded
        got = raw["senders"][f.name]["cc"]
        if got != f.cc:
            raise KernelError(f"flow {f.name} ran {got!r}, not {f.cc!r}")
        late = raw["senders"][f.name].get("connect_s", 0.0) - f.start_s
        if raw.get("epoch") and late > LATE_CONNECT_S:
            raise KernelError(f"flow {f.name} began its connect {late:.2f} s after its start (more than "
                              f"{LATE_CONNECT_S:g} s): the senders did not come up in time, the run is not "
                              "the plan's")
    return {"seed": seed, "raw": raw, "links_before": before, "links_after": tb.link_stats(),
            "access_before": access_before, "access_after": tb.access_stats(), "wall_s": wall}


def jittered(scenario: Any) -> bool:
    """Whether some flow of the (validated) scenario has a start jitter."""
    return any(fl["start_jitter_s"] > 0 for fl in scenario.spec["flows"])


def seed_plan(scenario: Any, seed: int, max_duration_s: float) -> TestbedPlan:
    """The plan of one seed's run: each flow starts at its ``start`` plus the start jitter the
    simulator draws for ``seed`` (:func:`pathpool.kernel.mapping.start_offsets`)."""
    return map_scenario(scenario, max_duration_s=max_duration_s,
                        start_offsets=start_offsets(scenario, seed))


def run_linux(
    scenario: Any,
    *,
    seeds: Sequence[int] | None = None,
    max_duration_s: float = 10.0,
    prefix: str = "pp-",
    progress: Any = None,
    output: str | os.PathLike | None = None,
) -> Any:
    """Run ``scenario`` on the namespace test bed with the real kernel.

    Parameters
    ----------
    scenario : path, dict or pathpool.Scenario
    seeds : sequence of int, optional
        One run per seed. Default: the scenario's first. The kernel is not seeded; the seed
        labels the run and sets its flows' start times: their ``start`` plus the start jitter
        the simulator draws for that seed, so that a seed means the same starts on both engines.
    max_duration_s : float
        Cap on each run's length (real time).
    prefix : str
        Namespace name prefix.
    progress : callable, optional
        Called with a message before each run.
    output : path, optional
        Write the results there (as :meth:`Results.write`, plus ``"backend": "linux"``, the
        kernel release and the test-bed plan in summary.json).

    Returns
    -------
    pathpool.Results

    Raises
    ------
    pathpool.kernel.mapping.UnsupportedScenario
        The test bed cannot express the scenario (names the field).
    KernelError
        Not root, no MPTCP/BTF, loading failed, a transfer failed.
    """
    from pathpool.sim.scenario import load_scenario

    sc = load_scenario(scenario)
    plan = map_scenario(sc, max_duration_s=max_duration_s)
    seeds = list(seeds) if seeds else [sc.seeds[0]]
    # A seed means the same start times on both engines: each run starts its flows at the
    # simulator's draw of their start jitter for that seed (mapped before anything is set up,
    # so a draw past the run's end is refused first).
    plans = {seed: seed_plan(sc, seed, max_duration_s) for seed in seeds} if jittered(sc) else {}
    if os.geteuid() != 0:
        raise KernelError("the Linux backend needs root (network namespaces, tc, nftables, BPF "
                          "struct_ops); run as root, or use --backend sim")
    problems = loader.check_environment(need_toolchain=False)
    if problems:
        raise KernelError("the Linux backend cannot run here: " + "; ".join(problems))
    loaded_here = ensure_loaded(plan.kernel_algorithms(), plan.tunables)
    runs = []
    try:
        with testbed_for(plan, prefix) as tb:
            for seed in seeds:
                if progress:
                    progress(f"seed {seed}: {plan.duration_s:g} s on the test bed")
                if seed in plans:
                    runs.append(dict(run_once(tb, plans[seed], seed), plan=plans[seed]))
                else:
                    runs.append(run_once(tb, plan, seed))
    finally:
        if loaded_here:
            # The test bed is down and its sockets aborted: the maps must go too.
            loader.unload(wait_freed_s=5.0)
    results = results_from_raw(plan, runs, sc)
    if plans:
        results.testbed[START_OFFSETS_KEY] = "each seed's, as the simulator draws them"
    if output is not None:
        results.write(Path(output))
    return results


