"""The process pool stops its workers and its manager thread when the parent gives up."""

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import process as cf_process

from pathpool import procpool


def test_kill_workers_leaves_no_manager_thread_for_the_exit_hook(monkeypatch):
    # The interpreter's exit hook (concurrent.futures.process._python_exit) writes to the
    # manager thread's wake-up pipe; if that thread is closing the pipe at the same moment, an
    # EBADF traceback follows pathpool's one-line "stopped" message (CI, stop 16). _kill_workers
    # must therefore return only once the manager thread has closed it. A manager thread slowed
    # down on its way out makes the window wide enough to see every time.
    slow_out = cf_process._ExecutorManagerThread.join_executor_internals

    def join_executor_internals(self):
        time.sleep(1.0)
        slow_out(self)

    monkeypatch.setattr(cf_process._ExecutorManagerThread, "join_executor_internals", join_executor_internals)
    pool = ProcessPoolExecutor(max_workers=2, mp_context=multiprocessing.get_context("spawn"))
    futures = [pool.submit(time.sleep, 30) for _ in range(2)]
    deadline = time.monotonic() + 30
    while len(pool._processes or {}) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    manager = pool._executor_manager_thread
    wakeup = pool._executor_manager_thread_wakeup
    assert manager is not None and manager.is_alive()
    procpool._kill_workers(pool)
    assert not manager.is_alive()
    assert wakeup._closed
    assert all(f.done() for f in futures)
