"""The Linux backend of ``pathpool reproduce``: the same experiment jobs on the real kernel.

Each simulator job (scenario + seed + tags, :mod:`pathpool.reproduce.experiments`) is mapped onto
the namespace test bed by :func:`pathpool.kernel.mapping.map_scenario`; a job the test bed cannot
express is not dropped but listed (:class:`Skipped`, with the mapping's own one-line reason) and
its experiment is left out of the kernel's columns. The rest run in real time with the pp_* BPF
congestion controls (single-path Reno flows that count segments on the kernel's own ``reno``),
``seed`` labelling the repetition. Their tables have the simulator's schema
(:func:`pathpool.kernel.run.results_from_raw`), so :mod:`pathpool.reproduce.metrics` computes the
same per-run metrics from them.

- **ACK readings.** ``quickack``: the receiver ACKs every segment (route ``quickack 1``), as the
  simulator's scenarios do. ``linux``: the kernel's delayed ACKs, every pp_* counting
  acknowledged segments (``--counting bytes``). ``papers`` / ``papers-rsf-bytes``: delayed ACKs,
  the multipath algorithms one step per ACK (``--counting acks``) and single-path TCP per
  segment on the kernel's reno (RSF test bed, Linux 4.9) or per ACK on pp_reno (Balia's and
  Khalili's Linux 3.11); RSF-DB/LB per ACK or (``papers-rsf-bytes``) per segment. The loader's
  counting tunable is global, so one run cannot mix the two rules among pp_* flows; no shipped
  experiment needs that (each run has one multipath algorithm), and a run that would is listed
  as not expressible by the mapping.
- **Cache.** ``OUT/cache-linux/<kernel release>/<kernel key>/``, the simulator's layout
  (:class:`pathpool.sweep.Cache`), so an interrupted run resumes where it stopped. The key
  (:meth:`KernelJob.key`) hashes what the kernel run depends on: the test-bed plan (paths,
  bottlenecks, flows, algorithms, tunables, the ACK policy, run time), the seed and the kernel
  release; never the scenario text, which also carries simulator-only readings
  (``--recovery-reading``, jitter, ...) that the kernel does not follow. Entries of the first
  layout (keyed by the scenario text, :meth:`pathpool.sweep.Job.key`) are still read when the
  same options ask for them, and are filed under the new key on that first read.
- **BPF.** Jobs are grouped by the tunables they need; each group loads the pp_* controls once
  (or reuses a loader already running with the same tunables) and unloads what it loaded.
- **Parallel test beds.** ``beds`` test beds, each with its own namespace prefix
  (``pp-r<k>-``), run jobs of one group side by side. Ctrl-C / SIGTERM in the main thread tears
  every test bed down (namespaces, forwarders, senders) and unloads what was loaded.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import platform
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from pathpool.errors import ScenarioError
from pathpool.sweep import TABLES, Cache, Job

__all__ = ["DEFAULT_MAX_DURATION_S", "KernelJob", "Skipped", "check_kernel", "default_beds", "plan_jobs",
           "run_kernel_jobs"]

#: Cap on one kernel run in real time (the scenarios' 900 s "until every download ends" would
#: otherwise hold a test bed for 15 minutes when a download stalls). Downloads still running at
#: the cap count as incomplete with their goodput so far, as in the simulator.
DEFAULT_MAX_DURATION_S = 300.0

#: Version of :meth:`KernelJob.key`'s content (bump when a plan field's meaning changes).
KEY_LAYOUT = 1

#: Namespace prefix of test bed k (never "pp-", the prefix of `pathpool testbed up`).
BED_PREFIX = "pp-r{}-"


@dataclasses.dataclass(frozen=True)
class Skipped:
    """An experiment (or one of its jobs) that the test bed cannot run, and why."""

    experiment: str
    algorithm: str
    reason: str


@dataclasses.dataclass
class KernelJob:
    """One kernel run: the simulator job, the scenario as the kernel runs it, and its plan."""

    job: Job
    plan: Any   # pathpool.kernel.mapping.TestbedPlan

    def key(self) -> str:
        """Cache key: hash of the plan (its notes left out: they only describe), the seed and the
        kernel release. Two jobs whose scenarios differ only in what the test bed does not
        emulate (``recovery``, ``start_jitter``, ...) get the same key, so regenerating the
        simulator's column with another simulator-only reading reuses the kernel's runs."""
        plan = self.plan.describe()
        plan.pop("notes", None)
        text = json.dumps({"plan": plan, "seed": self.job.seed, "kernel": platform.release(),
                           "layout": KEY_LAYOUT}, sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:24]


def kernel_scenario(scenario: Any, ack_reading: str) -> Any:
    """The job's scenario with the ACK policy written out, so the test bed follows the reading
    (the mapping gives per-segment ACKs unless a flow's ``delayed_ack`` is ``true`` or
    ``"linux"``, as the simulator does; writing the policy keeps a cached job's meaning whatever that default is):
    ``quickack`` adds ``flows.N.delayed_ack=false`` overrides, validated by Rust like every other."""
    from pathpool.sim.scenario import flow_entries, load_scenario, override

    sc = load_scenario(scenario)
    if ack_reading != "quickack":
        return sc
    ov = [override(f"flows.{i}.delayed_ack", False) for i, fl in flow_entries(sc.spec) if fl["kind"] != "rate"]
    return load_scenario(sc, ov) if ov else sc


#: ``--kernel-start-jitter``: ``off`` (every kernel flow at its scenario ``start``; what the cached
#: runs did) or ``scenario`` (each flow also offset by the start jitter the simulator draws for
#: the job's seed).
START_JITTER_READINGS = ("off", "scenario")
#: ``--kernel-send-jitter``: ``off`` (the hosts' own timing; what the cached runs had) or
#: ``scenario`` (each data packet held up to its flows' ``send_jitter`` before its path's queue,
#: :attr:`pathpool.kernel.testbed.PathSpec.jitter_ms`).
SEND_JITTER_READINGS = ("off", "scenario")


def plan_jobs(jobs: Sequence[Job], ack_reading: str,
              max_duration_s: float = DEFAULT_MAX_DURATION_S,
              start_jitter: str = "off", send_jitter: str = "off") -> tuple[list[KernelJob], list[Skipped]]:
    """Map every job onto the test bed.

    With ``start_jitter = "scenario"`` each flow starts at the simulator's start for the job's
    seed (its ``start`` plus the jitter Rust draws, :func:`pathpool.kernel.mapping.start_offsets`),
    so the plan, and its cache key, carry the offsets; ``"off"`` leaves every plan as before.
    With ``send_jitter = "scenario"`` each path's data is held up to its flows' ``send_jitter``
    (:func:`pathpool.kernel.mapping.map_scenario`), which the plan and its key carry; ``"off"``
    leaves every plan as before.

    An algorithm of an experiment runs on the kernel for every seed and swept value or not at
    all: if one of its jobs cannot be expressed, all of them are listed (one :class:`Skipped`
    per experiment and algorithm, with the mapping's reason), so a kernel mean never mixes
    points that ran with points that did not. The experiment's other algorithms still run
    (Balia's tables: LIA, OLIA and Balia have kernel versions, EWTCP, Semicoupled, Max and
    Coupled do not).

    Returns
    -------
    (runnable, skipped)
    """
    from pathpool.kernel.mapping import map_scenario, start_offsets

    if start_jitter not in START_JITTER_READINGS:
        raise ValueError(f"start_jitter = {start_jitter!r} (allowed: {', '.join(START_JITTER_READINGS)})")
    if send_jitter not in SEND_JITTER_READINGS:
        raise ValueError(f"send_jitter = {send_jitter!r} (allowed: {', '.join(SEND_JITTER_READINGS)})")
    mapped: dict[tuple[str, str], list[KernelJob]] = {}
    bad: dict[tuple[str, str], str] = {}
    for j in jobs:
        key = (j.tags["experiment"], j.tags["run_algorithm"])
        if key in bad:
            continue
        sc = kernel_scenario(j.scenario, ack_reading)
        try:
            offsets = start_offsets(sc, j.seed) if start_jitter == "scenario" else None
            plan = map_scenario(sc, max_duration_s=max_duration_s, kernel_tcp=True, start_offsets=offsets,
                                send_jitter=send_jitter == "scenario")
        except ScenarioError as e:
            # The scenario is built in memory: its origin ("<dict>") names nothing for a reader.
            bad[key] = str(e).splitlines()[0].removeprefix("<dict>: ")
            continue
        mapped.setdefault(key, []).append(KernelJob(Job(sc, j.seed, dict(j.tags)), plan))
    runnable = [kj for key, kjs in mapped.items() if key not in bad for kj in kjs]
    skipped = [Skipped(exp, alg, reason) for (exp, alg), reason in bad.items()]
    return runnable, skipped


def check_kernel() -> None:
    """Raise :class:`pathpool.kernel.loader.KernelError` (one line) unless the Linux backend can run."""
    from pathpool.kernel import loader

    if os.geteuid() != 0:
        raise loader.KernelError("--backend linux needs root (network namespaces, tc, nftables, BPF "
                                 "struct_ops); run as root, or use --backend sim")
    problems = loader.check_environment(need_toolchain=False)
    if problems:
        raise loader.KernelError("--backend linux cannot run here: " + "; ".join(problems))


def default_beds() -> int:
    """Test beds side by side: three per two cores. Measured on a 2-core VM (RSF Table 2 scenario
    1, 18 runs): one bed's forwarders and senders take about 15% of a core at 20 Mbit/s; three
    beds ran 3.2x faster than one with every mean within 4% of one bed's and inside its CI."""
    return max(1, (3 * (os.cpu_count() or 1)) // 2)


def cache_root(out: Path) -> Path:
    """Where the kernel's runs are cached: per kernel release (another kernel, other numbers)."""
    return out / "cache-linux" / platform.release()


def _tagged(results: Any, tags: dict) -> dict[str, pd.DataFrame]:
    out = {}
    for name in TABLES:
        df = getattr(results, name).copy()
        for i, (k, v) in enumerate(tags.items()):
            df.insert(i, k, v)
        out[name] = df.reset_index(drop=True)
    return out


def _cached(cache: Cache, kj: KernelJob) -> bool:
    """True if ``kj`` is in the cache; an entry of the first layout (keyed by the job's scenario
    text) is copied to the plan's key on the way, with the job's own tags."""
    if cache.has(kj):
        return True
    if not cache.has(kj.job):
        return False
    cache.store(kj, _retag(cache.load(kj.job), kj.job.tags))
    return True


def _retag(tables: dict[str, pd.DataFrame], tags: dict) -> dict[str, pd.DataFrame]:
    """``tables`` with the tag columns set to ``tags``: jobs of different experiments whose plans
    are equal (Fig. 2 at 4 MB and Table 2 scenario 2; Table 2's single-path TCP in scenarios 0 and
    1) share one cached run, stored with the tags of whichever ran first."""
    for df in tables.values():
        for k, v in tags.items():
            if k in df.columns:
                df[k] = v
    return tables


def _run_one(kj: KernelJob, prefix: str, beds: list, lock: threading.Lock,
             stop: threading.Event) -> dict[str, pd.DataFrame]:
    """One job on a fresh test bed named ``prefix`` (registered in ``beds`` while it is up)."""
    from pathpool.kernel.loader import KernelError
    from pathpool.kernel.run import results_from_raw, run_once, testbed_for
    from pathpool.sim.scenario import load_scenario

    plan = kj.plan
    tb = testbed_for(plan, prefix)
    with lock:
        beds.append(tb)
    try:
        with tb:
            if stop.is_set():   # the run was stopped while this bed was coming up
                raise KernelError("stopped")
            run = run_once(tb, plan, kj.job.seed)
    finally:
        with lock:
            beds.remove(tb)
    res = results_from_raw(plan, [run], load_scenario(kj.job.scenario))
    return _tagged(res, kj.job.tags)


def run_kernel_jobs(
    kjobs: Sequence[KernelJob],
    cache_dir: str | os.PathLike,
    *,
    force: bool = False,
    beds: int = 1,
    progress: Callable[[int, int], Any] | None = None,
    cache_only: bool = False,
) -> dict[str, pd.DataFrame]:
    """Run (or take from the cache) every kernel job and merge their tables in job order.

    Parameters
    ----------
    kjobs : sequence of KernelJob
        From :func:`plan_jobs`.
    cache_dir : path
        The kernel cache (:func:`cache_root`).
    force : bool
        Run again even if cached.
    beds : int
        Test beds side by side (at least 1).
    progress : callable, optional
        ``progress(done, total)`` after each job.
    cache_only : bool
        Run nothing: every job must be cached (else the error below, before any run).

    Returns
    -------
    dict of DataFrame
        ``flows``, ``subflows``, ``links``, ``series`` with the job tags as leading columns.

    Raises
    ------
    pathpool.kernel.loader.KernelError
        Loading the controls, building a test bed or a transfer failed (one line); with
        ``cache_only``, a job is not in the cache.
    """
    from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait

    from pathpool.kernel import loader
    from pathpool.kernel.run import ensure_loaded

    if beds < 1:
        raise ValueError(f"beds = {beds}: must be at least 1")
    cache = Cache(cache_dir, sim_columns=False)
    results: list[dict[str, pd.DataFrame] | None] = [None] * len(kjobs)
    # Batches of jobs whose tunables agree (a key set by one is unset or equal in the others):
    # each batch loads the pp_* controls once, with the union of its tunables.
    batches: list[tuple[dict, list[int]]] = []
    for i, kj in enumerate(kjobs):
        if not force and _cached(cache, kj):
            results[i] = _retag(cache.load(kj), kj.job.tags)
            continue
        tun = kj.plan.tunables
        for merged_tun, idx in batches:
            if all(merged_tun.get(k, v) == v for k, v in tun.items()):
                merged_tun.update(tun)
                idx.append(i)
                break
        else:
            batches.append((dict(tun), [i]))
    missing = [kjobs[i] for _, idx in batches for i in idx]
    if cache_only and missing:
        t = missing[0].job.tags
        raise loader.KernelError(f"{len(missing)} of {len(kjobs)} kernel runs are not in the cache {cache_dir} "
                                 f"(first: {t['experiment']} {t['run_algorithm']} seed {missing[0].job.seed}); "
                                 "cache-only runs none")
    done = sum(r is not None for r in results)
    if progress:
        progress(done, len(kjobs))
    active: list = []
    lock = threading.Lock()
    stop = threading.Event()
    free = [BED_PREFIX.format(k) for k in range(beds)]
    for tunables, idx in batches:
        need = sorted({n for i in idx for n in kjobs[i].plan.kernel_algorithms()})
        loaded_here = ensure_loaded(need, tunables)
        try:
            with ThreadPoolExecutor(max_workers=beds) as pool:
                pending: dict = {}
                queue = list(idx)
                try:
                    while queue or pending:
                        while queue and free:
                            i = queue.pop(0)
                            prefix = free.pop(0)
                            fut = pool.submit(_run_one, kjobs[i], prefix, active, lock, stop)
                            pending[fut] = (i, prefix)
                        finished, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                        for fut in finished:
                            i, prefix = pending.pop(fut)
                            free.append(prefix)
                            tables = fut.result()
                            cache.store(kjobs[i], tables)
                            results[i] = _retag(cache.load(kjobs[i]), kjobs[i].job.tags)
                            done += 1
                            if progress:
                                progress(done, len(kjobs))
                except BaseException:
                    # Ctrl-C / SIGTERM / a failed run: take every test bed down now (its senders
                    # die with its namespaces, so the other workers return at once instead of
                    # after their runs) before the pool waits for them.
                    stop.set()
                    for fut in pending:
                        fut.cancel()
                    with lock:
                        for tb in active:
                            tb.down()
                    raise
        finally:
            if loaded_here:
                loader.unload()
    merged = {}
    for name in TABLES:
        parts = [r[name] for r in results if r is not None and len(r[name])]
        merged[name] = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    return merged
