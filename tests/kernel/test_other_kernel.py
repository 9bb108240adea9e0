"""The wheel's kernel part on another kernel, booted under qemu: what `pathpool kernel check`
reports there and what a load says.

Needs qemu-system-x86_64, a static busybox (PATHPOOL_QEMU_BUSYBOX or busybox on PATH) and
kernel images given as PATHPOOL_QEMU_KERNEL (paths separated by ':'), e.g. Debian 12's
(`apt-get download linux-image-6.1.0-56-amd64 && dpkg-deb -x ...`: Linux 6.1, with BTF and
MPTCP but older than the objects need) and bookworm-backports' 6.12 (new enough: every object
passes the verifier and pp_lia registers); skips saying which is missing. The guest
runs from an initramfs holding only busybox, the statically linked loader and the objects as
`make -C kernel package` makes them for the wheel; it touches nothing of this machine's kernel.
"""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from pathpool.kernel import loader

pytestmark = [pytest.mark.kernel, pytest.mark.slow]

INIT = """#!/bin/busybox sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sys /sys
echo "uname $(/bin/busybox uname -r)"
echo "=== probe"
/pp/pp_loader --probe {objs} 2>/probe.err
echo "=== load"
/pp/pp_loader --check /pp/pp_lia.bpf.o 2>/load.err
echo "=== load log"
/bin/busybox cat /load.err
echo "=== end"
/bin/busybox poweroff -f
"""


def _newc(files: dict[str, tuple[int, bytes]]) -> bytes:
    """An uncompressed cpio archive (the kernel's initramfs format) of ``{path: (mode, data)}``."""
    out = bytearray()

    def entry(name: str, mode: int, data: bytes, ino: int) -> None:
        nb = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{x:08x}" for x in (ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0,
                                                      len(nb), 0))
        out.extend(hdr.encode() + nb)
        out.extend(b"\0" * (-len(out) % 4))
        out.extend(data)
        out.extend(b"\0" * (-len(out) % 4))

    for i, (name, (mode, data)) in enumerate(sorted(files.items()), start=1):
        entry(name, mode, data, i)
    entry("TRAILER!!!", 0, b"", 0)
    return bytes(out)


def _section(out: str, name: str) -> str:
    return out.split(f"=== {name}\n", 1)[1].split("\n=== ", 1)[0]


IMAGES = [p for p in os.environ.get("PATHPOOL_QEMU_KERNEL", "").split(":") if p] or [None]


@pytest.mark.parametrize("image", IMAGES)
def test_check_and_load_on_another_kernel(kernel_toolchain, repo_root, tmp_path, image):
    qemu = shutil.which("qemu-system-x86_64")
    busybox = os.environ.get("PATHPOOL_QEMU_BUSYBOX") or shutil.which("busybox")
    missing = [what for what, ok in (("PATHPOOL_QEMU_KERNEL (a kernel image)", image),
                                     ("qemu-system-x86_64", qemu), ("busybox", busybox)) if not ok]
    if missing:
        pytest.skip("booting another kernel needs " + ", ".join(missing))
    bb = Path(busybox).read_bytes()
    phoff, = struct.unpack_from("<Q", bb, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", bb, 0x36)
    if any(struct.unpack_from("<I", bb, phoff + i * phentsize)[0] == 3 for i in range(phnum)):
        pytest.skip(f"{busybox} is dynamically linked (install busybox-static)")
    pkg = tmp_path / "bin"
    r = subprocess.run(["make", "-s", "-C", str(repo_root / "kernel"), "package", f"DEST={pkg}"],
                       capture_output=True, text=True, timeout=900, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    objs = [f"/pp/{n}.bpf.o" for n in loader.ALGORITHMS]
    files = {d: (0o040755, b"") for d in ("bin", "proc", "sys", "pp", "dev")}
    files["bin/busybox"] = (0o100755, bb)
    files["init"] = (0o100755, INIT.format(objs=" ".join(objs)).encode())
    for f in pkg.iterdir():
        files[f"pp/{f.name}"] = (0o100755, f.read_bytes())
    initrd = tmp_path / "initrd.cpio"
    initrd.write_bytes(_newc(files))
    accel = ["-accel", "kvm", "-cpu", "host"] if os.environ.get("PATHPOOL_QEMU_KVM") else \
        ["-accel", "tcg", "-cpu", "max"]
    r = subprocess.run([qemu, *accel, "-m", "1024", "-smp", "1", "-kernel", image, "-initrd",
                        str(initrd), "-append", "console=ttyS0 rdinit=/init panic=-1 quiet",
                        "-nographic", "-no-reboot"], capture_output=True, text=True, timeout=900,
                       check=False)
    out = r.stdout.replace("\r", "")
    assert "=== end" in out, out[-3000:]
    release = out.split("uname ", 1)[1].split()[0]
    version = tuple(int(x) for x in release.split("-")[0].split(".")[:2])
    reasons, _ = loader.probe_reasons(_section(out, "probe"))
    load = _section(out, "load")
    if version >= loader.MIN_KERNEL:
        # CO-RE: objects compiled against this machine's BTF pass that kernel's verifier.
        assert reasons == [], reasons
        assert _section(out, "probe").count("\nverify ") == len(loader.ALGORITHMS), out
        assert "registered pp_lia" in load and "READY" in load, load
        return
    # Older than the objects need: the probe names what is missing, and so does a load.
    assert reasons, _section(out, "probe")
    if version < (6, 4):
        assert any(x.startswith("struct_ops links:") for x in reasons), reasons
    if version < (6, 2):
        assert any(x.startswith("kfunc: bpf_rdonly_cast") for x in reasons), reasons
    [err] = [x for x in load.splitlines() if x.startswith("error ")]
    why = loader.explain_failure(err, _section(out, "load log"))
    assert why is not None and why.startswith("missing feature:"), (err, why)
    assert "READY" not in load
