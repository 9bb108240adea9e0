"""The connection entry's lifetime across `pathpool kernel unload` (root, real kernel).

The lifetime itself (claim / join / release, pp_conn_life.h) is tested on the host
(test_kernel.py: life_test, life_test_v0) and under connection churn on the kernel
(test_kernel.py: test_entry_lifetime_under_connection_churn). This module loads and unloads on
its own, so it cannot share test_kernel.py's module-wide loader.
"""

from __future__ import annotations

import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from pathpool.kernel import loader
from pathpool.kernel.testbed import FlowSpec, PathSpec, Testbed, acked_rate_bps, wait_gone

pytestmark = pytest.mark.kernel


def _maps_of(prog_id: int) -> dict[str, int]:
    """``{map name: map id}`` of BPF program ``prog_id``."""
    prog = json.loads(subprocess.run(["bpftool", "prog", "show", "id", str(prog_id), "-j"],
                                     capture_output=True, text=True, check=True).stdout)
    out = {}
    for mid in prog.get("map_ids", []):
        info = json.loads(subprocess.run(["bpftool", "map", "show", "id", str(mid), "-j"],
                                         capture_output=True, text=True, check=True).stdout)
        out[info.get("name", "")] = mid
    return out


def _map_exists(map_id: int) -> bool:
    return subprocess.run(["bpftool", "map", "show", "id", str(map_id)], capture_output=True,
                          check=False).returncode == 0


def _dump(map_id: int) -> list[dict]:
    return json.loads(subprocess.run(["bpftool", "map", "dump", "id", str(map_id), "-j"],
                                     capture_output=True, text=True, check=True).stdout)


def test_unload_with_live_connections(kernel_unclaimed):
    """`pathpool kernel unload` while an MPTCP connection runs pp_lia: the algorithm is
    unregistered at once (no new socket can pick it), the connection keeps its control and
    carries on, and once its subflows are gone (released, each dropping its entry reference)
    the kernel frees the control's maps: nothing of it stays."""
    got = loader.load(("pp_lia",), rebuild=False)
    try:
        maps = _maps_of(got.prog_ids["pp_lia"]["pp_init"])
        ids_map = maps["pp_conn_ids"]
        flows = [FlowSpec("m", "mptcp", "pp_lia", 0)]
        with Testbed([PathSpec(10.0, 5.0), PathSpec(10.0, 5.0)], prefix="ppk-") as tb, \
                ThreadPoolExecutor(1) as pool:
            fut = pool.submit(tb.run_flows, flows, 4.0)
            deadline = time.monotonic() + 2.0
            while not _dump(ids_map) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(_dump(ids_map)) == 1
            assert loader.unload() == ["pp_lia"]
            assert loader.registered() == []
            # Unregistered, but the running connection's entry and hint live on.
            assert len(_dump(ids_map)) == 1
            raw = fut.result()
        assert raw["senders"]["m"]["cc"] == "pp_lia"
        # The unload came before 2 s; the connection ran on, on both subflows, near the paths'
        # 20 Mbit/s together.
        assert acked_rate_bps(raw, "m", 2.5) > 0.5 * 20e6
        last = raw["senders"]["m"]["samples"][-1]["subflows"]
        assert len(last) == 2 and all(sf.get("bytes_acked", 0) > 0 for sf in last), last
        deadline = time.monotonic() + 15
        while any(_map_exists(m) for m in maps.values()) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [name for name, m in maps.items() if _map_exists(m)]
        assert wait_gone("ppk-")
    finally:
        loader.unload()
