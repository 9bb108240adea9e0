"""The four earlier multipath designs on the kernel: pp_ewtcp, pp_coupled, pp_semicoupled, pp_max.

Their arithmetic is checked against pathpool-cc by the host test and the fuzz test
(tests/kernel/test_kernel.py runs both on kernel/test/vectors.json); here: the weights' range
is refused by the loader before anything loads, the weights reach the BPF objects' tunables,
and each control carries a real 2-subflow MPTCP transfer with every subflow reporting it
(inet_diag's congestion-control name, what ``ss -ti`` prints). Root, BTF, MPTCP and the BPF
toolchain are needed for the kernel part; the tests skip saying what is missing.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from pathpool.kernel import loader
from pathpool.kernel.testbed import FlowSpec, PathSpec, Testbed, records, wait_gone

pytestmark = pytest.mark.kernel

FAMILY = ("pp_ewtcp", "pp_coupled", "pp_semicoupled", "pp_max")
PORT = 5201


@pytest.mark.parametrize("kwargs", [{"ewtcp_a": 3.0}, {"ewtcp_a": 0.0}, {"semicoupled_a": 5e-5},
                                    {"semicoupled_a": float("nan")}])
def test_load_refuses_a_weight_outside_the_range(kwargs):
    """Refused before the environment is even looked at: nothing is started or registered."""
    with pytest.raises(loader.KernelError, match=r"_a = .*allowed 0\.0001 <= a <= 2"):
        loader.load(("pp_ewtcp",), **kwargs)


@pytest.mark.parametrize("arg", ["ewtcp_a=2.5", "semicoupled_a=0.00001", "ewtcp_a=x"])
def test_pp_loader_refuses_a_weight_outside_the_range(arg):
    if not loader.LOADER.exists():
        pytest.skip("kernel/build/pp_loader not built (make -C kernel runtime)")
    proc = subprocess.run([str(loader.LOADER), "--set", arg, str(loader.object_path("pp_ewtcp"))],
                          capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode == 2
    assert proc.stdout.startswith(f"error - args: bad --set {arg}") and "1e-4 <= X <= 2" in proc.stdout
    assert "registered" not in proc.stdout


def _data_tunables(prog_id: int) -> dict:
    """The pp_tun variable of the object that program ``prog_id`` belongs to (its .data map)."""
    prog = json.loads(subprocess.run(["bpftool", "prog", "show", "id", str(prog_id), "-j"],
                                     capture_output=True, text=True, check=True).stdout)
    for mid in prog.get("map_ids", []):
        info = json.loads(subprocess.run(["bpftool", "map", "show", "id", str(mid), "-j"],
                                         capture_output=True, text=True, check=True).stdout)
        if info.get("name", "").endswith(".data"):
            dump = json.loads(subprocess.run(["bpftool", "map", "dump", "id", str(mid), "-j"],
                                             capture_output=True, text=True, check=True).stdout)
            # bpftool 7: [{"formatted": {"value": {".data": [{"pp_tun": {...}}]}}}]
            for var in dump[0]["formatted"]["value"][".data"]:
                if "pp_tun" in var:
                    return var["pp_tun"]
    raise AssertionError(f"no pp_tun in the maps of program {prog_id}")


def test_weights_reach_the_bpf_objects(kernel_unclaimed):
    """The loader writes a * 2^32 rounded into each object's tunables (pp_tunables.h); without
    a weight EWTCP keeps 0 (= 1/n^2 from the connection's subflows) and Semicoupled 2^32."""
    got = loader.load(("pp_ewtcp", "pp_semicoupled"), rebuild=False, ewtcp_a=0.3,
                      semicoupled_a=0.5)
    try:
        for algo in ("pp_ewtcp", "pp_semicoupled"):
            tun = _data_tunables(got.prog_ids[algo]["pp_cong_avoid"])
            assert tun["ewtcp_a_q32"] == round(0.3 * 2**32)
            assert tun["semicoupled_a_q32"] == 2**31
        assert json.loads(loader.TUNABLES_FILE.read_text())["ewtcp_a"] == 0.3
    finally:
        loader.unload()
    got = loader.load(("pp_ewtcp",), rebuild=False)
    try:
        tun = _data_tunables(got.prog_ids["pp_ewtcp"]["pp_cong_avoid"])
        assert (tun["ewtcp_a_q32"], tun["semicoupled_a_q32"]) == (0, 2**32)
    finally:
        loader.unload()
    assert loader.registered() == []


@pytest.fixture(scope="module")
def family_loaded(kernel_unclaimed):
    got = loader.load(FAMILY, rebuild=False)
    assert sorted(got.names) == sorted(FAMILY)
    yield got
    loader.unload()
    assert loader.registered() == []


def _subflow_ccs(tb: Testbed) -> list[str]:
    """Congestion-control name of every established TCP socket (MPTCP subflows are TCP
    sockets) from the client to the server port, as inet_diag reports it (``ss -ti``)."""
    out = tb.ns(tb.ns_c, "ss", "-Htin", "state", "established", f"dport = :{PORT}",
                check=False).stdout
    # Each socket's details name its congestion control right before "wscale:" (after the
    # options: "ts sack pp_coupled wscale:7,7 rto:...").
    return re.findall(r"(\S+)\s+wscale:", out)


@pytest.mark.parametrize("cc", FAMILY)
def test_each_control_carries_a_two_subflow_connection_and_the_subflows_report_it(family_loaded, cc):
    flows = [FlowSpec("m", "mptcp", cc, 0)]
    with Testbed([PathSpec(10, 10), PathSpec(10, 20)], prefix="ppf-") as tb, \
            ThreadPoolExecutor(1) as pool:
        fut = pool.submit(tb.run_flows, flows, 4.0, PORT)
        seen: list[str] = []
        deadline = time.monotonic() + 3.5
        while time.monotonic() < deadline and len(seen) < 2:
            time.sleep(0.3)
            seen = _subflow_ccs(tb)
        raw = fut.result()
        _, subs = records(tb, raw, flows)
    assert raw["senders"]["m"]["cc"] == cc
    assert seen == [cc, cc], seen
    acked = {s["path"]: s["acked_bytes"] for s in subs}
    assert set(acked) == {"path0", "path1"}, subs
    # Each subflow carried real data: at least 10% of what a 10 Mbit/s path moves in 4 s.
    assert min(acked.values()) > 0.1 * 10e6 / 8 * 4, acked
    assert wait_gone("ppf-")
