"""The test bed leaves nothing behind, however it ends: Ctrl-C, SIGTERM, SIGKILL of its holder,
`pathpool testbed down` from another shell, the end of --hold, an exception inside it.

Needs root (namespaces); each test skips otherwise. Each test starts `pathpool testbed up` as a
real process (or a Testbed in this process), records the processes running in its namespaces
(the delay forwarders), ends it one way and checks that those processes, the namespaces and
the holder are gone. The nftables table and the TUN devices live in the router namespace, so
they go with it (checked: a lossy path creates the table).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pathpool.kernel import loader
from pathpool.kernel.testbed import (
    SERVER_ADDR,
    FlowSpec,
    PathSpec,
    Testbed,
    _alive,
    _run,
    wait_gone,
)

pytestmark = pytest.mark.kernel

PREFIX = "ppx-"


@pytest.fixture(scope="module")
def root_env(kernel_toolchain):
    assert wait_gone(PREFIX, timeout_s=1), "a ppx- test bed exists before the tests"
    yield
    assert wait_gone(PREFIX, timeout_s=1)


def _ns_pids(prefix: str = PREFIX) -> list[int]:
    pids = []
    for line in _run(["ip", "netns", "list"], check=False).stdout.splitlines():
        if line and line.split()[0].startswith(prefix):
            out = _run(["ip", "netns", "pids", line.split()[0]], check=False).stdout
            pids += [int(x) for x in out.split()]
    return pids


def _start_holder(*extra: str, sigint_ignored: bool = False) -> subprocess.Popen:
    """`pathpool testbed up` with a lossy path (so the nftables table exists), held 60 s;
    ``sigint_ignored`` starts it as a shell without job control starts `cmd &`."""
    # A child inherits an ignored signal across exec; ours is ignored only around the spawn.
    before = signal.signal(signal.SIGINT, signal.SIG_IGN) if sigint_ignored else None
    try:
        p = subprocess.Popen([sys.executable, "-m", "pathpool.cli", "testbed", "up", "--prefix",
                              PREFIX, "--path", "10,10,0.01", "--path", "10,20,0", *extra],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        if sigint_ignored:
            signal.signal(signal.SIGINT, before)
    assert p.stdout is not None
    line = p.stdout.readline()
    assert line.startswith("up:"), line + (p.stderr.read() if p.stderr else "")
    pids = _ns_pids()
    assert len(pids) == 4, pids     # forward and reverse delay forwarder of each path
    nft = _run(["ip", "netns", "exec", f"{PREFIX}r", "nft", "list", "tables"], check=False).stdout
    assert "pathpool" in nft, nft
    return p


def _assert_clean(holder_pid: int | None, fwd: list[int]) -> None:
    assert wait_gone(PREFIX, timeout_s=10), "namespaces left"
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in fwd) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in fwd if _alive(p)], "forwarders left"
    if holder_pid is not None:
        assert not _alive(holder_pid), "holder left"
    left = _run(["pgrep", "-f", "pp_delayfwd (df|dr)"], check=False).stdout.split()
    assert not [int(p) for p in left if int(p) in fwd]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_to_the_holder_tears_everything_down(root_env, sig):
    p = _start_holder()
    fwd = _ns_pids()
    p.send_signal(sig)
    p.wait(timeout=30)
    _assert_clean(p.pid, fwd)


def test_sigint_ends_a_holder_started_in_the_background(root_env):
    # `pathpool testbed up &` from a script (or a CI runner) inherits SIGINT ignored; the
    # holder used to keep it so and slept out its whole hold (found by CI: 60 s, then the
    # next tests met its namespaces).
    p = _start_holder(sigint_ignored=True)
    fwd = _ns_pids()
    p.send_signal(signal.SIGINT)
    p.wait(timeout=30)
    _assert_clean(p.pid, fwd)


def test_down_from_another_shell_ends_holder_and_forwarders(root_env):
    p = _start_holder()
    fwd = _ns_pids()
    out = subprocess.run([sys.executable, "-m", "pathpool.cli", "testbed", "down", "--prefix", PREFIX],
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    p.wait(timeout=30)
    _assert_clean(p.pid, fwd)


def test_sigkill_of_the_holder_takes_the_forwarders_and_down_the_rest(root_env):
    p = _start_holder()
    fwd = _ns_pids()
    p.kill()
    p.wait(timeout=10)
    # The forwarders follow their parent (PR_SET_PDEATHSIG) at once...
    deadline = time.monotonic() + 5
    while any(_alive(q) for q in fwd) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [q for q in fwd if _alive(q)]
    # ... and only the empty namespaces remain, for `down`.
    out = subprocess.run([sys.executable, "-m", "pathpool.cli", "testbed", "down", "--prefix", PREFIX],
                         capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    _assert_clean(p.pid, fwd)


def test_a_holder_killed_with_sigkill_does_not_block_the_next(root_env):
    """SIGKILL leaves the empty namespaces; the next `up` reclaims them (their holder is dead)
    instead of failing on `ip netns add`."""
    p = _start_holder()
    p.kill()
    p.wait(timeout=10)
    assert not wait_gone(PREFIX, timeout_s=0.5), "the killed holder's namespaces should be left"
    q = _start_holder()     # asserts its first line is `up:`
    fwd = _ns_pids()
    q.send_signal(signal.SIGTERM)
    q.wait(timeout=30)
    assert q.stderr is not None and "reclaimed the namespaces a killed test bed left" in q.stderr.read()
    _assert_clean(q.pid, fwd)


def test_a_live_test_bed_is_refused_in_one_line(root_env):
    """A second `up` with the prefix of a running one: one line naming `pathpool testbed down`,
    exit 2, and the running one is untouched."""
    p = _start_holder()
    fwd = _ns_pids()
    try:
        out = subprocess.run([sys.executable, "-m", "pathpool.cli", "testbed", "up", "--prefix",
                              PREFIX, "--hold", "5"], capture_output=True, text=True, timeout=60,
                             check=False)
        assert out.returncode == 2, out.stdout + out.stderr
        lines = (out.stdout + out.stderr).strip().splitlines()
        assert len(lines) == 1 and "pathpool testbed down --prefix ppx-" in lines[0], lines
        assert sorted(_ns_pids()) == sorted(fwd) and p.poll() is None
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
    _assert_clean(p.pid, fwd)


def test_hold_expiry_tears_down(root_env):
    p = _start_holder("--hold", "2")
    fwd = _ns_pids()
    assert p.wait(timeout=60) == 0
    _assert_clean(p.pid, fwd)


def test_exception_inside_the_test_bed_tears_down(root_env):
    fwd: list[int] = []
    with pytest.raises(RuntimeError, match="boom"), \
            Testbed([PathSpec(10, 10, loss=0.01), PathSpec(10, 20)], prefix=PREFIX):
        fwd = _ns_pids()
        assert len(fwd) == 4
        raise RuntimeError("boom")
    _assert_clean(None, fwd)


def test_exception_while_coming_up_tears_down(root_env, monkeypatch):
    """A failure after the forwarders started (here: the loss rules) leaves nothing either."""
    fwd: list[int] = []

    def fail(self):
        fwd.extend(_ns_pids())
        raise RuntimeError("nft failed")

    monkeypatch.setattr(Testbed, "_loss", fail)
    with pytest.raises(RuntimeError, match="nft failed"), \
            Testbed([PathSpec(10, 10), PathSpec(10, 20)], prefix=PREFIX):
        pass
    assert len(fwd) == 4
    _assert_clean(None, fwd)


def test_holder_ignores_nothing_it_did_not_start(root_env):
    """`down` for another prefix leaves a running test bed alone."""
    p = _start_holder()
    try:
        out = subprocess.run([sys.executable, "-m", "pathpool.cli", "testbed", "down", "--prefix",
                              "ppy-"], capture_output=True, text=True, timeout=60, check=False)
        assert out.returncode == 0
        assert p.poll() is None and len(_ns_pids()) == 4
    finally:
        os.kill(p.pid, signal.SIGTERM)
        p.wait(timeout=30)
    assert wait_gone(PREFIX, timeout_s=10)


def _sockets_in(ns_fd: int) -> list[str]:
    """``ss`` lines of the TCP and MPTCP sockets in the network namespace open as ``ns_fd``
    (still readable after its name is gone: the open file keeps the namespace)."""
    out = subprocess.run(["nsenter", f"--net=/proc/self/fd/{ns_fd}", "ss", "-tanMH"],
                         capture_output=True, text=True, check=True, pass_fds=(ns_fd,)).stdout
    return [line for line in out.splitlines() if line.strip()]


def test_no_connection_outlives_the_test_bed(root_env):
    """The test bed ends right after a transfer, while the subflows still close (here: a
    200 ms round trip, so their FIN exchange is certainly under way). Before the fix the
    client's subflows stayed as orphans in FIN-WAIT (measured: 60-130 s, until
    tcp_orphan_retries or MPTCP's close timeout gave up), keeping the deleted namespace and the
    congestion control they ran alive: with a pp_* control, its pp_conns entry and struct_ops
    map outlived the test bed and the unload."""
    fds: list[int] = []
    try:
        with Testbed([PathSpec(10, 100), PathSpec(10, 100)], prefix=PREFIX) as tb:
            fds = [os.open(f"/run/netns/{n}", os.O_RDONLY) for n in (tb.ns_c, tb.ns_s)]
            raw = tb.run_flows([FlowSpec("m", "mptcp", "reno", 0)], duration_s=1.0)
            assert len(raw["senders"]["m"]["final"]) == 2, raw["senders"]["m"]["final"]
        assert wait_gone(PREFIX, timeout_s=10)
        left = {n: _sockets_in(fd) for n, fd in zip(("client", "server"), fds)}
        # TIME-WAIT entries hold no socket state (no congestion control) and go with the
        # namespace.
        assert not [x for v in left.values() for x in v if not x.startswith("TIME-WAIT")], left
    finally:
        for fd in fds:
            os.close(fd)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_signal_to_a_linux_backend_run_unloads_and_tears_down(root_env, tmp_path, sig):
    """`pathpool run SCENARIO --backend linux` loads the pp_* controls itself; stopped by a
    signal mid-run it leaves no registration, namespace or loader behind."""
    if loader.registered():
        pytest.skip(f"pp_* already registered by something else: {loader.registered()}")
    scenario = Path(__file__).resolve().parents[2] / "scenarios/kernel/two_paths_shared.toml"
    p = subprocess.Popen([sys.executable, "-m", "pathpool.cli", "run", str(scenario), "--backend",
                          "linux", "--max-duration", "20", "-o", str(tmp_path / "out")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (loader.registered() and _ns_pids("pp-")) and time.monotonic() < deadline:
        assert p.poll() is None, p.stderr.read() if p.stderr else ""
        time.sleep(0.1)
    assert loader.registered(), "the run never loaded its controls"
    fwd = _ns_pids("pp-")
    time.sleep(1.0)   # traffic running
    p.send_signal(sig)
    p.wait(timeout=60)
    assert wait_gone("pp-", timeout_s=10)
    assert not [q for q in fwd if _alive(q)]
    deadline = time.monotonic() + 10
    while loader.registered() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert loader.registered() == []


# ---------------------------------------------------------------- sockets and struct_ops maps
# A BPF congestion control's struct_ops map outlives its unregistration while any socket still
# runs it (tcp_cleanup_congestion_control frees the last reference, Linux 6.18), and a socket
# keeps its namespace alive after `ip netns del`. These tests end a test bed carrying MPTCP
# traffic under pp_lia each way and check that neither a socket nor the map stays: maps are
# compared by id with those alive before the test, so a map leaked earlier (by another run, or
# before the fix) does not make them fail.


@pytest.fixture
def lia(root_env, kernel_unclaimed):
    """pp_lia loaded for one test; yields the ``{id: name}`` of the struct_ops maps it created."""
    loader.load(("pp_lia",), rebuild=False)
    try:
        mine = loader.loaded_maps()
        assert [m["name"] for m in mine.values()] == ["pp_lia"], mine
        assert all(m["conns"] is not None for m in mine.values()), mine
        yield mine
    finally:
        loader.unload()


def _held(prefix: str = PREFIX) -> list[int]:
    """Open handles on the test bed's client and server namespaces (they outlive the names)."""
    return [os.open(f"/run/netns/{prefix}{x}", os.O_RDONLY) for x in ("c", "s")]


