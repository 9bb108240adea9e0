"""The kernel part from the wheel, as a user gets it: `pip install pathpool` then `sudo pathpool
kernel load pp_lia`, on a machine without clang, bpftool, make or the repository.

Builds the wheel as `make wheel` does, installs it into a fresh virtualenv, and runs it from an
empty directory with a PATH that holds the venv and only the system tools the test bed uses (ip,
tc, nft, ethtool, sysctl, ss): no clang, bpftool, make or C compiler, and the checkout's
kernel/build is not where the installed package looks. It checks the kernel, loads pp_lia, lets an
unmodified iperf3 under mptcpize carry a two-path transfer over the test bed with pp_lia as the
client's default, unloads, and checks nothing of pathpool's is left. Also: the wheel's BPF objects
are the checkout's build (minus DWARF), and its loader and forwarder are static executables.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
import sysconfig
import time
import zipfile
from pathlib import Path

import pytest
from pathpool.kernel import loader
from pathpool.kernel.testbed import SERVER_ADDR, wait_gone

pytestmark = [pytest.mark.kernel, pytest.mark.slow]

PREFIX = "ppw-"
#: What the test bed runs (python/pathpool/kernel/testbed.py); nothing else goes on PATH.
TESTBED_TOOLS = ("ip", "tc", "nft", "ethtool", "sysctl", "ss")
BUILD_TOOLS = ("clang", "bpftool", "make", "cc", "gcc", "llvm-strip")


def _sh(cmd, cwd: Path, env: dict | None = None, timeout: int = 1200) -> subprocess.CompletedProcess:
    r = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=timeout, check=False)
    assert r.returncode == 0, f"{' '.join(map(str, cmd))} -> {r.returncode}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
    return r


@pytest.fixture(scope="module")
def wheel(repo_root, kernel_unclaimed, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _sh(["make", "-s", "wheel-only", f"WHEEL_DIR={out}", f"VENV={Path(sys.prefix)}"], cwd=repo_root)
    [whl] = out.glob("pathpool-*.whl")
    return whl


@pytest.fixture(scope="module")
def user(wheel, tmp_path_factory) -> dict:
    """The wheel in a fresh venv, and the environment of a user without a toolchain."""
    venv = tmp_path_factory.mktemp("venv")
    _sh([sys.executable, "-m", "venv", venv], cwd=venv)
    py = venv / "bin" / "python"
    site = Path(_sh([py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                    cwd=venv).stdout.strip())
    # The third-party dependencies are borrowed (installing them again would only test PyPI).
    (site / "borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _sh([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel], cwd=venv)
    tools = tmp_path_factory.mktemp("tools")
    for t in TESTBED_TOOLS:
        where = shutil.which(t)
        assert where, f"{t} missing (scripts/install-system-deps.sh)"
        (tools / t).symlink_to(where)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}:{tools}"
    for t in BUILD_TOOLS:
        assert shutil.which(t, path=env["PATH"]) is None, t
    work = tmp_path_factory.mktemp("empty")
    return {"venv": venv, "env": env, "cwd": work, "pp": str(venv / "bin" / "pathpool"),
            "bin": site / "pathpool" / "kernel" / "bin"}


def _elf_interp(data: bytes) -> bool:
    """True if the ELF64 executable names a dynamic loader (PT_INTERP)."""
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    return any(struct.unpack_from("<I", data, phoff + i * phentsize)[0] == 3 for i in range(phnum))


def _sections(data: bytes) -> set[str]:
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    strtab = struct.unpack_from("<IIQQQ", data, shoff + shstrndx * shentsize)[4]
    names = set()
    for i in range(shnum):
        off = strtab + struct.unpack_from("<I", data, shoff + i * shentsize)[0]
        names.add(data[off:data.index(b"\0", off)].decode())
    return names


def test_wheel_carries_the_checkouts_objects_and_static_executables(wheel, repo_root, tmp_path):
    z = zipfile.ZipFile(wheel)
    for exe in ("pp_loader", "pp_delayfwd"):
        info = z.getinfo(f"pathpool/kernel/bin/{exe}")
        assert info.external_attr >> 16 & 0o111, f"{exe} not executable"
        assert not _elf_interp(z.read(info)), f"{exe} is dynamically linked"
    strip = shutil.which("llvm-strip")
    assert strip
    for name in (*loader.ALGORITHMS, loader.YARDSTICK):
        shipped = z.read(f"pathpool/kernel/bin/{name}.bpf.o")
        # The same object as `make -C kernel` built, only without DWARF...
        ref = tmp_path / f"{name}.bpf.o"
        _sh([strip, "--strip-debug", repo_root / "kernel" / "build" / f"{name}.bpf.o", "-o", ref],
            cwd=tmp_path)
        assert shipped == ref.read_bytes(), name
        # ... keeping the BTF that CO-RE relocation and the struct_ops registration read.
        secs = _sections(shipped)
        assert {".BTF", ".BTF.ext"} <= secs, secs
        assert not [s for s in secs if s.startswith(".debug_")], secs


def _exe_of(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


def _ours(venv: Path) -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and _exe_of(int(p)).startswith(str(venv))]


def test_load_transfer_unload_from_the_wheel_alone(user):
    env, cwd, pp = user["env"], user["cwd"], user["pp"]
    iperf3, mptcpize = shutil.which("iperf3"), shutil.which("mptcpize")
    if iperf3 is None or mptcpize is None:
        pytest.skip("iperf3/mptcpize missing (scripts/install-system-deps.sh installs them)")
    assert wait_gone(PREFIX, timeout_s=1)

    maps_before = set(loader.struct_ops_maps())     # (bpftool: this process's, not the user's)
    r = _sh([pp, "kernel", "check"], cwd=cwd, env=env)
    assert r.stdout.startswith("OK: this kernel can run"), r.stdout

    # --allow: a network namespace other than the host's may make it its default.
    r = _sh([pp, "kernel", "load", "--allow", "pp_lia"], cwd=cwd, env=env)
    holder = None
    try:
        assert loader.registered() == ["pp_lia"]
        pid = int(loader.PIDFILE.read_text())
        assert _exe_of(pid) == str(user["bin"] / "pp_loader")     # the wheel's, not kernel/build's
        holder = subprocess.Popen([pp, "testbed", "up", "--prefix", PREFIX, "--hold", "300"],
                                  cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True)
        line = holder.stdout.readline()
        assert line.startswith("up:"), line + holder.stderr.read()
        fwd = [int(x) for x in _sh(["ip", "netns", "pids", f"{PREFIX}r"], cwd=cwd).stdout.split()]
        assert fwd and all(_exe_of(p) == str(user["bin"] / "pp_delayfwd") for p in fwd)
        # The application is not told anything: pp_lia is the client namespace's default.
        _sh(["ip", "netns", "exec", f"{PREFIX}c", "sysctl", "-qw",
             "net.ipv4.tcp_congestion_control=pp_lia"], cwd=cwd)
        srv = subprocess.Popen(["ip", "netns", "exec", f"{PREFIX}s", mptcpize, "run", iperf3, "-s",
                                "-1", "-B", SERVER_ADDR, "-p", "5409"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while ":5409" not in _sh(["ip", "netns", "exec", f"{PREFIX}s", "ss", "-Hltn"], cwd=cwd).stdout:
            assert time.monotonic() < deadline, "iperf3 server did not start"
            time.sleep(0.05)
        cli = subprocess.Popen(["ip", "netns", "exec", f"{PREFIX}c", mptcpize, "run", iperf3, "-c",
                                SERVER_ADDR, "-p", "5409", "-B", "10.77.0.1", "-t", "4", "-J"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        acked: dict[str, int] = {}
        while cli.poll() is None:
            ss = _sh(["ip", "netns", "exec", f"{PREFIX}c", "ss", "-Htni", "state", "established"],
                     cwd=cwd).stdout
            # A socket's line, then its details on indented lines: one record per socket.
            for sock in ss.replace("\n\t", " ").replace("\n ", " ").split("\n"):
                words = sock.split()
                if "pp_lia" in words and any(w.startswith("bytes_acked:") for w in words):
                    src = words[2] if ":" in words[2] else words[3]
                    addr = src.rsplit(":", 1)[0].split("%")[0]    # 10.77.1.1%p1: bound to p1
                    b = next(int(w.split(":")[1]) for w in words if w.startswith("bytes_acked:"))
                    acked[addr] = max(b, acked.get(addr, 0))
            time.sleep(0.2)
        out, err = cli.communicate(timeout=30)
        srv.wait(timeout=30)
        assert cli.returncode == 0, err
        report = json.loads(out)
        assert report["end"]["sum_received"]["bytes"] > 0
        # Both paths (10.77.0.1 and 10.77.1.1) carried data under pp_lia.
        assert {a for a, b in acked.items() if b > 0} >= {"10.77.0.1", "10.77.1.1"}, acked
    finally:
        if holder is not None:
            _sh([pp, "testbed", "down", "--prefix", PREFIX], cwd=cwd, env=env)
            holder.wait(timeout=30)
        maps = loader.loaded_maps()
        r = _sh([pp, "kernel", "unload"], cwd=cwd, env=env)
    assert "pp_lia" in r.stdout
    # Nothing of pathpool's is left: registrations, struct_ops maps, processes, namespaces, state.
    assert loader.registered() == []
    assert "pp_lia" not in loader.ALLOWED.read_text().split()
    assert loader.wait_maps_freed(maps, timeout_s=10) == {}
    deadline = time.monotonic() + 10      # the namespaces' sockets go with the namespaces
    while set(loader.struct_ops_maps()) - maps_before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert set(loader.struct_ops_maps()) <= maps_before, loader.struct_ops_maps()
    assert wait_gone(PREFIX, timeout_s=5)
    assert _ours(user["venv"]) == []
    left = [p.name for p in loader.PIDFILE.parent.iterdir()] if loader.PIDFILE.parent.exists() else []
    assert not {"loader.pid", "tunables.json", "struct_ops.json", "counters.json",
                "default.json", f"testbed-{PREFIX}pid"} & set(left), left


def test_linux_backend_from_the_wheel_alone(user):
    """`pathpool run --backend linux` loads the wheel's controls, runs the wheel's forwarder on
    a test bed, and leaves nothing registered."""
    env, cwd, pp = user["env"], user["cwd"], user["pp"]
    r = _sh([pp, "run", "examples/two_paths", "--backend", "linux", "--seeds", "1",
             "--max-duration", "3", "-o", "linux", "-q"], cwd=cwd, env=env)
    assert (cwd / "linux" / "flows.parquet").is_file(), r.stdout + r.stderr
    import pandas as pd

    flows = pd.read_parquet(cwd / "linux" / "flows.parquet")
    assert (flows["goodput_bps"] > 0).all(), flows
    assert loader.registered() == [] and _ours(user["venv"]) == []
