"""The one process pool of pathpool: tasks in spawned worker processes that stop with their parent.

Used by :func:`pathpool.run` (one task per seed) and :func:`pathpool.sweep.run_sweep` (one task
per job). What it adds to :class:`concurrent.futures.ProcessPoolExecutor`:

- any exception in the parent while tasks run (Ctrl-C's ``KeyboardInterrupt``, SIGTERM's
  :class:`pathpool.errors.Terminated`, an error in a result handler) kills the workers at once,
  instead of waiting for the tasks under way to finish;
- a worker whose parent died (SIGKILL, a crash) notices within :data:`WATCH_EVERY_S` seconds and
  exits: a thread in each worker compares ``os.getppid()`` with the parent it started under (the
  simulation itself runs without the GIL, so the thread runs beside it);
- a worker that dies is reported as :class:`pathpool.errors.SimulationError` naming the task.

This module imports nothing heavy, so that spawned workers start fast.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from pathpool.errors import SimulationError

__all__ = ["WATCH_EVERY_S", "check_jobs", "default_jobs", "imap_unordered"]

#: How often a worker checks that its parent is alive, seconds.
WATCH_EVERY_S = 0.2


def default_jobs(n_tasks: int) -> int:
    """Worker processes for ``n_tasks`` tasks: one per usable core, never more than tasks.

    Examples
    --------
    >>> default_jobs(1)
    1
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    return max(1, min(cores, n_tasks))


def check_jobs(jobs: int | None, n_tasks: int) -> int:
    """Worker processes to use: ``None`` means :func:`default_jobs`; otherwise at least 1.

    Raises
    ------
    ValueError
        ``jobs`` is below 1 (0 does not mean "all cores": None does).

    Examples
    --------
    >>> check_jobs(None, 1), check_jobs(8, 3)
    (1, 3)
    """
    if jobs is None:
        return default_jobs(n_tasks)
    if isinstance(jobs, bool) or int(jobs) != jobs or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1 (or None for one per core), got {jobs!r}")
    return max(1, min(int(jobs), n_tasks))


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(WATCH_EVERY_S)
        if os.getppid() != parent:
            os._exit(1)


def _init_worker(parent: int, initializer: Callable[..., Any] | None, initargs: tuple[Any, ...]) -> None:
    # Ctrl-C in a terminal reaches the whole process group; the parent alone handles it (and
    # kills the workers), so that no worker prints a KeyboardInterrupt traceback of its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent,), name="pathpool-parent-watch", daemon=True).start()
    if initializer is not None:
        initializer(*initargs)


def _kill_workers(pool: ProcessPoolExecutor) -> None:
    # The executor has no public way to stop tasks under way; its process table is the only
    # handle on the workers. SIGKILL, not SIGTERM: a worker inside the simulator must not get
    # to finish its seed first.
    procs = list((getattr(pool, "_processes", None) or {}).values())
    # Taken before shutdown(), which drops the executor's reference to it.
    manager = getattr(pool, "_executor_manager_thread", None)
    for p in procs:
        if p.is_alive():
            p.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        p.join(timeout=5)
    # Let the executor's manager thread see the dead workers and close its wake-up pipe now:
    # otherwise the interpreter's exit hook (concurrent.futures.process._python_exit, 3.11) can
    # write to that pipe while the thread closes it, and prints an EBADF traceback after our
    # one-line "stopped" message. (Reading the thread after shutdown() found None, so this join
    # never happened and the race stayed: CI failure of stop 16.)
    if manager is not None:
        manager.join(timeout=5)


def imap_unordered(
    fn: Callable[..., Any],
    tasks: Sequence[tuple[Any, ...]],
    jobs: int,
    *,
    describe: Callable[[int], str],
    initializer: Callable[..., Any] | None = None,
    initargs: tuple[Any, ...] = (),
    idle: Callable[[], Any] | None = None,
) -> Iterator[tuple[int, Any]]:
    """Yield ``(i, fn(*tasks[i]))`` as each task finishes, in ``jobs`` spawned processes.

    Parameters
    ----------
    fn : callable
        A module-level function (it is pickled by name).
    tasks : sequence of tuple
        Arguments of each call.
    jobs : int
        Worker processes (at least 1).
    describe : callable
        ``describe(i)`` names task ``i`` in the error raised when its worker dies.
    initializer, initargs
        Run once in each worker, as for ``ProcessPoolExecutor``.
    idle : callable, optional
        Called about every 0.1 s while waiting (e.g. to drain a progress queue).

    Raises
    ------
    SimulationError
        A worker process died (killed, or crashed outside Python).

    Examples
    --------
    >>> sorted(imap_unordered(abs, [(-1,), (-2,)], 2, describe=str))  # doctest: +SKIP
    [(0, 1), (1, 2)]
    """
    # spawn, not fork: the parent may have threads (rich's refresher, BLAS pools) and forking a
    # threaded process can deadlock the child.
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(
        max_workers=jobs, mp_context=ctx, initializer=_init_worker, initargs=(os.getpid(), initializer, initargs)
    )
    try:
        futures = {pool.submit(fn, *args): i for i, args in enumerate(tasks)}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
            if idle is not None:
                idle()
            for fut in done:
                i = futures[fut]
                try:
                    result = fut.result()
                except BrokenProcessPool as e:
                    raise SimulationError(
                        f"a worker process died while running {describe(i)} (killed, or crashed outside Python): {e}"
                    ) from None
                yield i, result
    except BaseException:
        _kill_workers(pool)
        raise
    pool.shutdown(wait=True)
