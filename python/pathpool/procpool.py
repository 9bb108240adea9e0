"""The one process pool of pathpool: tasks in spawned worker processes that stop with their parent.

Used by :func:`pathpool.run` (one task per seed) and :func:`pathpool.sweep.run_sweep` (one task
per job). Each worker has a pipe of its own to the parent and the parent's main thread does all
the reading: there is no reader thread in the parent, so nothing can be left waiting on a pipe
when the parent stops. (``concurrent.futures.ProcessPoolExecutor`` reads results in a thread
of its own; a worker killed half-way through writing a large result left that thread blocked
in ``os.read`` for ever, and the interpreter's exit waited for the thread: Ctrl-C hung.)

- any exception in the parent while tasks run (Ctrl-C's ``KeyboardInterrupt``, SIGTERM's
  :class:`pathpool.errors.Terminated`, an error in a task or in the consumer) SIGKILLs the
  workers and reaps them before it propagates; the parent closed its copy of each worker's end
  of the pipe, so a worker that dies mid-write is seen as EOF, never as a read that waits;
- the workers run in process groups of their own and ignore SIGINT: a terminal's Ctrl-C (sent
  to its foreground process group) reaches the parent alone, which decides; no worker prints a
  KeyboardInterrupt traceback of its own, even one hit while its interpreter starts;
- a worker whose parent died (SIGKILL, a crash) notices within :data:`WATCH_EVERY_S` seconds and
  exits: a thread in each worker compares ``os.getppid()`` with the parent it started under (the
  simulation itself runs without the GIL, so the thread runs beside it);
- a worker that dies is reported as :class:`pathpool.errors.SimulationError` naming the task.

This module imports nothing heavy, so that spawned workers start fast.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

from pathpool.errors import SimulationError, Terminated, signals_deferred

__all__ = ["WATCH_EVERY_S", "check_jobs", "default_jobs", "imap_unordered"]

#: How often a worker checks that its parent is alive, seconds.
WATCH_EVERY_S = 0.2

#: Seconds the parent waits for a worker it asked to stop (or killed) to exit.
REAP_TIMEOUT_S = 5.0

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


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


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker (set as the re-raised exception's cause)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(WATCH_EVERY_S)
        if os.getppid() != parent:
            os._exit(1)


def _serve(conn: Connection, parent: int, fn_pickled: bytes, initializer: Callable[..., Any] | None,
           initargs: tuple[Any, ...]) -> None:
    """A worker's life: run each task it is sent, answer ``(i, ok, value, traceback)``.

    ``fn`` comes pickled, so that its module (pandas and all, for a sweep) is imported only
    after SIGINT is ignored here: where workers cannot get a process group of their own (no
    ``os.posix_spawn``), a Ctrl-C reaching them during that import would otherwise end one
    with a KeyboardInterrupt traceback of its own.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent,), name="pathpool-parent-watch", daemon=True).start()
    fn = pickle.loads(fn_pickled)
    if initializer is not None:
        initializer(*initargs)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        i, args = task
        try:
            reply = (i, True, fn(*args), None)
        except BaseException as e:  # noqa: BLE001 - every failure goes back to the parent
            reply = (i, False, e, traceback.format_exc())
        try:
            conn.send(reply)
        except (BrokenPipeError, ConnectionError):
            return  # the parent is gone
        except Exception as e:  # noqa: BLE001 - the outcome does not pickle (nothing was written)
            conn.send((i, False, SimulationError(f"task {i}: its outcome cannot be sent back: {e!r}"), None))


def _spawn_in_own_group(path: str, args: Sequence[str], passfds: Sequence[int]) -> int:
    """``multiprocessing.util.spawnv_passfds`` with the child in a process group of its own.

    A terminal's Ctrl-C goes to its foreground process group; a worker outside it never gets
    one, not even while its interpreter starts (before any code of ours could ignore SIGINT,
    when it would die with a KeyboardInterrupt traceback). The parent, which does get it,
    stops the workers; a worker whose parent died exits by itself (:func:`_watch_parent`).
    """
    fds = sorted({int(fd) for fd in passfds})
    before = [os.get_inheritable(fd) for fd in fds]
    try:
        for fd in fds:
            os.set_inheritable(fd, True)
        return os.posix_spawn(path, list(args), os.environ, setpgroup=0)
    finally:
        for fd, was in zip(fds, before, strict=True):
            os.set_inheritable(fd, was)


