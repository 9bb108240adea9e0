"""The controls as a service: `pathpool kernel load --foreground [--default NAME]`, `check`,
`status`, `unit`.

What is promised: the algorithms are registered exactly while the foreground process runs;
``--default`` makes one of them net.ipv4.tcp_congestion_control and the previous value comes back
however the process stops: SIGTERM/SIGINT (at once), the loader killed under it (at once), the
process itself killed with SIGKILL (at the next load, unload or status, which find the holder
dead; a unit's ExecStopPost runs `unload`). Needs root; skips saying why otherwise.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pathpool.kernel import loader

pytestmark = pytest.mark.kernel

CLI = [sys.executable, "-m", "pathpool.cli"]


@pytest.fixture
def kernel(kernel_unclaimed):
    """The default before the test, put back after it whatever happened."""
    before = loader.current_default()
    assert not loader.DEFAULT_FILE.exists(), "a --default promise is pending before the test"
    yield before
    loader.unload()
    if loader.current_default() != before:
        loader.SYSCTL_CC.write_text(before)
    assert loader.registered() == []


def _pp(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, check=False)


def _start(*args: str, env: dict | None = None) -> subprocess.Popen:
    """`pathpool kernel load --foreground ARGS`, returned once it says it has loaded."""
    p = subprocess.Popen([*CLI, "kernel", "load", "--foreground", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    assert p.stdout is not None
    ready, _, _ = select.select([p.stdout], [], [], 120)
    line = p.stdout.readline() if ready else ""
    if "registered until this process stops" not in line:
        p.kill()
        raise AssertionError(f"not loaded: {line!r} {p.communicate(timeout=30)}")
    return p


def _wait(cond, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _status() -> dict:
    r = _pp("kernel", "status", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _other(before: str) -> str:
    """A default that is not ``before``: the test must see it change."""
    return "pp_olia" if before == "pp_lia" else "pp_lia"


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stop_unregisters_and_restores_the_default(kernel, sig):
    name = _other(kernel)
    p = _start("--default", name, "pp_lia", "pp_olia")
    try:
        assert loader.current_default() == name
        assert sorted(loader.registered()) == ["pp_lia", "pp_olia"]
        st = _status()
        assert st["holder"]["pid"] == p.pid and "--foreground" in st["holder"]["cmdline"]
        assert st["holder"]["running"]
        assert st["default_promise"] == {"previous": kernel, "default": name,
                                         "holder": st["loader_pid"]}
        assert st["counters"]["pp_lia"]["pp_ssthresh_repairs"] == 0
        assert set(st["sockets"]) >= {"pp_lia", "pp_olia"}
    finally:
        p.send_signal(sig)
        p.wait(timeout=30)
    assert p.returncode == 0, p.stderr.read() if p.stderr else ""
    assert loader.registered() == []
    assert loader.current_default() == kernel
    assert not loader.DEFAULT_FILE.exists() and not loader.PIDFILE.exists()


def test_sigkill_then_status_restores_and_restart_keeps_the_first_previous(kernel):
    name = _other(kernel)
    p = _start("--default", name, "pp_lia", "pp_olia")
    loader_pid = _status()["loader_pid"]
    p.kill()
    p.wait(timeout=10)
    # The loader follows its parent (PR_SET_PDEATHSIG) and the kernel unregisters with its link.
    assert _wait(lambda: loader.registered() == []), loader.registered()
    assert _wait(lambda: not Path(f"/proc/{loader_pid}").exists())
    # Nobody could put the sysctl back: the kernel keeps the control it names...
    assert loader.current_default() == name
    # ... and a restart, before anyone else looked, must not take it for the previous value.
    q = _start("--default", name, "pp_lia", "pp_olia")
    try:
        assert loader.current_default() == name
        assert _status()["default_promise"]["previous"] == kernel
        q.kill()
        q.wait(timeout=10)
        assert _wait(lambda: loader.registered() == [])
        st = _status()          # status finds the holder dead and keeps the promise
        assert st["default_restored"] == kernel and st["default"] == kernel
        assert loader.current_default() == kernel and not loader.DEFAULT_FILE.exists()
    finally:
        if q.poll() is None:
            q.kill()
            q.wait(timeout=10)


def test_loader_killed_under_the_service_restores_at_once(kernel):
    name = _other(kernel)
    p = _start("--default", name, "pp_lia")
    os.kill(_status()["loader_pid"], signal.SIGKILL)
    p.wait(timeout=30)
    err = p.stderr.read() if p.stderr else ""
    out = p.stdout.read() if p.stdout else ""
    assert p.returncode == 1, out + err     # a failure: systemd's Restart=on-failure restarts it
    assert "ended by signal SIGKILL" in out, out
    assert loader.current_default() == kernel and loader.registered() == []


def test_unload_from_another_shell_ends_the_service_cleanly(kernel):
    name = _other(kernel)
    p = _start("--default", name, "pp_lia")
    r = _pp("kernel", "unload")
    assert r.returncode == 0, r.stdout + r.stderr
    p.wait(timeout=30)
    assert p.returncode == 0
    assert loader.current_default() == kernel and loader.registered() == []


def test_daemon_load_names_the_exited_starter_and_unload_restores(kernel):
    name = _other(kernel)
    r = _pp("kernel", "load", "--default", name, "pp_lia")
    assert r.returncode == 0, r.stdout + r.stderr
    st = _status()
    assert st["registered"] == ["pp_lia"] and st["default"] == name
    assert "kernel load --default" in st["holder"]["cmdline"] and not st["holder"]["running"]
    r = _pp("kernel", "unload")
    assert r.returncode == 0, r.stdout + r.stderr
    assert loader.current_default() == kernel and loader.registered() == []
    assert not loader.HOLDER_FILE.exists()


def test_sd_notify_ready_once_registered(kernel, tmp_path):
    sock_path = tmp_path / "notify"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.bind(str(sock_path))
        s.settimeout(60)
        p = _start("pp_lia", env={**os.environ, "NOTIFY_SOCKET": str(sock_path)})
        try:
            assert s.recv(64) == b"READY=1"
            assert loader.registered() == ["pp_lia"]
        finally:
            p.terminate()
            p.wait(timeout=30)
    assert loader.registered() == []


def test_check_says_ok_here(kernel_unclaimed):
    r = _pp("kernel", "check")
    assert r.returncode == 0, r.stdout + r.stderr
    [line] = r.stdout.strip().splitlines()
    assert line.startswith("OK: this kernel can run pp_reno")
    # Derived from the objects, not listed by hand: pp_ops.bpf.h's bpf_loop and pp_common.bpf.h's kfunc.
    assert "BPF_FUNC_loop" in line and "bpf_rdonly_cast" in line
    assert f"{len(loader.ALGORITHMS)} controls passed the verifier" in line
    assert loader.registered() == []     # the probe registers nothing


def test_check_without_privileges_names_the_reason(kernel_unclaimed, monkeypatch):
    # A user without root nor CAP_BPF + CAP_NET_ADMIN (the venv is not readable by `nobody`
    # here, so the identity is what the check reads, not a real switch of user).
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(loader, "_caps", lambda: 1 << 12)    # CAP_NET_ADMIN alone
    reasons, _ = loader.check()
    assert [r for r in reasons if r.startswith("permission: not root")] == reasons, reasons
    monkeypatch.setattr(loader, "_caps", lambda: 1 << 12 | 1 << 39)   # + CAP_BPF: enough
    assert loader.check()[0] == []


def test_a_verifier_refusal_names_the_stage_and_shows_the_log_only_with_verbose(kernel, tmp_path):
    """A control whose program the verifier refuses (an object of this tree with one
    instruction patched into an out-of-bounds stack read) fails with one named reason; the
    verifier's log appears with --verbose only."""
    from pathpool.kernel import loader as ld

    bad = tmp_path / "pp_reno.bpf.o"
    data = bytearray(ld.object_path("pp_reno").read_bytes())
    # r0 = *(u64 *)(r10 + 8): above the frame pointer, which every verifier refuses.
    code = bytes([0x79, 0xA0, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00])
    at = _first_insn_of(data, "struct_ops/pp_cong_avoid")
    data[at:at + 8] = code
    bad.write_bytes(data)
    for verbose in (False, True):
        with pytest.raises(ld.KernelError) as e:
            _load_object(bad, verbose)
        msg = str(e.value)
        assert "verifier" in msg.splitlines()[0], msg
        assert ("invalid read from stack" in msg or "invalid stack" in msg) == verbose, msg
    assert ld.registered() == []


