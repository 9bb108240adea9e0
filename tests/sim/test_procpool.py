"""The process pool stops its workers, and leaves no thread, when the parent gives up."""

import multiprocessing

from pathpool import procpool


def _big(i: int) -> bytes:
    # Large enough that a worker is still writing it into the pipe when the parent gives up.
    return bytes(64 << 20) if i else b"first"


def _children_alive() -> list[int]:
    import os
    from pathlib import Path

    me = str(os.getpid())
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                stat = (p / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            # multiprocessing's resource tracker lives as long as this process, by design
            if stat[1] == me and stat[0] != "Z" and b"resource_tracker" not in (p / "cmdline").read_bytes():
                out.append(int(p.name))
    return out


def test_interrupt_while_workers_write_results_leaves_no_thread_or_process():
    # A worker killed half-way through writing its result left the executor's manager thread
    # blocked in os.read for ever (the parent holds the pipe's other end, so no EOF came), and
    # the interpreter's exit hook joined that thread: Ctrl-C hung. Nothing may outlive the
    # exception: no thread, no worker process.
    import threading

    import pytest

    before = set(threading.enumerate())
    results = []

    def stop_after_first():
        if results:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        for i, r in procpool.imap_unordered(_big, [(i,) for i in range(4)], 3, describe=str, idle=stop_after_first):
            results.append(i)
    assert set(threading.enumerate()) <= before
    assert multiprocessing.active_children() == []
    assert _children_alive() == []
