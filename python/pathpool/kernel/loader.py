"""Build, load, list and unload the BPF congestion controls.

Loading runs ``kernel/build/pp_loader`` (C, libbpf), which registers every algorithm through a
BPF link and keeps the links open while it runs. The kernel drops a link's registration when
its last file descriptor closes, so when the loader exits, crashes or is killed (even with
SIGKILL) nothing stays registered. ``load()`` starts the loader as a daemon (its pid in
:data:`PIDFILE`); ``unload()`` stops it. Either all algorithms register or none does: the
loader rolls back on the first failure and this module reports which algorithm failed, at
which stage (open, verifier, register) and the verifier's log.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

ALGORITHMS: tuple[str, ...] = ("pp_reno", "pp_lia", "pp_olia", "pp_balia", "pp_rsfdb", "pp_rsflb",
                               "pp_ewtcp", "pp_coupled", "pp_semicoupled", "pp_max")
#: The minimal BPF Reno that `pathpool kernel bench` measures the others against.
YARDSTICK = "pp_minreno"

REPO = Path(__file__).resolve().parents[3]
KERNEL_DIR = REPO / "kernel"
BUILD_DIR = KERNEL_DIR / "build"
LOADER = BUILD_DIR / "pp_loader"
PIDFILE = Path(os.environ.get("PATHPOOL_RUNDIR", "/run/pathpool")) / "loader.pid"
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
BTF = Path("/sys/kernel/btf/vmlinux")


#: Tunables of the BPF objects and their defaults (kernel/include/pp_tunables.h).
#: ``ewtcp_a`` None: 1/n^2 with n the subflows the connection couples (pathpool-cc's default).
TUNABLE_DEFAULTS: dict[str, object] = {"d_ms": 100.0, "mu_pps": 4.0, "loss_window": 1000.0,
                                       "balia_quantised": False, "counting": "bytes",
                                       "ewtcp_a": None, "semicoupled_a": 1.0}
#: Range of EWTCP's and Semicoupled's weight a the BPF arithmetic accepts (kernel/include/
#: pp_cc_math.h PP_A_MIN_Q32 / PP_A_MAX_Q32: below, the q32 rounding of a exceeds the 1e-5
#: error bound; above, one step could exceed the 2-segment cap per acknowledged segment).
WEIGHT_RANGE: tuple[float, float] = (1e-4, 2.0)
#: Congestion-avoidance counting modes (pathpool-cc ``Counting``; kernel/include/pp_tunables.h).
COUNTINGS = ("bytes", "acks")
#: What the running loader was started with (read by ``pathpool run --backend linux``).
TUNABLES_FILE = PIDFILE.parent / "tunables.json"
#: The struct_ops maps the running loader registered, ``{map id: {"name", "conns"}}`` (``conns``:
#: the id of the control's pp_conns map, to name what holds a map the kernel keeps after the
#: unload; see :func:`wait_maps_freed`).
MAPS_FILE = PIDFILE.parent / "struct_ops.json"


class KernelError(RuntimeError):
    """Loading cannot work here, or failed; the message says which step and why."""


class LeftoverWarning(UserWarning):
    """Something of pathpool's outlived its teardown (a struct_ops map after the unload,
    sockets in a deleted namespace); the message names it and what holds it."""


@dataclasses.dataclass
class LoadedAlgorithms:
    """A running loader: its pid and what it registered."""

    pid: int
    names: list[str]
    #: ``{algorithm: {program name: BPF program id}}`` (what ``kernel.bpf_stats_enabled`` counts).
    prog_ids: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)


def object_path(name: str) -> Path:
    """Path of the compiled BPF object of algorithm ``name`` (e.g. ``"pp_lia"``)."""
    return BUILD_DIR / f"{name}.bpf.o"


def check_environment(need_toolchain: bool = True) -> list[str]:
    """Reasons why loading cannot work on this machine (empty list: it can).

    Parameters
    ----------
    need_toolchain
        Also require clang and bpftool (to build the objects).
    """
    reasons = []
    if os.geteuid() != 0:
        reasons.append("not root: registering a tcp_congestion_ops needs CAP_BPF and CAP_NET_ADMIN")
    if not BTF.exists():
        reasons.append(f"no kernel BTF ({BTF} missing): struct_ops needs CONFIG_DEBUG_INFO_BTF=y")
    if not Path("/proc/sys/net/mptcp/enabled").exists():
        reasons.append("no MPTCP in this kernel (/proc/sys/net/mptcp missing: CONFIG_MPTCP=n)")
    if need_toolchain:
        for tool in ("clang", "bpftool"):
            if shutil.which(tool) is None:
                reasons.append(f"{tool} not found (run `make install` as root: scripts/install-system-deps.sh)")
        if not Path("/usr/include/bpf/libbpf.h").exists():
            reasons.append("libbpf-dev not installed (/usr/include/bpf/libbpf.h missing)")
    return reasons


def build(targets: tuple[str, ...] = ("runtime",)) -> None:
    """Run ``make -C kernel`` (BPF objects, loader, host test, delay forwarder).

    Raises
    ------
    KernelError
        With the compiler's output when the build fails.
    """
    proc = subprocess.run(
        ["make", "-s", "-C", str(KERNEL_DIR), *targets], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise KernelError(f"building kernel/ failed (make -C kernel {' '.join(targets)}):\n"
                          f"{proc.stdout}{proc.stderr}")


def registered() -> list[str]:
    """Names in ``tcp_available_congestion_control`` that are pathpool's (the bench's yardstick
    included)."""
    return [n for n in AVAILABLE.read_text().split() if n in ALGORITHMS or n == YARDSTICK]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    cmdline = Path(f"/proc/{pid}/cmdline")
    return cmdline.exists() and b"pp_loader" in cmdline.read_bytes()


def _running_pid() -> int | None:
    try:
        pid = int(PIDFILE.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None
    return pid if _pid_alive(pid) else None


def load(
    names: tuple[str, ...] = ALGORITHMS,
    *,
    d_ms: float | None = None,
    mu_pps: float | None = None,
    loss_window: float | None = None,
    balia_quantised: bool = False,
    counting: str = "bytes",
    ewtcp_a: float | None = None,
    semicoupled_a: float | None = None,
    rebuild: bool = True,
    timeout_s: float = 60.0,
    extra_objects: tuple[Path, ...] = (),
) -> LoadedAlgorithms:
    """Register ``names`` in the kernel and keep them registered until :func:`unload`.

    Parameters
    ----------
    names
        Algorithms to load (default: all of :data:`ALGORITHMS`).
    d_ms, mu_pps
        RSF-DB's target delay d (ms) and RSF-LB's target loss rate mu (packets/s); defaults
        100 ms and 4 packets/s (seed 001 Section 4).
    loss_window
        RSF-LB's loss-estimate memory in packets (EWMA gain 1/loss_window; default 1000, as
        pathpool-cc's ``rsf-lb`` ``loss_window``).
    balia_quantised
        Use the v0.95 kernel's integer alpha in BALIA's decrease.
    counting
        ``"bytes"`` (default): congestion avoidance makes one step per acknowledged segment, as
        RFC 6356 and Linux's ``tcp_cong_avoid_ai`` do; ``"acks"``: one step per ACK whatever it
        acknowledges, the out-of-tree v0.95 rule (pathpool-cc ``Counting``).
    ewtcp_a, semicoupled_a
        EWTCP's and Semicoupled's weight a, in [1e-4, 2] (:data:`WEIGHT_RANGE`). Defaults as
        pathpool-cc's: EWTCP 1/n^2 with n the subflows its connection couples when the ACK
        arrives, Semicoupled 1.
    rebuild
        Run ``make -C kernel`` first.
    extra_objects
        Further BPF objects to register in the same loader (``pathpool kernel bench
        --baseline``: another revision's controls under other names).

    Raises
    ------
    KernelError
        When the machine cannot load (not root, no BTF, no MPTCP, no toolchain), when a loader
        is already running, or when an algorithm fails; nothing stays registered then.
    """
    if counting not in COUNTINGS:
        raise KernelError(f"counting = {counting!r}: allowed {', '.join(COUNTINGS)}")
    lo, hi = WEIGHT_RANGE
    for key, val in (("ewtcp_a", ewtcp_a), ("semicoupled_a", semicoupled_a)):
        if val is not None and not lo <= val <= hi:
            raise KernelError(f"{key} = {val}: allowed {lo:g} <= a <= {hi:g}")
    unknown = [n for n in names if n not in ALGORITHMS and n != YARDSTICK]
    if unknown:
        raise KernelError(f"unknown algorithm(s) {unknown}; allowed: {', '.join(ALGORITHMS)}")
    reasons = check_environment(need_toolchain=rebuild)
    if reasons:
        raise KernelError("cannot load BPF congestion controls: " + "; ".join(reasons))
    pid = _running_pid()
    if pid is not None:
        raise KernelError(f"a pathpool loader is already running (pid {pid}); "
                          "`pathpool kernel unload` first")
    clash = registered()
    if clash:
        raise KernelError(f"already registered by something else: {clash} "
                          f"(bpftool? `bpftool struct_ops unregister name {clash[0]}`)")
    if rebuild:
        build()
    args = [str(LOADER)]
    if d_ms is not None:
        args += ["--set", f"d_us={round(d_ms * 1000)}"]
    if mu_pps is not None:
        args += ["--set", f"mu_pps={mu_pps}"]
    if loss_window is not None:
        if not loss_window >= 1:
            raise KernelError(f"loss_window = {loss_window}: must be >= 1 (packets)")
        args += ["--set", f"loss_window={loss_window}"]
    if balia_quantised:
        args += ["--set", "balia_quantised=1"]
    args += ["--set", f"counting={counting}"]
    if ewtcp_a is not None:
        args += ["--set", f"ewtcp_a={ewtcp_a!r}"]
    if semicoupled_a is not None:
        args += ["--set", f"semicoupled_a={semicoupled_a!r}"]
    tunables = dict(TUNABLE_DEFAULTS)
    for k, v in (("d_ms", d_ms), ("mu_pps", mu_pps), ("loss_window", loss_window)):
        if v is not None:
            tunables[k] = float(v)
    tunables["balia_quantised"] = bool(balia_quantised)
    tunables["counting"] = counting
    tunables["ewtcp_a"] = None if ewtcp_a is None else float(ewtcp_a)
    tunables["semicoupled_a"] = 1.0 if semicoupled_a is None else float(semicoupled_a)
    args += [str(object_path(n)) for n in names] + [str(p) for p in extra_objects]
    PIDFILE.parent.mkdir(parents=True, exist_ok=True)
    maps_before = struct_ops_maps()
    errlog = PIDFILE.parent / "loader.err"
    with open(errlog, "wb") as err:
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    assert proc.stdout is not None
    got: list[str] = []
    prog_ids: dict[str, dict[str, int]] = {}
    deadline = time.monotonic() + timeout_s
    error_line = None
    while time.monotonic() < deadline:
        line = proc.stdout.readline().decode(errors="replace").strip()
        if not line:
            break
        if line == "READY":
            PIDFILE.write_text(f"{proc.pid}\n")
            TUNABLES_FILE.write_text(json.dumps(tunables) + "\n")
            MAPS_FILE.write_text(json.dumps(_registered_maps(maps_before, got, prog_ids)) + "\n")
            proc.stdout.close()
            return LoadedAlgorithms(proc.pid, got, prog_ids)
        if line.startswith("registered "):
            got.append(line.split()[1])
        elif line.startswith("prog "):
            _, algo, prog, pid_ = line.split()
            prog_ids.setdefault(algo, {})[prog] = int(pid_)
        elif line.startswith("error "):
            error_line = line[len("error "):]
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    log = errlog.read_text(errors="replace")
    tail = "\n".join(log.strip().splitlines()[-25:])
    what = error_line or f"loader exited with status {proc.returncode} before READY"
    raise KernelError(f"loading failed, nothing left registered: {what}\n{tail}")


def unload(timeout_s: float = 10.0, wait_freed_s: float | None = None) -> list[str]:
    """Stop the loader; returns the names it had registered that are now gone.

    ``wait_freed_s``: also wait (at most that long) until the kernel has freed the loader's
    struct_ops maps, and warn about any it keeps (:func:`wait_maps_freed`). For callers whose
    sockets are all gone (the bench, ``--backend linux`` after its test bed is down); a
    connection still running a control legitimately keeps its map after the unload.

    Raises
    ------
    KernelError
        If algorithms are still registered afterwards (e.g. by bpftool, not by us).
    """
    before = registered()
    pid = _running_pid()
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while _pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        if _pid_alive(pid):
            os.kill(pid, signal.SIGKILL)   # the kernel still unregisters: links close on exit
    PIDFILE.unlink(missing_ok=True)
    TUNABLES_FILE.unlink(missing_ok=True)
    maps = loaded_maps()
    MAPS_FILE.unlink(missing_ok=True)
    # Unregistration is synchronous with the last fd close, but allow the process to finish.
    deadline = time.monotonic() + timeout_s
    while registered() and time.monotonic() < deadline:
        time.sleep(0.02)
    left = registered()
    if left:
        raise KernelError(f"still registered after unload: {left} (not loaded by pathpool's "
                          f"loader? try `bpftool struct_ops unregister name {left[0]}`)")
    if wait_freed_s is not None:
        wait_maps_freed(maps, wait_freed_s)
    return [n for n in before if n not in left]


def _registered_maps(before: dict[int, str], names: list[str],
                     prog_ids: dict[str, dict[str, int]]) -> dict[int, dict]:
    """The struct_ops maps a loader that just reported READY registered (new since ``before``,
    named as one of ``names``), each with the id of its control's pp_conns map (None if it has
    none, e.g. the yardstick)."""
    out: dict[int, dict] = {}
    for i, n in struct_ops_maps().items():
        if i in before or n not in names:
            continue
        conns = None
        init = prog_ids.get(n, {}).get("pp_init")
        if init is not None:
            prog = _bpftool_json("prog", "show", "id", str(init)) or {}
            for mid in prog.get("map_ids", []):
                if (_bpftool_json("map", "show", "id", str(mid)) or {}).get("name") == "pp_conns":
                    conns = mid
        out[i] = {"name": n, "conns": conns}
    return out


def _bpftool_json(*args: str):
    """``bpftool -j ARGS`` parsed, or None (no bpftool, a failure, no JSON)."""
    if shutil.which("bpftool") is None:
        return None
    out = subprocess.run(["bpftool", "-j", *args], capture_output=True, text=True, check=False)
    try:
        return json.loads(out.stdout) if out.returncode == 0 else None
    except ValueError:
        return None


def loaded_maps() -> dict[int, dict]:
    """The running loader's struct_ops maps, ``{id: {"name", "conns"}}`` (empty if none)."""
    try:
        return {int(i): m for i, m in json.loads(MAPS_FILE.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def conn_holders(conns_id: int) -> list[str]:
    """What holds a pp_* control's entries: one line per pp_conns entry with a reference left,
    naming the subflows (``struct sock`` addresses) and their MPTCP connection."""
    out = []
    for e in _bpftool_json("map", "dump", "id", str(conns_id)) or []:
        v = e.get("formatted", {}).get("value", {})
        if not isinstance(v, dict):
            continue
        # pp_common.bpf.h: life = {word: generation << 32 | references, owner}; objects
        # built before pp_conn_life.h had refs and owner at the top.
        life = v.get("life", v)
        if not int(life.get("word", life.get("refs", 0))) & 0xFFFFFFFF:
            continue
        subs = [f"{int(x['sk']):#x}" for x in v.get("s", []) if int(x.get("sk", 0))]
        out.append(f"subflow(s) {', '.join(subs) or '?'} of MPTCP connection "
                   f"{int(life.get('owner', 0)):#x} (pp_conns[{e['formatted'].get('key')}])")
    return out


def struct_ops_maps() -> dict[int, str]:
    """``{map id: name}`` of every BPF struct_ops map the kernel holds (``bpftool struct_ops
    list``; empty without bpftool)."""
    try:
        return {int(d["id"]): str(d["name"]) for d in _bpftool_json("struct_ops", "list") or []}
    except (ValueError, KeyError, TypeError):
        return {}


def wait_maps_freed(maps: dict[int, dict], timeout_s: float = 10.0) -> dict[int, str]:
    """Wait (at most ``timeout_s``) until the kernel has freed the struct_ops maps ``maps``
    (``{id: {"name", "conns"}}``, as :func:`loaded_maps`); returns ``{id: name}`` of those still
    alive then, and warns (:class:`LeftoverWarning`) naming them and, from the control's
    pp_conns entries, the subflows and MPTCP connections that still hold them.

    Unregistering (the loader's link closing) only removes the name: every socket that runs
    the control keeps its struct_ops map (``tcp_congestion_ops``) and with it the programs and
    their maps, until the socket is destroyed (``tcp_cleanup_congestion_control`` in
    ``tcp_v4_destroy_sock``, Linux 6.18). A map that stays is held by such a socket, usually
    in a namespace whose name is gone (the socket keeps the namespace too).

    Examples
    --------
    >>> wait_maps_freed(loaded_maps(), timeout_s=1)   # doctest: +SKIP
    {}
    """
    deadline = time.monotonic() + timeout_s
    while True:
        alive = {i: n for i, n in struct_ops_maps().items() if maps.get(i, {}).get("name") == n}
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if alive:
        held = []
        for i, n in sorted(alive.items()):
            conns = maps[i].get("conns")
            holders = conn_holders(conns) if conns is not None else []
            held.append(f"map {i} ({n}): " + ("; ".join(holders) if holders else
                                              "held by a socket still running it"))
        warnings.warn(f"struct_ops map(s) still alive {timeout_s:g} s after the unload: "
                      + " | ".join(held) + ". A socket keeps the control it runs; one found in no "
                      "named namespace is in a deleted one, which it keeps alive (see "
                      "python/pathpool/kernel/README.md, Cleanup)", LeftoverWarning, stacklevel=2)
    return alive


def status() -> dict:
    """What is registered and whether pathpool's loader runs."""
    return {
        "loader_pid": _running_pid(),
        "registered": registered(),
        "available": AVAILABLE.read_text().split(),
        "problems": check_environment(need_toolchain=False),
    }


if __name__ == "__main__":  # pragma: no cover - manual use
    print(status(), file=sys.stderr)
