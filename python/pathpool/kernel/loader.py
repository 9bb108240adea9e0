"""Build, load, list and unload the BPF congestion controls.

Where the kernel part comes from: in a checkout (``kernel/Makefile`` beside the package) it is
built with ``make -C kernel`` into ``kernel/build``; an installed wheel carries it prebuilt in
``pathpool/kernel/bin`` (:data:`BUNDLED_DIR`): the BPF objects, compiled once as CO-RE objects
that libbpf relocates against the running kernel's BTF, and the loader and the test bed's delay
forwarder linked statically, so nothing but the kernel is needed from the machine.

Loading runs ``pp_loader`` (C, libbpf), which registers every algorithm through a
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
#: The prebuilt kernel part an installed wheel carries (``make -C kernel package``).
BUNDLED_DIR = Path(__file__).resolve().parent / "bin"
#: True in a checkout: the kernel part is built from ``kernel/`` (the wheel's is prebuilt).
FROM_SOURCE = (KERNEL_DIR / "Makefile").is_file()
#: Where the loader, the forwarder and the BPF objects are run from.
RUNTIME_DIR = BUILD_DIR if FROM_SOURCE else BUNDLED_DIR
LOADER = RUNTIME_DIR / "pp_loader"
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
#: Where the running loader's global counters are, ``{algorithm: {counter: [map id, offset]}}``
#: (``pp_ssthresh_repairs``: kernel faults the control repaired; read by :func:`status`).
COUNTERS_FILE = PIDFILE.parent / "counters.json"
#: ``--default NAME``'s promise: ``{"previous", "default", "holder"}``. Written before the
#: sysctl is set and removed once it is put back; a file whose holder is dead (SIGKILL) is a
#: promise still to keep, which the next load, unload or status keeps (:func:`recover_default`).
DEFAULT_FILE = PIDFILE.parent / "default.json"
#: Which process started the running loader, ``{"pid", "cmdline"}`` (:func:`status`): the
#: service's `load --foreground`, or a `load` that has exited since (the loader is a daemon).
HOLDER_FILE = PIDFILE.parent / "holder.json"
SYSCTL_CC = Path("/proc/sys/net/ipv4/tcp_congestion_control")


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
    return RUNTIME_DIR / f"{name}.bpf.o"


def check_environment(need_toolchain: bool = True) -> list[str]:
    """Reasons why loading cannot work on this machine (empty list: it can).

    Parameters
    ----------
    need_toolchain
        Also require clang and bpftool (to build the objects).
    """
    reasons = []
    need_toolchain = need_toolchain and FROM_SOURCE
    if not FROM_SOURCE and not LOADER.exists():
        reasons.append(f"this installation has no prebuilt kernel part ({BUNDLED_DIR} missing): "
                       "install a wheel built by `make wheel`, or run from a checkout")
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
    foreground: bool = False,
    verbose: bool = False,
) -> LoadedAlgorithms:
    """Register ``names`` in the kernel and keep them registered until :func:`unload`.

    Parameters
    ----------
    names
        Algorithms to load (default: all of :data:`ALGORITHMS`).
    d_ms, mu_pps
        RSF-DB's target delay d (ms) and RSF-LB's target loss rate mu (packets/s); defaults
        100 ms and 4 packets/s (Pokhrel & Williamson 2020, Section 4).
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
        Run ``make -C kernel`` first (in a checkout; an installed wheel's part is prebuilt).
    extra_objects
        Further BPF objects to register in the same loader (``pathpool kernel bench
        --baseline``: another revision's controls under other names).
    foreground
        The loader dies with this process (``PR_SET_PDEATHSIG``) instead of running on as a
        daemon: ``pathpool kernel load --foreground``, a service whose registrations must not
        outlive it.
    verbose
        On failure, append libbpf's and the verifier's log to the message (otherwise the
        message names the missing feature or the failing stage only; the log stays in
        ``/run/pathpool/loader.err``).

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
    recover_default()
    rebuild = rebuild and FROM_SOURCE
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
    args = [str(LOADER)] + (["--die-with-parent"] if foreground else [])
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
    counters: dict[str, dict[str, list[int]]] = {}
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
            COUNTERS_FILE.write_text(json.dumps(counters) + "\n")
            HOLDER_FILE.write_text(json.dumps({"pid": os.getpid(), "cmdline": " ".join(sys.argv)})
                                   + "\n")
            proc.stdout.close()
            return LoadedAlgorithms(proc.pid, got, prog_ids)
        if line.startswith("registered "):
            got.append(line.split()[1])
        elif line.startswith("prog "):
            _, algo, prog, pid_ = line.split()
            prog_ids.setdefault(algo, {})[prog] = int(pid_)
        elif line.startswith("counter "):
            _, algo, var, map_id, off = line.split()
            counters.setdefault(algo, {})[var] = [int(map_id), int(off)]
        elif line.startswith("error "):
            error_line = line[len("error "):]
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    log = errlog.read_text(errors="replace")
    tail = "\n".join(log.strip().splitlines()[-25:])
    what = error_line or f"loader exited with status {proc.returncode} before READY"
    # Name the missing feature: what the probe finds missing in this kernel, else what the log
    # says. A refusal on a kernel with every feature is the verifier's, named as such.
    missing = [r for r in check()[0] if not r.startswith("verifier:")]
    why = ("missing: " + "; ".join(missing)) if missing else explain_failure(what, log)
    msg = f"loading failed, nothing left registered: {what}" + (f"\n{why}" if why else "")
    if verbose:
        msg += f"\n{tail}"
    elif tail:
        msg += f"\n(libbpf's and the verifier's log: {errlog}, or --verbose)"
    raise KernelError(msg)


#: What a failed load's log says, and the kernel feature that is missing then (checked in order).
_FAILURES: tuple[tuple[str, str], ...] = (
    ("Operation not permitted", ("permission: loading needs root (CAP_BPF, CAP_NET_ADMIN and, "
     "before Linux 5.8, CAP_SYS_ADMIN)")),
    ("failed to find valid kernel BTF", ("kernel BTF: /sys/kernel/btf/vmlinux is missing "
     "(CONFIG_DEBUG_INFO_BTF=y)")),
    ("struct_ops init_kern", ("struct_ops: this kernel has no BPF struct_ops for "
     "tcp_congestion_ops (Linux >= 5.6 with CONFIG_BPF_JIT)")),
    ("in ksym", "kfunc: a kernel function the controls call is not in this kernel"),
    ("ksym", "kfunc: a kernel function the controls call is not in this kernel"),
    ("invalid func unknown#", "helper: a BPF helper the controls call is not in this kernel"),
    ("unknown func", "helper: a BPF helper the controls call is not allowed here"),
    ("failed to resolve CO-RE relocation", ("CO-RE: a kernel structure the controls read "
     "(tcp_sock, inet_connection_sock or MPTCP's subflow context) lacks a field they need")),
    ("JIT", "BPF JIT: struct_ops needs it (net.core.bpf_jit_enable=1, CONFIG_BPF_JIT=y)"),
)


def explain_failure(error_line: str, log: str) -> str | None:
    """The kernel feature a failed load lacks, in one line, from the loader's ``error`` line and
    the libbpf/verifier log; None when neither says."""
    for needle, what in _FAILURES:
        if needle in log or needle in error_line:
            return f"missing feature: {what} (`pathpool kernel check` lists every reason)"
    if " register:" in error_line and "Invalid argument" in error_line:
        return ("missing feature: struct_ops links (registration that ends with the loader, "
                "Linux >= 6.4)")
    if " verifier:" in error_line:
        return ("the verifier refused a control on this kernel (`pathpool kernel check` says "
                "whether a feature is missing; --verbose shows the verifier's log)")
    return None


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
    # The sysctl first: it must never name a control that is no longer registered.
    restore_default()
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
    COUNTERS_FILE.unlink(missing_ok=True)
    HOLDER_FILE.unlink(missing_ok=True)
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
                      "kernel/README.md, Troubleshooting)", LeftoverWarning, stacklevel=2)
    return alive


# ------------------------------------------------------------------ the system default
def current_default() -> str:
    """``net.ipv4.tcp_congestion_control`` of this network namespace."""
    return SYSCTL_CC.read_text().strip()


def set_default(name: str, holder: int) -> str:
    """Make ``name`` (registered) the system default while ``holder`` (a pid) lives; returns
    the previous default. The promise to put it back is written first (:data:`DEFAULT_FILE`),
    so that a holder killed with SIGKILL leaves it to :func:`recover_default`."""
    if name not in registered():
        raise KernelError(f"--default {name}: not registered (loaded: {', '.join(registered())})")
    previous = current_default()
    if DEFAULT_FILE.exists():
        previous = json.loads(DEFAULT_FILE.read_text()).get("previous", previous)
    DEFAULT_FILE.parent.mkdir(parents=True, exist_ok=True)
    DEFAULT_FILE.write_text(json.dumps({"previous": previous, "default": name,
                                        "holder": holder}) + "\n")
    SYSCTL_CC.write_text(name)
    return previous


def restore_default() -> str | None:
    """Keep :func:`set_default`'s promise: the previous default back, unless someone changed the
    sysctl since (then theirs stays). Returns the value restored, or None."""
    try:
        st = json.loads(DEFAULT_FILE.read_text())
    except (OSError, ValueError):
        return None
    restored = None
    if current_default() == st.get("default") and st.get("previous"):
        try:
            SYSCTL_CC.write_text(st["previous"])
            restored = st["previous"]
        except OSError:   # the previous one is gone too (a module unloaded): the kernel's own
            SYSCTL_CC.write_text("reno")
            restored = "reno"
    DEFAULT_FILE.unlink(missing_ok=True)
    return restored


def recover_default() -> str | None:
    """:func:`restore_default` if the holder of the promise is dead (killed with SIGKILL, a
    crash, a reboot's stale /run): the next load, unload or status keeps it."""
    if os.geteuid() != 0:       # only root may put the sysctl back (status as a user reads)
        return None
    try:
        st = json.loads(DEFAULT_FILE.read_text())
    except (OSError, ValueError):
        return None
    holder = st.get("holder")
    if isinstance(holder, int) and _pid_alive(holder):
        return None
    return restore_default()


ALLOWED = Path("/proc/sys/net/ipv4/tcp_allowed_congestion_control")


def allow(names: list[str]) -> None:
    """Add ``names`` to ``net.ipv4.tcp_allowed_congestion_control``: without it, only processes
    with CAP_NET_ADMIN may choose them (setsockopt TCP_CONGESTION, ``iperf3 -C``) and no other
    network namespace (a container) may make one its default. Nothing to undo: the kernel drops
    a control from the list when it is unregistered."""
    have = ALLOWED.read_text().split()
    ALLOWED.write_text(" ".join(have + [n for n in names if n not in have]))


# ------------------------------------------------------------------ check
def _caps() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


#: The oldest kernel the objects can load into, and why: struct_ops links (BPF_F_LINK on a
#: struct_ops map + BPF_LINK_CREATE, which unregister when the loader exits) came with 6.4;
#: everything else is older (struct_ops for tcp_congestion_ops 5.6, bpf_loop 5.17,
#: bpf_rdonly_cast 6.2).
MIN_KERNEL = (6, 4)


def check(verbose: bool = False) -> tuple[list[str], list[str]]:
    """Whether this kernel can run the controls: ``(reasons it cannot, what was checked)``.

    Each reason is one line naming the feature and what to do. The objects' needs (helpers,
    kfuncs, struct_ops and its links) are read from the objects themselves by ``pp_loader
    --probe``, which, as root, also passes each through the verifier without registering it.
    """
    reasons: list[str] = []
    seen: list[str] = []
    # Not the version number: distribution kernels backport features (the lines below test the
    # features themselves).
    rel = os.uname().release
    seen.append(f"kernel {rel}")
    caps = _caps()
    if os.geteuid() != 0 and not (caps >> 39 & 1 and caps >> 12 & 1):
        reasons.append("permission: not root and without CAP_BPF + CAP_NET_ADMIN; run it with "
                       "sudo (or as a service, which runs as root)")
    if not BTF.exists():
        reasons.append(f"BTF: {BTF} is missing; the kernel needs CONFIG_DEBUG_INFO_BTF=y "
                       "(most distribution kernels have it)")
    mptcp = Path("/proc/sys/net/mptcp/enabled")
    if not mptcp.exists():
        reasons.append("MPTCP: not in this kernel (CONFIG_MPTCP=y; Linux >= 5.6)")
    elif mptcp.read_text().strip() != "1":
        reasons.append("MPTCP: disabled; `sysctl -w net.mptcp.enabled=1` (and in "
                       "/etc/sysctl.d to keep it)")
    else:
        seen.append("MPTCP enabled")
    jit = Path("/proc/sys/net/core/bpf_jit_enable")
    if not jit.exists():
        reasons.append("BPF JIT: not in this kernel (CONFIG_BPF_JIT=y); struct_ops needs it")
    elif jit.read_text().strip() == "0":
        reasons.append("BPF JIT: disabled; `sysctl -w net.core.bpf_jit_enable=1`")
    else:
        seen.append("BPF JIT on")
    objs = [object_path(n) for n in ALGORITHMS]
    missing = [p for p in [LOADER, *objs] if not p.exists()]
    if missing:
        reasons.append("files: " + ", ".join(str(p) for p in missing) + " missing; " +
                       ("`make -C kernel runtime`" if FROM_SOURCE else
                        "reinstall the wheel (this installation has no prebuilt kernel part)"))
        return reasons, seen
    proc = subprocess.run([str(LOADER), "--probe", *map(str, objs)], capture_output=True,
                          text=True, check=False, timeout=120)
    more, what = probe_reasons(proc.stdout, proc.stderr, verbose=verbose)
    reasons += [r for r in more if not (r.startswith("BTF") and any(x.startswith("BTF") for x in reasons))]
    if "DONE" not in proc.stdout and not any(r.startswith("BTF") for r in reasons):
        reasons.append(f"probe: {LOADER} --probe failed ({proc.returncode}): "
                       f"{(proc.stdout + proc.stderr).strip()[-300:]}")
    return reasons, seen + what


def probe_reasons(stdout: str, stderr: str = "", verbose: bool = False) -> tuple[list[str], list[str]]:
    """``pp_loader --probe``'s lines as :func:`check`'s reasons (one line each, naming the
    feature and what to do) and what was found present."""
    reasons: list[str] = []
    helpers: set[str] = set()
    kfuncs: set[str] = set()
    verified = 0
    for line in stdout.splitlines():
        w = line.split()
        if w[:1] == ["kernel"] and w[-1] == "missing":
            reasons.append({
                "btf": f"BTF: {BTF} cannot be read (CONFIG_DEBUG_INFO_BTF=y)",
                "struct_ops": "struct_ops: the kernel has no BPF struct_ops for "
                              "tcp_congestion_ops (Linux >= 5.6, CONFIG_BPF_JIT=y)",
                "struct_ops_link": "struct_ops links: the kernel cannot register a struct_ops "
                                   f"through a BPF link (Linux >= {MIN_KERNEL[0]}.{MIN_KERNEL[1]})",
            }.get(w[1], line))
        elif w[:1] == ["helper"] and len(w) == 4:
            if w[3] == "ok":
                helpers.add(w[2])
            else:
                reasons.append(f"helper: {w[2]} (used by {w[1]}) is not in this kernel")
        elif w[:1] == ["kfunc"] and len(w) == 4:
            if w[3] == "ok":
                kfuncs.add(w[2])
            elif not any(r.startswith(f"kfunc: {w[2]} ") for r in reasons):
                reasons.append(f"kfunc: {w[2]} (used by {w[1]} and others) is not in this "
                               f"kernel's BTF" + (" (Linux >= 6.2)" if w[2] == "bpf_rdonly_cast"
                                                 else ""))
        elif w[:1] == ["verify"]:
            verified += 1
        elif w[:1] == ["error"]:
            why = explain_failure(line, stderr) or "the verifier refused it"
            reasons.append(f"verifier: {w[1]}: {why}" +
                           (f"\n{stderr.strip()}" if verbose else " (--verbose: the log)"))
    seen = [f"helpers {', '.join(sorted(helpers))}; kfuncs {', '.join(sorted(kfuncs))}"]
    if verified:
        seen.append(f"{verified} controls passed the verifier")
    return reasons, seen


# ------------------------------------------------------------------ status
def read_counters() -> dict[str, dict[str, int]]:
    """The running loader's global counters, ``{algorithm: {counter: value}}`` (root)."""
    out: dict[str, dict[str, int]] = {}
    try:
        where = json.loads(COUNTERS_FILE.read_text())
    except (OSError, ValueError):
        return out
    for algo, vars_ in where.items():
        for var, (map_id, off) in vars_.items():
            r = subprocess.run([str(LOADER), "--read", str(map_id), str(off)], capture_output=True,
                               text=True, check=False, timeout=10)
            if r.returncode == 0:
                out.setdefault(algo, {})[var] = int(r.stdout.strip())
    return out


def sockets_per_algorithm() -> dict[str, int]:
    """TCP sockets (MPTCP subflows included) running each pp_* control, in this network
    namespace and every named one (``ss -tinH``: a socket's line of details names its
    congestion control)."""
    counts = {n: 0 for n in (*ALGORITHMS, YARDSTICK)}
    if shutil.which("ss") is None:
        return counts
    spaces: list[list[str]] = [[]]
    if shutil.which("ip"):
        ls = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
        spaces += [["ip", "netns", "exec", line.split()[0]] for line in ls.stdout.splitlines()
                   if line.strip()]
    for pre in spaces:
        r = subprocess.run([*pre, "ss", "-tinH"], capture_output=True, text=True, check=False)
        for word in r.stdout.split():
            if word in counts:
                counts[word] += 1
    return counts


def status() -> dict:
    """What is registered, by which process, how many sockets run each control, the repair
    counters, the system default and whether this machine can load."""
    recovered = recover_default()
    pid = _running_pid()
    holder = None
    if pid is not None:
        try:
            holder = json.loads(HOLDER_FILE.read_text())
            holder["running"] = Path(f"/proc/{int(holder['pid'])}").exists()
        except (OSError, ValueError, KeyError, TypeError):
            holder = None
    try:
        default = json.loads(DEFAULT_FILE.read_text())
    except (OSError, ValueError):
        default = None
    return {
        "loader_pid": pid,
        "holder": holder,
        "registered": registered(),
        "available": AVAILABLE.read_text().split(),
        "default": current_default(),
        "default_promise": default,
        "default_restored": recovered,
        "sockets": sockets_per_algorithm() if pid is not None or registered() else {},
        "counters": read_counters() if pid is not None else {},
        "problems": check_environment(need_toolchain=False),
    }


if __name__ == "__main__":  # pragma: no cover - manual use
    print(status(), file=sys.stderr)
