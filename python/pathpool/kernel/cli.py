"""``pathpool kernel load|unload|status`` and ``pathpool testbed up|down|run``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from pathpool.cliutil import print_table
from pathpool.kernel import loader


class _LazyConsole:
    """rich's Console, imported when something is printed (not when the parser is built)."""

    def __getattr__(self, name: str):
        from rich.console import Console

        console = Console()
        globals()["_console"] = console
        return getattr(console, name)


def Table(*args, **kwargs):
    from rich.table import Table as RichTable

    return RichTable(*args, **kwargs)


_console = _LazyConsole()
_TB_STATE = Path("/run/pathpool/testbed.json")


def _path_spec(text: str) -> str:
    """argparse type of ``--path``: checked when parsed, so a bad one is one line and exit 2."""
    parts = text.split(",")
    try:
        if len(parts) not in (3, 4):
            raise ValueError
        rate, delay, loss = (float(x) for x in parts[:3])
        queue = int(parts[3]) if len(parts) == 4 else 100
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected RATE_MBPS,DELAY_MS,LOSS[,QUEUE_PKTS] "
                                         "e.g. 10,20,0.01 or 10,20,0,50") from None
    if not (rate > 0 and delay >= 0 and 0 <= loss < 1 and queue >= 1):
        raise argparse.ArgumentTypeError(f"{text!r}: need RATE_MBPS > 0, DELAY_MS >= 0, 0 <= LOSS < 1, "
                                         "QUEUE_PKTS >= 1 (default 100)")
    return text