def _load_object(path: Path, verbose: bool) -> None:
    """load() with one object in place of pp_reno's (the same name, a refused program)."""
    orig = loader.object_path
    try:
        loader.object_path = lambda n: path if n == "pp_reno" else orig(n)
        loader.load(("pp_reno",), rebuild=False, verbose=verbose)
    finally:
        loader.object_path = orig


def _first_insn_of(elf: bytearray, section: str) -> int:
    """File offset of the first instruction of ELF64 section ``section``."""
    import struct

    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)

    def sh(i):
        return struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize)

    strtab_off = sh(shstrndx)[4]
    for i in range(shnum):
        name_off, *_rest = sh(i)
        end = elf.index(b"\0", strtab_off + name_off)
        if elf[strtab_off + name_off:end].decode() == section:
            return sh(i)[4]
    raise AssertionError(f"no section {section}")


def test_unit_runs_this_installation_in_the_foreground():
    r = _pp("kernel", "unit", "--default", "pp_lia", "pp_lia", "pp_olia")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    [start] = [x for x in lines if x.startswith("ExecStart=")]
    exe = start.split("=", 1)[1].split()[0]
    assert os.path.isabs(exe) and os.access(exe, os.X_OK)
    assert start.endswith("kernel load --foreground --default pp_lia pp_lia pp_olia")
    assert any(x.startswith("ExecStopPost=") and x.endswith("kernel unload") for x in lines)
    assert "Type=notify" in lines
    r = _pp("kernel", "unit", "--default", "pp_max", "pp_lia")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--default pp_max" in r.stderr
