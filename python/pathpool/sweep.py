"""Sweeps: many (scenario, seed) runs, on all local cores or on a Dask cluster.

A sweep is a list of :class:`Job`. Each job is one scenario (a dict, already expanded from any
parameter grid) and one seed. Running a job calls :func:`pathpool.run` and keeps its tables.

Results are cached on disk, one directory per job, keyed by a hash of the job's canonical content
(scenario, seed, pathpool version), so an interrupted sweep resumes where it stopped and a repeated
sweep costs nothing; ``force=True`` recomputes. Jobs are merged in the order given, never in the
order they finished, so the merged tables do not depend on the schedule or on the executor: a
local run and a Dask run of the same sweep give identical bytes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from pathpool.atomic import atomic_path
from pathpool.errors import ClusterError
from pathpool.procpool import check_jobs, imap_unordered
from pathpool.sim.scenario import Scenario

TABLES = ("flows", "subflows", "links", "series")

#: Seconds to wait for a remote Dask scheduler before giving up.
DASK_CONNECT_TIMEOUT_S = 10.0
#: Seconds a stopping sweep waits for its Dask client and local cluster to close.
DASK_CLOSE_TIMEOUT_S = 2.0


@dataclasses.dataclass(frozen=True)
class Job:
    """One simulator run.

    Parameters
    ----------
    scenario : Scenario or dict
        The validated scenario (:func:`pathpool.load_scenario`, overrides applied), or a dict
        of the TOML structure.
    seed : int
        The run's seed.
    tags : dict
        Labels copied into every row of every table of the job (e.g. ``{"algorithm": "lia",
        "file_mb": 4}``), so that sweeps can be grouped without parsing the scenario again.
        Tags do not enter the cache key.
    """

    scenario: Scenario | dict
    seed: int
    tags: dict = dataclasses.field(default_factory=dict)

    def key(self) -> str:
        """Content hash of the run: same scenario + seed + pathpool version + engine -> same key.
        The engine is ``pathpool._core.engine_id``, a hash of the simulator's and the algorithms'
        sources, so a cache never answers with runs of another simulator build."""
        from pathpool import __version__
        from pathpool._core import engine_id

        # A validated scenario is the text it runs, byte for byte (Rust renders overrides). Its
        # first line only names where it was loaded from (an absolute path when it comes from
        # the installed package): left out, so a cache still answers after the checkout or the
        # virtual environment moved; the rendering below it carries every override.
        scenario = _without_origin(self.scenario) if isinstance(self.scenario, Scenario) else self.scenario
        text = json.dumps(
            {"scenario": scenario, "seed": self.seed, "version": __version__, "engine": engine_id},
            sort_keys=True,
            separators=(",", ":"),
            default=str,
        )
        return hashlib.sha256(text.encode()).hexdigest()[:24]


def _without_origin(scenario: Scenario) -> str:
    """The scenario's text without the ``# ORIGIN [--set ...]`` line Rust's rendering starts with
    (a file read as is has no such line and keeps every byte)."""
    text = scenario.text
    head = "# " + scenario.origin.replace("\n", " ")
    first, _, rest = text.partition("\n")
    return rest if first == head or first.startswith(head + " --set ") else text


def run_job(job: Job) -> dict[str, pd.DataFrame]:
    """Run one job in this process and return its tables (tags added as leading columns)."""
    import pathpool

    res = pathpool.run(job.scenario, seeds=[job.seed])
    return tag(job, {name: getattr(res, name) for name in TABLES})


class Cache:
    """Per-job results on disk: ``DIR/<key>/<table>.parquet`` plus a ``done`` marker.

    The marker is written last, after every table has been renamed into place, so a crash
    mid-job leaves a directory that is simply recomputed. An entry holds the simulator's columns
    only, never a job's tags: the key leaves the tags out, so two sweeps that share a run (two
    grids with different axes into one folder) share its entry, and each labels the rows with
    its own tags when it loads them. An entry that cannot be read whole (a file missing or
    damaged) counts as absent and is run again.

    ``sim_columns = False`` keeps the tables as stored, tags included: the kernel backend's
    cache (:mod:`pathpool.reproduce.kernel`), whose tables have the kernel's columns and which
    re-tags a shared run's rows itself.
    """

    def __init__(self, root: str | os.PathLike, *, sim_columns: bool = True):
        self.root = Path(root)
        self.sim_columns = sim_columns

    def _dir(self, job: Job) -> Path:
        return self.root / job.key()

    def has(self, job: Job) -> bool:
        d = self._dir(job)
        return (d / "done").exists() and all((d / f"{name}.parquet").is_file() for name in TABLES)

    def load(self, job: Job) -> dict[str, pd.DataFrame] | None:
        """The entry's tables without tags (columns other than the simulator's, which entries
        written by older versions carry, are dropped), or None when it cannot be read."""
        import pyarrow as pa

        from pathpool.sim.schema import column_names

        d = self._dir(job)
        out = {}
        try:
            for name in TABLES:
                df = pd.read_parquet(d / f"{name}.parquet")
                if not self.sim_columns:
                    out[name] = df
                    continue
                own = column_names(name)
                if not len(df.columns) and not len(df):
                    out[name] = df
                    continue
                if not set(own) <= set(df.columns):
                    return None
                out[name] = df[own] if list(df.columns) != own else df
        except (OSError, ValueError, pa.ArrowException):
            return None
        return out

    def store(self, job: Job, tables: dict[str, pd.DataFrame]) -> None:
        from pathpool.sim.schema import column_names

        d = self._dir(job)
        (d / "done").unlink(missing_ok=True)
        d.mkdir(parents=True, exist_ok=True)
        for name in TABLES:
            df = tables[name]
            own = column_names(name) if self.sim_columns else list(df.columns)
            if len(df.columns) and list(df.columns) != own:
                df = df[own]
            atomic_path(d / f"{name}.parquet", lambda tmp, df=df: df.to_parquet(tmp, index=False))
        (d / "done").write_text(job.key())

    def clean_orphans(self) -> int:
        """Remove the temporaries of writers killed before their rename (``.NAME.XXXX.tmp.parquet``).

        Only while holding the cache's lock (:func:`run_sweep` does): then no live writer owns
        them. Returns how many were removed.
        """
        n = 0
        if not self.root.is_dir():
            return 0
        for entry in self.root.iterdir():
            if not entry.is_dir():
                continue
            for p in entry.iterdir():
                if p.name.startswith(".") and ".tmp" in p.name:
                    p.unlink(missing_ok=True)
                    n += 1
        return n


def tag(job: Job, tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """``tables`` with ``job``'s tags as leading columns (a copy).

    Raises
    ------
    ValueError
        A tag has the name of a column of a table.
    """
    out = {}
    for name in TABLES:
        df = tables[name].copy()
        clash = [k for k in job.tags if k in df.columns]
        if clash:
            raise ValueError(f"job tags {clash} clash with columns of the {name} table; rename the tags")
        for i, (k, v) in enumerate(job.tags.items()):
            df.insert(i, k, v)
        out[name] = df.reset_index(drop=True)
    return out


def _dask_client(dask: str, workers: int | None) -> tuple[Any, Any]:
    """A client (and the cluster it started, or None) for ``dask``: "local" or an address."""
    from distributed import Client, LocalCluster

    if dask == "local":
        cluster = LocalCluster(
            n_workers=workers or os.cpu_count() or 1,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            # Worker processes log to this terminal; their warnings (e.g. about tasks cancelled
            # by a Ctrl-C) would follow the command's one error line.
            silence_logs=logging.ERROR,
        )
        return Client(cluster), cluster
    try:
        return Client(dask, timeout=DASK_CONNECT_TIMEOUT_S), None
    except (OSError, TimeoutError, ValueError) as e:
        raise ClusterError(
            f"--dask {dask}: cannot reach a Dask scheduler there within {DASK_CONNECT_TIMEOUT_S:g} s "
            f"({type(e).__name__}: {e}); give tcp://HOST:PORT of a running scheduler, or 'local'"
        ) from None


def _executor_map(
    jobs: Sequence[Job], workers: int | None, dask: str | None
) -> Iterable[tuple[int, dict[str, pd.DataFrame]]]:
    """Yield (index, tables) for each job as it completes."""
    if dask:
        from distributed import as_completed as dask_completed

        client, cluster = _dask_client(dask, workers)
        try:
            futures = {client.submit(run_job, job, pure=False): i for i, job in enumerate(jobs)}
            for fut in dask_completed(futures):
                yield futures[fut], fut.result()
        except BaseException:
            # Stopped (Ctrl-C, SIGTERM, an error): the workers' notes about the tasks cancelled
            # under them would follow the command's one error line; a prompt, quiet shutdown.
            logging.getLogger("distributed").setLevel(logging.CRITICAL)
            client.cancel(list(futures) if "futures" in locals() else [], force=True)
            raise
        finally:
            client.close(timeout=DASK_CLOSE_TIMEOUT_S)
            if cluster is not None:
                cluster.close(timeout=DASK_CLOSE_TIMEOUT_S)
        return
    n = check_jobs(workers, len(jobs))
    if n > 1:
        from pathpool._mainguard import safe_workers

        n = safe_workers(n)
    if n == 1:
        for i, job in enumerate(jobs):
            yield i, run_job(job)
        return
    yield from imap_unordered(run_job, [(job,) for job in jobs], n, describe=lambda i: f"sweep job {jobs[i].key()}")


def run_sweep(
    jobs: Sequence[Job],
    *,
    cache_dir: str | os.PathLike | None = None,
    force: bool = False,
    workers: int | None = None,
    dask: str | None = None,
    progress: Callable[[int, int], Any] | None = None,
) -> dict[str, pd.DataFrame]:
    """Run every job (reusing cached results) and merge their tables in job order.

    Parameters
    ----------
    jobs : sequence of Job
    cache_dir : path, optional
        Where per-job results are kept; ``None`` keeps nothing. Held locked while the sweep runs;
        entries that cannot be read whole are run again.
    force : bool
        Recompute jobs even if cached.
    workers : int, optional
        Local processes (default: one per core, at most one per job; at least 1) or, with
        ``dask="local"``, local Dask workers.
    dask : str, optional
        ``None`` for local processes; ``"local"`` to start a local Dask cluster; otherwise the
        address of an existing scheduler (``"tcp://host:8786"``).
    progress : callable, optional
        Called as ``progress(done, total)`` after each job.

    Returns
    -------
    dict of str to pandas.DataFrame
        ``flows``, ``subflows``, ``links``, ``series``: every job's rows, in job order.

    Raises
    ------
    ValueError
        ``workers`` is below 1.
    pathpool.errors.ClusterError
        The Dask scheduler ``dask`` cannot be reached.
    pathpool.errors.OutputError
        Another process is running a sweep with the same ``cache_dir``.
    """
    if cache_dir is None:
        return _run_sweep(jobs, None, force, workers, dask, progress)
    from pathpool.atomic import directory_lock

    # One sweep per cache at a time: a second is refused (OutputError) instead of both writing
    # the same entries; and under the lock, temporaries left by a killed writer are no one's.
    with directory_lock(cache_dir):
        cache = Cache(cache_dir)
        cache.clean_orphans()
        return _run_sweep(jobs, cache, force, workers, dask, progress)


def _run_sweep(jobs: Sequence[Job], cache: Cache | None, force: bool, workers: int | None, dask: str | None,
               progress: Callable[[int, int], Any] | None) -> dict[str, pd.DataFrame]:
    results: list[dict[str, pd.DataFrame] | None] = [None] * len(jobs)
    todo = []
    for i, job in enumerate(jobs):
        loaded = cache.load(job) if cache is not None and not force and cache.has(job) else None
        if loaded is not None:
            results[i] = tag(job, loaded)
        else:
            todo.append(i)
    done = len(jobs) - len(todo)
    if progress:
        progress(done, len(jobs))
    pending = [jobs[i] for i in todo]
    for j, tables in _executor_map(pending, workers, dask):
        i = todo[j]
        if cache is not None:
            cache.store(jobs[i], tables)
            # Reload so a fresh result and a cached one are the same bytes (parquet round trip).
            loaded = cache.load(jobs[i])
            if loaded is None:
                raise OSError(f"{cache.root}: the entry just written for job {jobs[i].key()} cannot be read back")
            tables = tag(jobs[i], loaded)
        results[i] = tables
        done += 1
        if progress:
            progress(done, len(jobs))
    merged = {}
    for name in TABLES:
        frames = [r[name] for r in results if r is not None and len(r[name])]
        merged[name] = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return merged