def _start_traffic(prefix: str = PREFIX, port: int = 5401) -> list[subprocess.Popen]:
    """Unmodified iperf3 under mptcpize (two subflows) with pp_lia, running until killed; returns
    once both subflows carry data."""
    if shutil.which("iperf3") is None or shutil.which("mptcpize") is None:
        pytest.skip("iperf3/mptcpize missing (scripts/install-system-deps.sh installs them)")
    srv = subprocess.Popen(["ip", "netns", "exec", f"{prefix}s", "mptcpize", "run", "iperf3", "-s",
                            "-1", "-B", SERVER_ADDR, "-p", str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while f":{port}" not in _run(["ip", "netns", "exec", f"{prefix}s", "ss", "-Hltn"],
                                 check=False).stdout:
        assert time.monotonic() < deadline, "iperf3 server did not start"
        time.sleep(0.05)
    cli = subprocess.Popen(["ip", "netns", "exec", f"{prefix}c", "mptcpize", "run", "iperf3", "-c",
                            SERVER_ADDR, "-p", str(port), "-B", "10.77.0.1", "-t", "60", "-C",
                            "pp_lia"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 10
    while True:
        subs = [x for x in _run(["ip", "netns", "exec", f"{prefix}c", "ss", "-Htni", "state",
                                 "established"], check=False).stdout.split("\n") if "pp_lia" in x]
        if len([x for x in subs if "bytes_acked" in x]) >= 2:   # both subflows carry data
            break
        assert time.monotonic() < deadline, f"no MPTCP traffic under pp_lia: {subs}"
        time.sleep(0.05)
    time.sleep(0.5)
    return [srv, cli]


def _assert_nothing_left(fds: list[int], mine: dict[int, dict]) -> None:
    """No socket in the (deleted) namespaces behind ``fds``, and after the unload no struct_ops
    map of ``mine`` alive."""
    try:
        assert wait_gone(PREFIX, timeout_s=10), "namespaces left"
        left = {fd: [x for x in _sockets_in(fd) if not x.startswith("TIME-WAIT")] for fd in fds}
        assert not [x for v in left.values() for x in v], left
    finally:
        for fd in fds:
            os.close(fd)
    loader.unload()
    assert loader.wait_maps_freed(mine, timeout_s=5.0) == {}


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "down"])
def test_test_bed_with_mptcp_traffic_leaves_no_socket_or_map(lia, how):
    p = _start_holder()
    fds = _held()
    procs: list[subprocess.Popen] = []
    try:
        procs = _start_traffic()
        if how == "down":
            out = subprocess.run([sys.executable, "-m", "pathpool.cli", "testbed", "down", "--prefix",
                                  PREFIX], capture_output=True, text=True, timeout=60, check=False)
            assert out.returncode == 0, out.stdout + out.stderr
        else:
            p.send_signal(getattr(signal, how))
        p.wait(timeout=30)
    finally:
        if p.poll() is None:   # failed before ending it: end it anyway
            p.terminate()
            p.wait(timeout=30)
        for q in procs:
            q.wait(timeout=10)
    _assert_nothing_left(fds, lia)


def test_exception_with_mptcp_traffic_leaves_no_socket_or_map(lia):
    fds: list[int] = []
    procs: list[subprocess.Popen] = []
    with pytest.raises(RuntimeError, match="boom"), \
            Testbed([PathSpec(10, 10, loss=0.01), PathSpec(10, 20)], prefix=PREFIX):
        fds = _held()
        procs = _start_traffic()
        raise RuntimeError("boom")
    for q in procs:
        q.wait(timeout=10)
    _assert_nothing_left(fds, lia)


def test_bench_leaves_no_socket_or_map(root_env, kernel_unclaimed, monkeypatch):
    """A short `pathpool kernel bench --regime fast` (the run that left map 8102 behind): its
    test bed's sockets and the struct_ops maps of every control it loaded are gone after it."""
    from pathpool.kernel import bench

    fds: list[int] = []
    down = Testbed.down

    def hold_then_down(self):
        if self.created and not fds:
            fds.extend(_held(self.prefix))
        down(self)

    monkeypatch.setattr(Testbed, "down", hold_then_down)
    before = loader.struct_ops_maps()
    bench.run_bench(1.0, algorithms=("pp_lia",), rounds=1, regime="fast")
    try:
        assert wait_gone("ppb-", timeout_s=10), "namespaces left"
        left = [x for fd in fds for x in _sockets_in(fd) if not x.startswith("TIME-WAIT")]
        assert not left, left
    finally:
        for fd in fds:
            os.close(fd)
    created = {i: n for i, n in loader.struct_ops_maps().items() if i not in before}
    assert created == {}, f"struct_ops maps left by the bench: {created}"


def test_a_map_kept_by_a_socket_is_reported_with_its_holders(lia):
    """The check behind the bench's and --backend linux's unload: while an MPTCP connection
    still runs pp_lia, its struct_ops map cannot be freed, and the unload says so, naming the
    map and, from pp_conns, the connection's two subflows; once the connection is gone the map
    is freed."""
    (map_id,) = lia
    with Testbed([PathSpec(20, 5), PathSpec(20, 5)], prefix=PREFIX) as tb, \
            ThreadPoolExecutor(1) as pool:
        fut = pool.submit(tb.run_flows, [FlowSpec("m", "mptcp", "pp_lia", 0)], 3.0)
        deadline = time.monotonic() + 5
        while "pp_lia" not in _run(["ip", "netns", "exec", tb.ns_c, "ss", "-Htni"], check=False).stdout:
            assert time.monotonic() < deadline, "no connection under pp_lia"
            time.sleep(0.05)
        time.sleep(0.5)   # both subflows joined
        with pytest.warns(loader.LeftoverWarning) as w:
            loader.unload(wait_freed_s=0.3)
        msg = str(w[0].message)
        assert f"map {map_id} (pp_lia): subflow(s) 0x" in msg, msg
        assert re.search(r"subflow\(s\) 0x[0-9a-f]+, 0x[0-9a-f]+ of MPTCP connection 0x[0-9a-f]+",
                         msg), msg
        fut.result()
    assert loader.wait_maps_freed(lia, timeout_s=5.0) == {}