@contextlib.contextmanager
def _own_group() -> Iterator[None]:
    """Spawn the processes started meanwhile in process groups of their own (where the
    system can: ``os.posix_spawn``); see :func:`_spawn_in_own_group`."""
    from multiprocessing import util

    if not hasattr(os, "posix_spawn") or os.name != "posix":
        yield
        return
    original = util.spawnv_passfds
    util.spawnv_passfds = _spawn_in_own_group
    try:
        yield
    finally:
        util.spawnv_passfds = original


class _Worker:
    __slots__ = ("conn", "proc", "task")

    def __init__(self, proc: Any, conn: Connection) -> None:
        self.proc = proc
        self.conn = conn
        self.task: int | None = None


def _start_workers(n: int, fn: Callable[..., Any], initializer: Callable[..., Any] | None,
                   initargs: tuple[Any, ...], workers: list[_Worker]) -> None:
    # spawn, not fork: the parent may have threads (rich's refresher, BLAS pools) and forking a
    # threaded process can deadlock the child.
    ctx = multiprocessing.get_context("spawn")
    fn_pickled = pickle.dumps(fn)
    for k in range(n):
        here, there = ctx.Pipe(duplex=True)
        proc = ctx.Process(target=_serve, args=(there, os.getpid(), fn_pickled, initializer, initargs),
                           name=f"pathpool-worker-{k}", daemon=True)
        # Not cut in half by a Ctrl-C: a worker spawned but not yet in `workers` would be left
        # to read half its start-up data and die with a traceback.
        with signals_deferred(), _own_group():
            try:
                proc.start()
            finally:
                # Only the worker holds this end now: its death is EOF on ours.
                there.close()
            workers.append(_Worker(proc, here))


def _stop_workers(workers: list[_Worker], kill: bool) -> None:
    with signals_deferred():
        if not kill:
            for w in workers:
                with contextlib.suppress(OSError):
                    w.conn.send(None)
        for w in workers:
            if kill and w.proc.exitcode is None:
                # SIGKILL, not SIGTERM: a worker inside the simulator must not get to finish its
                # task first.
                w.proc.kill()
        for w in workers:
            w.proc.join(REAP_TIMEOUT_S)
            if w.proc.exitcode is None:
                w.proc.kill()
                w.proc.join(REAP_TIMEOUT_S)
            w.conn.close()
            with contextlib.suppress(ValueError):
                w.proc.close()


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

    When the iteration ends early for any reason (an exception in a task, in ``idle``, in the
    consumer, Ctrl-C, SIGTERM, the consumer dropping the iterator), every worker is killed and
    reaped before the exception propagates: no process and no thread is left behind.

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
    Exception
        What ``fn`` raised in a worker, with the worker's traceback as its cause.

    Examples
    --------
    >>> sorted(imap_unordered(abs, [(-1,), (-2,)], 2, describe=str))  # doctest: +SKIP
    [(0, 1), (1, 2)]
    """
    workers: list[_Worker] = []
    finished = False
    try:
        _start_workers(max(1, min(jobs, len(tasks))), fn, initializer, initargs, workers)
        next_task = 0
        left = len(tasks)

        def hand_out(w: _Worker) -> None:
            nonlocal next_task
            if next_task < len(tasks):
                w.task = next_task
                w.conn.send((next_task, tuple(tasks[next_task])))
                next_task += 1

        for w in workers:
            hand_out(w)
        while left:
            busy = [w for w in workers if w.task is not None]
            ready = set(wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=0.1))
            if idle is not None:
                idle()
            for w in busy:
                if w.conn not in ready and w.proc.sentinel not in ready:
                    continue
                i = w.task
                assert i is not None
                try:
                    _, ok, value, tb = w.conn.recv()
                except (EOFError, OSError):
                    w.proc.join(REAP_TIMEOUT_S)
                    # Workers ignore SIGINT once started; one that died of it was hit while its
                    # interpreter started (a system without posix_spawn, where workers share the
                    # terminal's process group, so this process got the Ctrl-C too; SIGTERM to
                    # the group likewise): the user's stop, not a failure.
                    if w.proc.exitcode == -signal.SIGINT:
                        raise KeyboardInterrupt from None
                    if w.proc.exitcode == -signal.SIGTERM:
                        raise Terminated(signal.SIGTERM) from None
                    raise SimulationError(
                        f"a worker process died while running {describe(i)} (killed, or crashed outside "
                        f"Python; exit code {w.proc.exitcode})"
                    ) from None
                w.task = None
                left -= 1
                hand_out(w)
                if not ok:
                    if tb:
                        value.__cause__ = RemoteTraceback(tb)
                    raise value
                yield i, value
        finished = True
    finally:
        _stop_workers(workers, kill=not finished)