def _egress_spec(text: str) -> list[int]:
    """argparse type of ``--egress``: one router link index per path, e.g. ``0,1,1``."""
    try:
        links = [int(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected one router link per path, e.g. 0,1,1") from None
    if any(j < 0 for j in links):
        raise argparse.ArgumentTypeError(f"{text!r}: router links are numbered from 0")
    return links


def _access_spec(text: str):
    """argparse type of ``--access``: ``RATE_MBPS,QUEUE_PKTS,PATH+PATH...`` (a shared first hop)."""
    from pathpool.kernel.testbed import AccessLink

    try:
        rate_s, queue_s, paths_s = text.split(",")
        rate, queue = float(rate_s), int(queue_s)
        paths = tuple(int(k) for k in paths_s.split("+"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected RATE_MBPS,QUEUE_PKTS,PATH+PATH... "
                                         "e.g. 10,50,0+1") from None
    if not (rate > 0 and queue >= 1 and all(k >= 0 for k in paths)):
        raise argparse.ArgumentTypeError(f"{text!r}: need RATE_MBPS > 0, QUEUE_PKTS >= 1, paths >= 0")
    return AccessLink(rate_mbps=rate, queue_pkts=queue, paths=paths)


def _paths(specs: list[str]):
    from pathpool.kernel.testbed import PathSpec

    out = []
    for s in specs:
        parts = s.split(",")
        rate, delay, loss = (float(x) for x in parts[:3])
        queue = int(parts[3]) if len(parts) == 4 else 100
        out.append(PathSpec(rate_mbps=rate, delay_ms=delay, loss=loss, queue_pkts=queue))
    return out


def _testbed(a: argparse.Namespace):
    """The test bed the options describe, checked (not built): a ValueError is the user's input."""
    from pathpool.kernel.testbed import Testbed

    return Testbed(_paths(a.path or ["10,10,0", "10,20,0"]), shared_bottleneck=a.shared,
                   prefix=a.prefix, quickack=not a.delayed_acks, egress=a.egress,
                   access=a.access or ())


def _load(a: argparse.Namespace) -> int:
    import signal
    import time

    from pathpool.errors import fail

    names = tuple(a.algorithms or loader.ALGORITHMS)
    if a.default is not None and a.default not in names:
        return fail(f"pathpool kernel load: --default {a.default}: not among the algorithms "
                    f"loaded ({', '.join(names)})", 2)
    if a.foreground:
        _unwind_on_signals()
    try:
        got = loader.load(names, d_ms=a.d_ms, mu_pps=a.mu_pps, loss_window=a.loss_window,
                          balia_quantised=a.balia_quantised, counting=a.counting,
                          ewtcp_a=a.ewtcp_a, semicoupled_a=a.semicoupled_a,
                          foreground=a.foreground, verbose=a.verbose)
    except loader.KernelError as e:
        print(e, file=sys.stderr)
        return 1
    if a.allow:
        try:
            loader.allow(got.names)
        except OSError as e:
            loader.unload()
            return fail(f"pathpool kernel load: --allow: {e}", 1)
    if not a.foreground:
        try:
            previous = loader.set_default(a.default, got.pid) if a.default else None
        except (loader.KernelError, OSError) as e:
            loader.unload()
            return fail(f"pathpool kernel load: {e}", 1)
        _say(f"loaded {', '.join(got.names)} (loader pid {got.pid}){_default_note(a, previous)}; "
             "`pathpool kernel unload` removes them")
        return 0
    previous = None
    try:
        if a.default is not None:
            previous = loader.set_default(a.default, got.pid)
        _say(f"loaded {', '.join(got.names)} (loader pid {got.pid}){_default_note(a, previous)}; "
             "registered until this process stops (SIGTERM, Ctrl-C)")
        _sd_notify("READY=1")
        while True:
            try:
                wpid, status = os.waitpid(got.pid, os.WNOHANG)
            except ChildProcessError:
                wpid, status = got.pid, 0
            if wpid == got.pid:
                # Ended by someone else: `pathpool kernel unload` (SIGTERM, a clean exit) or a kill.
                sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
                _say(f"the loader (pid {got.pid}) ended"
                     f"{f' by signal {signal.Signals(sig).name}' if sig else ''}; "
                     "nothing is registered any more")
                return 1 if sig else 0
            time.sleep(0.2)
    except (KeyboardInterrupt, SystemExit):
        return 0   # the stop asked for (SIGTERM from systemd, Ctrl-C): a clean exit
    finally:
        # The sysctl back first (unload does it before it stops the loader), then the loader.
        try:
            gone = loader.unload()
            back = f"; net.ipv4.tcp_congestion_control {previous} again" if previous else ""
            _say(f"unloaded {', '.join(gone) or 'nothing'}{back}")
        except loader.KernelError as e:
            print(e, file=sys.stderr, flush=True)


def _sd_notify(message: str) -> None:
    """Tell systemd (a Type=notify unit) the state; nothing outside such a unit."""
    import socket

    addr = os.environ.get("NOTIFY_SOCKET")
    if not addr:
        return
    if addr.startswith("@"):
        addr = "\0" + addr[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.sendto(message.encode(), addr)


def _say(line: str) -> None:
    """One unwrapped line at once: a service's log (journald) and scripts read them whole."""
    print(line, flush=True)


def _default_note(a: argparse.Namespace, previous: str | None) -> str:
    if previous is None:
        return ""
    return (f"; net.ipv4.tcp_congestion_control {a.default} (was {previous}, put back when "
            "they are unloaded)")


def _check(a: argparse.Namespace) -> int:
    reasons, seen = loader.check(verbose=a.verbose)
    for r in reasons:
        print(f"pathpool kernel check: {r}")
    if reasons:
        return 2
    print(f"OK: this kernel can run {', '.join(loader.ALGORITHMS)} ({'; '.join(seen)})")
    return 0


UNIT = """\
# pathpool's BPF congestion controls as a service: `pathpool kernel unit > \\
#   /etc/systemd/system/pathpool-cc.service && systemctl daemon-reload && \\
#   systemctl enable --now pathpool-cc` (docs/kernel-deploy.md).
[Unit]
Description=pathpool multipath congestion controls (BPF struct_ops)
# Ready (registered, default set) before the network comes up: what starts after it gets them.
Before=network-pre.target
Wants=network-pre.target

[Service]
# READY=1 once registered (sd_notify), so that ordering after this unit means loaded.
Type=notify
# The loader's registrations and --default's sysctl last exactly as long as this process.
ExecStart={exe} kernel load --foreground{allow}{default} {algorithms}
# After any stop, SIGKILL included: puts the previous default back if the process could not.
ExecStopPost={exe} kernel unload
KillMode=mixed
TimeoutStopSec=20
Restart=on-failure
RestartSec=5

[Install]
WantedBy=multi-user.target
"""


def _unit(a: argparse.Namespace) -> int:
    import shlex
    import shutil

    from pathpool.errors import fail

    names = a.algorithms or list(loader.ALGORITHMS)
    bad = [n for n in names if n not in loader.ALGORITHMS]
    if bad:
        return fail(f"pathpool kernel unit: {', '.join(bad)}: allowed {', '.join(loader.ALGORITHMS)}", 2)
    if a.default is not None and a.default not in names:
        return fail(f"pathpool kernel unit: --default {a.default}: not among {', '.join(names)}", 2)
    # The entry point of the installation running this (a venv's bin/ first), absolute: systemd
    # has no PATH of the user's.
    beside = Path(sys.executable).parent / "pathpool"
    exe = str(beside) if beside.is_file() else shutil.which("pathpool")
    if exe is None:
        return fail("pathpool kernel unit: no `pathpool` executable found beside "
                    f"{sys.executable} or on PATH", 2)
    exe = shlex.quote(os.path.abspath(exe))
    sys.stdout.write(UNIT.format(exe=exe, algorithms=" ".join(names),
                                 allow=" --allow" if a.allow else "",
                                 default=f" --default {a.default}" if a.default else ""))
    return 0


def _bench(a: argparse.Namespace) -> int:
    from pathpool.kernel.bench import run_bench

    _unwind_on_signals()

    try:
        algos = tuple(a.algorithms.split(",")) if a.algorithms else loader.ALGORITHMS
        bad = [x for x in algos if x not in loader.ALGORITHMS]
        if bad:
            print(f"pathpool kernel bench: --algorithms {','.join(bad)}; allowed: "
                  f"{', '.join(loader.ALGORITHMS)}", file=sys.stderr)
            return 2
        r = run_bench(a.duration, algorithms=algos, rate_mbps=a.rate_mbps, counting=a.counting, rounds=a.rounds,
                      baseline=a.baseline, regime=a.regime, conns=a.conns, cpu=a.cpu,
                      probes=a.probes)
    except ValueError as e:   # an argument out of range (--cpu not one this process may use)
        print(f"pathpool kernel bench: {e}", file=sys.stderr)
        return 2
    except loader.KernelError as e:
        _console.print(f"[red]{e}[/red]")
        return 1
    if a.json:
        json.dump(r, sys.stdout, indent=1)
        print()
        return 0
    rate = f"{r['rate_mbps']:g} Mbit/s" if r["rate_mbps"] else "unshaped"
    pin = "" if r["cpu"] is None else f", traffic on CPU {r['cpu']}"
    t = Table(title=f"BPF callback cost, {r['regime']} regime ({r['conns']} connection(s) per "
                    f"control, 2 paths {rate}, {r['delay_ms']:g} ms{pin}), {r['rounds']} x "
                    f"{r['duration_s']:g} s of traffic, counting {r['counting']} (medians over "
                    f"rounds)\n{r['machine']}")
    cols = ["algorithm", "callback", "calls", "ns/call", f"x {loader.YARDSTICK}", "range",
            "insns", "x86 bytes"]
    if r.get("baseline"):
        cols.append(f"x {r['baseline']}")
    for c in cols:
        t.add_column(c)
    for row in r["rows"]:
        ns, ratio = row["ns_per_call"], row["ratio"]
        got = [x for x in row["ratios"] if x is not None]
        cells = [row["algorithm"], row["callback"], f"{row['calls']:.0f}",
                 "-" if ns is None else f"{ns:.0f}", "-" if ratio is None else f"{ratio:.2f}",
                 f"{min(got):.2f}-{max(got):.2f}" if got else "-",
                 "-" if row.get("insns") is None else str(row["insns"]),
                 "-" if row.get("bytes_jited") is None else str(row["bytes_jited"])]
        if r.get("baseline"):
            vb = row.get("vs_baseline")
            cells.append("-" if vb is None else f"{vb:.2f}")
        t.add_row(*cells)
    print_table(t)
    return 0


def _unload(_a: argparse.Namespace) -> int:
    try:
        gone = loader.unload()
    except loader.KernelError as e:
        _console.print(f"[red]{e}[/red]")
        return 1
    _console.print(f"unloaded: {', '.join(gone) or 'nothing was loaded'}")
    return 0


def _status(a: argparse.Namespace) -> int:
    st = loader.status()
    if a.json:
        json.dump(st, sys.stdout)
        print()
        return 0
    t = Table(title="pathpool BPF congestion controls")
    for c in ("algorithm", "registered", "sockets", "repairs"):
        t.add_column(c)
    for n in loader.ALGORITHMS:
        reg = n in st["registered"]
        socks = st["sockets"].get(n)
        rep = st["counters"].get(n, {}).get("pp_ssthresh_repairs")
        t.add_row(n, "yes" if reg else "no", "-" if socks is None else str(socks),
                  "-" if rep is None else str(rep))
    print_table(t)
    pid = st["loader_pid"]
    if pid is None:
        _console.print("loader: not running")
    else:
        h = st["holder"]
        by = (f", started by pid {h['pid']} ({h['cmdline']}"
              f"{'' if h.get('running') else ', since exited: the loader runs on as a daemon'})"
              if h else "")
        _console.print(f"loader: pid {pid}{by}", highlight=False)
    promise = st["default_promise"]
    held = f" (set by pathpool; {promise['previous']} is put back at unload)" if promise else ""
    _console.print(f"net.ipv4.tcp_congestion_control: {st['default']}{held}", highlight=False)
    if st["default_restored"]:
        _console.print(f"[yellow]a killed loader had set the default: "
                       f"{st['default_restored']} put back[/yellow]", highlight=False)
    _console.print(f"available: {' '.join(st['available'])}", highlight=False)
    _console.print("sockets: TCP sockets and MPTCP subflows running it (this and every named "
                   "network namespace); repairs: kernel faults the control repaired "
                   "(pp_ssthresh_repairs)", style="dim")
    for p in st["problems"]:
        _console.print(f"[yellow]cannot load here: {p}[/yellow]")
    return 0


def _tb_run(a: argparse.Namespace) -> int:
    from pathpool.errors import fail
    from pathpool.kernel.testbed import FlowSpec, records, write_results

    try:
        bed = _testbed(a)
    except ValueError as e:
        return fail(f"pathpool testbed run: {e}", 2)
    _unwind_on_signals()
    flows = [FlowSpec("mptcp0", "mptcp", a.cc, 0)]
    if a.with_tcp:
        flows.append(FlowSpec("tcp0", "tcp", "reno", 0))
    with bed as tb:
        raw = tb.run_flows(flows, duration_s=a.duration)
        fr, sr = records(tb, raw, flows)
    meta = {"paths": [p.describe() for p in bed.paths], "egress": bed.egress,
            "access": [vars(x) for x in bed.access], "backend": "linux"}
    write_results(Path(a.output), fr, sr, meta)
    t = Table(title=f"linux test bed, {a.duration:g} s")
    for c in ("flow", "subflow", "path", "goodput Mbit/s", "retrans"):
        t.add_column(c)
    for r in sr:
        t.add_row(r["flow"], str(r["subflow"]), r["path"], f"{r['goodput_bps'] / 1e6:.2f}",
                  str(r["retransmitted_packets"]))
    print_table(t)
    _console.print(f"results in {a.output}")
    return 0


def _unwind_on_signals() -> None:
    """SIGTERM/SIGHUP (`kill`, `pathpool testbed down`, a closed terminal) raise SystemExit, so
    they unwind through the same `with`/`finally` teardown as Ctrl-C: test bed down, BPF
    controls this process loaded unloaded, sysctls restored."""
    import signal

    def _stop(signum, _frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGHUP, _stop)
    # A shell without job control starts background commands (`cmd &` in a script, CI
    # runners) with SIGINT ignored, and Python then keeps it ignored: an explicit SIGINT
    # (`kill -INT`) would leave the test bed up until its hold expired. SIGINT is this
    # command's documented way to stop, so it always unwinds.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _tb_up(a: argparse.Namespace) -> int:
    import time

    from pathpool.errors import fail
    from pathpool.kernel.testbed import TestbedBusy, holder_pidfile, reclaim

    try:
        bed = _testbed(a)
    except ValueError as e:
        return fail(f"pathpool testbed up: {e}", 2)
    _unwind_on_signals()
    if os.geteuid() == 0 and reclaim(a.prefix):
        print(f"pathpool testbed up: reclaimed the namespaces a killed test bed left ({a.prefix}*)",
              file=sys.stderr)
    try:
        bed.check_free()   # before the pid file: a refused `up` must not take over a live one's
    except TestbedBusy as e:
        return fail(f"pathpool testbed up: {e}", 2)
    pf = holder_pidfile(a.prefix)
    pf.parent.mkdir(parents=True, exist_ok=True)
    pf.write_text(f"{os.getpid()}\n")
    try:
        with bed as tb:
            _console.print(f"up: namespaces {tb.ns_c} {tb.ns_r} {tb.ns_s}; server "
                           f"{tb.client_addr(0)} -> 10.79.0.1; "
                           f"{'delayed' if a.delayed_acks else 'per-segment'} ACKs; held for "
                           f"{a.hold:g} s (Ctrl-C or `pathpool testbed down` ends it)", highlight=False)
            sys.stdout.flush()
            try:
                time.sleep(a.hold)
            except KeyboardInterrupt:
                pass
    finally:
        pf.unlink(missing_ok=True)
    return 0


def _tb_down(a: argparse.Namespace) -> int:
    from pathpool.kernel.testbed import teardown

    ok = teardown(a.prefix)
    _console.print("no test-bed namespace left" if ok else "[red]namespaces still present[/red]")
    return 0 if ok else 1


def run_linux_command(a: argparse.Namespace) -> int:
    """``pathpool run SCENARIO --backend linux`` (called by pathpool.sim.cli's ``run``).

    Exit codes as the simulator's: 2 bad or unsupported scenario, 1 the run failed.
    """
    from pathpool.errors import ScenarioError, fail
    from pathpool.kernel.mapping import map_scenario
    from pathpool.kernel.run import run_linux

    if not a.max_duration > 0:
        return fail(f"--max-duration {a.max_duration}: must be > 0 seconds", 2)
    try:
        plan = map_scenario(a.scenario, max_duration_s=a.max_duration)
    except ScenarioError as e:
        return fail(str(e), 2)
    out = Path(a.output) if a.output else Path("results") / f"{Path(a.scenario).stem}-linux"
    quiet = getattr(a, "quiet", False)
    _unwind_on_signals()
    try:
        res = run_linux(a.scenario, seeds=a.seeds, max_duration_s=a.max_duration, output=out,
                        progress=None if quiet else (lambda m: _console.print(f"[dim]{m}[/dim]")))
    except loader.KernelError as e:
        return fail(f"{a.scenario}: linux backend: {e}", 1)
    if not quiet:
        t = Table(title=f"{res.scenario.name} on Linux {os.uname().release}, "
                        f"{plan.duration_s:g} s x {len(res.seeds)} (Mbit/s)")
        for c in ("seed", "flow", "algorithm", "subflow", "path", "goodput", "retrans", "mean RTT ms"):
            t.add_column(c, justify="right" if c in ("goodput", "retrans", "mean RTT ms") else "left")
        for r in res.flows.to_dict("records"):
            t.add_row(str(r["seed"]), r["flow"], r["algorithm"], "all", "", f"{r['goodput_bps'] / 1e6:.3f}",
                      str(r["retransmitted_packets"]), "")
            for s in res.subflows[(res.subflows["flow"] == r["flow"]) &
                                  (res.subflows["seed"] == r["seed"])].to_dict("records"):
                t.add_row("", "", "", str(s["subflow"]), s["path"], f"{s['goodput_bps'] / 1e6:.3f}",
                          str(s["retransmitted_packets"]), f"{s['mean_rtt_s'] * 1e3:.1f}")
        print_table(t)
        for n in plan.notes:
            _console.print(f"[yellow]note:[/yellow] {n}")
        _console.print(f"results in {out}")
    return 0


def register(subparsers) -> None:
    """Add ``pathpool kernel`` and ``pathpool testbed``."""
    from pathpool.cliutil import add_out, positive_float, positive_int

    k = subparsers.add_parser("kernel")
    ks = k.add_subparsers(dest="kernel_cmd", required=True)
    p = ks.add_parser("load", help="register pp_* algorithms until `unload` (or, with "
                      "--foreground, while this process runs)",
                      description="Register pathpool's BPF congestion controls in the running "
                      "kernel (root). From a checkout they are built first (make -C kernel); an "
                      "installed wheel carries them prebuilt. Any program can then use them: "
                      "setsockopt TCP_CONGESTION, `ip route ... congctl NAME`, or the system "
                      "default (--default).")
    p.add_argument("algorithms", nargs="*", help=f"default: all of {', '.join(loader.ALGORITHMS)}")
    p.add_argument("--foreground", action="store_true",
                   help="stay in the foreground and keep them registered while running; "
                        "SIGTERM/SIGINT unload them (for a service: `pathpool kernel unit`)")
    p.add_argument("--default", metavar="NAME", default=None,
                   help="make NAME the system default (net.ipv4.tcp_congestion_control) while "
                        "they are loaded; the previous value comes back when they are unloaded "
                        "or the process stops, SIGKILL included (then at the next load, unload "
                        "or status)")
    p.add_argument("--allow", action="store_true",
                   help="add them to net.ipv4.tcp_allowed_congestion_control, so that "
                        "unprivileged programs may choose them and other network namespaces "
                        "(containers) may make one their default")
    p.add_argument("--verbose", action="store_true",
                   help="on failure, also print libbpf's and the verifier's log")
    p.add_argument("--d-ms", type=float, default=None, help="RSF-DB target delay d (default 100)")
    p.add_argument("--mu-pps", type=float, default=None, help="RSF-LB target loss rate (default 4)")
    p.add_argument("--loss-window", type=float, default=None,
                   help="RSF-LB loss-estimate memory, packets (default 1000)")
    p.add_argument("--balia-quantised", action="store_true", help="v0.95 kernel's integer alpha")
    p.add_argument("--counting", choices=loader.COUNTINGS, default="bytes",
                   help="congestion-avoidance steps per acknowledged segment (default, RFC 6356 "
                        "and Linux) or per ACK (v0.95)")
    p.add_argument("--ewtcp-a", type=float, default=None, metavar="A",
                   help="EWTCP's weight a, 1e-4..2 (default 1/n^2, n = the connection's subflows)")
    p.add_argument("--semicoupled-a", type=float, default=None, metavar="A",
                   help="Semicoupled's weight a, 1e-4..2 (default 1)")
    p.set_defaults(func=_load)
    p = ks.add_parser("bench", help="ns per callback of every pp_* vs a minimal BPF Reno (root)")
    p.add_argument("--duration", type=positive_float, default=10.0, metavar="S",
                   help="traffic seconds (default 10)")
    p.add_argument("--regime", choices=("paced", "fast"), default="paced",
                   help="paced: two 50 Mbit/s paths with 10 ms delay, 1 connection per control "
                        "(cold caches); fast: two undelayed 1 Gbit/s paths, 4 connections per "
                        "control (warm caches, the 10 Gbit/s case) (default paced)")
    p.add_argument("--rate-mbps", type=positive_float, default=None, metavar="MBPS",
                   help="each path's rate (default: the regime's, 50 or 1000)")
    p.add_argument("--conns", type=positive_int, default=None, metavar="N",
                   help="MPTCP connections per control (default: the regime's, 1 or 4)")
    p.add_argument("--algorithms", metavar="A,B", default=None,
                   help="comma-separated pp_* controls to measure (default: all); fewer "
                        "controls share the traffic, so each runs more often")
    p.add_argument("--cpu", type=int, default=None, metavar="K",
                   help="run all traffic (iperf3 and its packet processing) on CPU K only")
    p.add_argument("--counting", choices=loader.COUNTINGS, default="bytes",
                   help="counting the pp_* controls are loaded with (default bytes)")
    p.add_argument("--rounds", type=positive_int, default=1, metavar="N",
                   help="traffic rounds, each with every algorithm side by side; the table "
                        "shows medians and the range of the per-round ratios (default 1)")
    p.add_argument("--baseline", metavar="REV",
                   help="also build git revision REV's controls and run them beside the "
                        "current ones (as pb_*) in every round; adds ns/call over REV's")
    p.add_argument("--probes", action="store_true",
                   help="also run the bench-only variants of the yardstick (pq_*: minreno plus "
                        "a coupled control's socket reads, its map lines, or N padding "
                        "instructions) to split a control's cold cost into parts")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_bench)
    p = ks.add_parser("unload", help="unregister everything pathpool loaded (and put back the "
                      "default --default replaced)")
    p.set_defaults(func=_unload)
    p = ks.add_parser("check", help="can this kernel run them? one line per reason, exit 2 if not",
                      description="Check BTF, MPTCP, the BPF JIT, struct_ops for "
                      "tcp_congestion_ops and its links, the helpers and kfuncs the objects "
                      "call (read from the objects) and permissions; as root, also pass each "
                      "object through the verifier without registering it. Prints one line per "
                      "reason and exits 2, or one OK line and exits 0.")
    p.add_argument("--verbose", action="store_true", help="show the verifier's log of a refusal")
    p.set_defaults(func=_check)
    p = ks.add_parser("unit", help="print a systemd unit that keeps them loaded as a service")
    p.add_argument("algorithms", nargs="*", help=f"default: all of {', '.join(loader.ALGORITHMS)}")
    p.add_argument("--default", metavar="NAME", default=None,
                   help="the unit also makes NAME the system default while it runs")
    p.add_argument("--allow", action="store_true",
                   help="the unit also allows unprivileged programs to choose them (load --allow)")
    p.set_defaults(func=_unit)
    p = ks.add_parser("status", help="what is registered, by which process, sockets per "
                      "algorithm, repair counters, the system default")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_status)

    t = subparsers.add_parser("testbed")
    ts = t.add_subparsers(dest="testbed_cmd", required=True)
    for name, fn, hlp in (("up", _tb_up, "build it and hold it for --hold seconds"),
                          ("run", _tb_run, "build it, run one transfer, write results, tear down")):
        p = ts.add_parser(name, help=hlp)
        p.add_argument("--path", action="append", metavar="RATE_MBPS,DELAY_MS,LOSS[,QUEUE_PKTS]",
                       type=_path_spec, help="one per path (default: 10,10,0 and 10,20,0; queue 100 "
                       "packets, drop-tail)")
        p.add_argument("--shared", action="store_true", help="all paths through one bottleneck")
        p.add_argument("--egress", metavar="J,J,...", type=_egress_spec,
                       help="router link of each path (paths on one link share its queue; the link "
                            "has its first path's rate and queue); default: a link per path")
        p.add_argument("--access", action="append", metavar="RATE_MBPS,QUEUE_PKTS,PATH+PATH...",
                       type=_access_spec, help="a shared first hop these paths cross before they "
                       "split (repeatable; a path in one at most), e.g. 10,50,0+1")
        p.add_argument("--delayed-acks", action="store_true",
                       help="keep the kernel's delayed ACKs (default: the server ACKs every "
                            "segment, the simulator's default)")
        p.add_argument("--prefix", default="pp-", help="namespace name prefix")
        p.set_defaults(func=fn)
    ts.choices["up"].add_argument("--hold", type=positive_float, default=60.0, metavar="S",
                                  help="seconds to keep it up before tearing it down, > 0: the test bed "
                                  "always tears itself down (default 60)")
    r = ts.choices["run"]
    r.add_argument("--cc", default="pp_lia", help="congestion control of the MPTCP flow (default pp_lia)")
    r.add_argument("--duration", type=positive_float, default=4.0, metavar="S",
                   help="transfer time, seconds (default 4)")
    r.add_argument("--with-tcp", action="store_true", help="add a single-path TCP flow on path 0")
    add_out(r, "results/testbed")
    p = ts.add_parser("down", help="end the test bed (its holder, forwarders, namespaces)")
    p.add_argument("--prefix", default="pp-", help="namespace name prefix of the test bed to end (default pp-)")
    p.set_defaults(func=_tb_down)
