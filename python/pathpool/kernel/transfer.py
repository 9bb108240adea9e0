"""The test bed's own sender and receiver (run inside the namespaces by :mod:`testbed`).

``python -m pathpool.kernel.transfer recv|send|owd-recv|owd-send ...``; each prints one JSON
object on stdout when it finishes. Transfers are bounded in time and stop by themselves.

The sender opens an MPTCP socket (``IPPROTO_MPTCP`` = 262) or a plain TCP socket, sets
``TCP_CONGESTION`` (on an MPTCP socket it applies to every subflow, later ones included), writes
as fast as the window allows for ``--duration`` seconds (or, with ``--bytes N``, until N bytes
are written and acknowledged: a file download) and samples each subflow's ``tcp_info``
through ``MPTCP_TCPINFO`` (plain TCP: ``TCP_INFO``) every ``--sample-ms``. With ``--epoch`` (the
run's t = 0 on ``CLOCK_MONOTONIC``, which the namespaces share) it connects at ``--start``, stops
writing and closes at ``--stop`` and stamps its samples on that clock; the receiver with
``--epoch --marks`` reports each connection's bytes at those times. The receiver sends one byte
on every connection it accepts, and the sender writes nothing before it arrives (``cmd_send``
says why).
"""

from __future__ import annotations

import argparse
import errno
import json
import math
import socket
import struct
import sys
import threading
import time

IPPROTO_MPTCP = 262
SOL_MPTCP = 284
MPTCP_TCPINFO = 2
MPTCP_SUBFLOW_ADDRS = 3
TCP_INFO_LEN = 248   # up to tcpi_total_rto_time (Linux 6.7+; older kernels return less)
ADDRS_LEN = 256      # two sockaddr_storage
TCP_NOTSENT_LOWAT = 25   # include/uapi/linux/tcp.h
# Connection-level send queue of an MPTCP socket (``mptcp_ioctl()``, net/mptcp/protocol.c):
# SIOCOUTQ = write_seq - snd_una (written, not yet DATA_ACKed), SIOCOUTQNSD = write_seq - snd_nxt
# (written, not yet handed to any subflow). include/uapi/linux/sockios.h, asm-generic/ioctls.h.
SIOCOUTQ = 0x5411
SIOCOUTQNSD = 0x894B
# struct sk_meminfo via SOL_SOCKET (include/uapi/linux/sock_diag.h: SK_MEMINFO_SNDBUF = 3,
# SK_MEMINFO_WMEM_QUEUED = 5, nine u32).
SO_MEMINFO = 55
#: Write size, and the socket's not-sent low-water mark, of a flow that stops early.
STOP_CHUNK = 8192
# Bytes per send() of a flow that writes until the run ends (the simulator's writer = "poll"
# with this write_size stands for this sender: pathpool.kernel.mapping.as_testbed_runs).
BULK_CHUNK = 65536
#: The receiver notes its byte count at most this often (s): the bytes the application had read
#: by each time, from which a flow's goodput series is taken (the simulator's definition: bytes
#: delivered in order per interval), to within one note.
PROGRESS_S = 0.01
#: The receiver's first and only byte to a sender, right after ``accept()``: the sender writes
#: nothing before it arrives (``cmd_send``). The longest a sender waits for it, seconds (a
#: handshake whose third ACK is lost waits for the server's SYN/ACK retransmissions, 1 s, 2 s...).
READY = b"\x01"
READY_TIMEOUT_S = 30.0

# Offsets in struct tcp_info (include/uapi/linux/tcp.h).
_TI = {
    "lost": (32, "I"), "retrans": (36, "I"), "rtt_us": (68, "I"), "snd_ssthresh": (76, "I"),
    "snd_cwnd": (80, "I"), "total_retrans": (100, "I"), "bytes_acked": (120, "Q"),
    "min_rtt_us": (148, "I"), "data_segs_out": (156, "I"), "bytes_sent": (200, "Q"),
    "bytes_retrans": (208, "Q"), "total_rto": (240, "H"),
    # Diagnostics: congestion state, packets in flight, and how long the subflow was limited by
    # the receive window or its send buffer rather than by cwnd (tcp_info's *_limited, us).
    "ca_state": (1, "B"), "unacked": (24, "I"), "notsent_bytes": (144, "I"), "snd_mss": (16, "I"),
    "busy_time_us": (168, "Q"), "rwnd_limited_us": (176, "Q"), "sndbuf_limited_us": (184, "Q"),
    "snd_wnd": (228, "I"),
    # ACKs received (segs_in) against segments delivered: the receiver's ACK ratio, which sets
    # how fast a one-step-per-ACK window grows (pp_*) against an acked-counting one (reno).
    "segs_in": (140, "I"), "delivered": (192, "I"), "pacing_rate": (104, "Q"),
}


def parse_tcp_info(buf: bytes) -> dict:
    """Fields of one ``struct tcp_info`` that the results need."""
    return {k: struct.unpack_from("<" + f, buf, off)[0] for k, (off, f) in _TI.items()
            if off + struct.calcsize(f) <= len(buf)}


def subflow_infos(sock: socket.socket, mptcp: bool) -> list[dict]:
    """Per-subflow ``tcp_info`` (with local/remote addresses) of a connected socket."""
    if not mptcp:
        info = parse_tcp_info(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, TCP_INFO_LEN))
        info["local"] = sock.getsockname()[0]
        info["remote"] = sock.getpeername()[0]
        return [info]
    hdr = struct.pack("<IIII", 16, 0, 0, TCP_INFO_LEN)
    n_max = 16
    buf = bytearray(hdr + bytes(n_max * TCP_INFO_LEN))
    try:
        raw = _getsockopt_inout(sock, SOL_MPTCP, MPTCP_TCPINFO, buf)
    except OSError as e:
        if e.errno != errno.EOPNOTSUPP:
            raise
        # mptcp_getsockopt_sol_mptcp() refuses a connection that fell back to plain TCP (the
        # peer without MPTCP, or what the bed guards against: its SYN retransmitted
        # net.mptcp.syn_retrans_before_tcp_fallback times, its MP_CAPABLE segments lost before a
        # later one arrived): the run is not the scenario's, so it fails saying so.
        raise SystemExit("the MPTCP connection fell back to plain TCP (MPTCP_TCPINFO refused; "
                         "`nstat -az 'MPTcp*Fallback*'` in the namespaces says why); the run is not "
                         "an MPTCP run") from e
    _, num, _, size_user = struct.unpack_from("<IIII", raw, 0)
    infos = [parse_tcp_info(raw[16 + i * size_user: 16 + (i + 1) * size_user])
             for i in range(min(num, n_max))]
    abuf = bytearray(struct.pack("<IIII", 16, 0, 0, ADDRS_LEN) + bytes(n_max * ADDRS_LEN))
    araw = _getsockopt_inout(sock, SOL_MPTCP, MPTCP_SUBFLOW_ADDRS, abuf)
    _, anum, _, asize = struct.unpack_from("<IIII", araw, 0)
    for i in range(min(anum, len(infos))):
        ent = araw[16 + i * asize: 16 + (i + 1) * asize]
        infos[i]["local"] = socket.inet_ntoa(ent[4:8])
        infos[i]["remote"] = socket.inet_ntoa(ent[128 + 4:128 + 8])
    return infos


def conn_info(sock: socket.socket, written: int) -> dict:
    """The MPTCP connection's send side beside its subflows' ``tcp_info``: what the
    application has written (``written``), how much of it the connection holds not yet
    DATA_ACKed (``outq``) and not yet assigned to any subflow (``unassigned``; the MPTCP
    scheduler, ``mptcp_subflow_get_send()``, has not placed it), and the connection's send
    buffer (``sndbuf``) and what it has queued (``wmem_queued``). A field the kernel refuses
    is left out rather than guessed."""
    import fcntl

    out: dict = {"written": written}
    for name, req in (("outq", SIOCOUTQ), ("unassigned", SIOCOUTQNSD)):
        try:
            out[name] = struct.unpack("i", fcntl.ioctl(sock.fileno(), req, b"\0\0\0\0"))[0]
        except OSError:
            pass
    try:
        mem = struct.unpack("<9I", sock.getsockopt(socket.SOL_SOCKET, SO_MEMINFO, 36)[:36])
        out["sndbuf"], out["wmem_queued"] = mem[3], mem[5]
    except (OSError, struct.error):
        pass
    return out


def _getsockopt_inout(sock: socket.socket, level: int, opt: int, buf: bytearray) -> bytes:
    """getsockopt whose input buffer carries a header the kernel reads (Python's getsockopt
    passes a zeroed buffer, so call libc directly)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    cbuf = (ctypes.c_char * len(buf)).from_buffer(buf)
    ln = ctypes.c_uint32(len(buf))
    if libc.getsockopt(sock.fileno(), level, opt, cbuf, ctypes.byref(ln)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"getsockopt({level}, {opt}) failed")
    return bytes(buf[: ln.value])


def cmd_send(a: argparse.Namespace) -> dict:
    proto = IPPROTO_MPTCP if a.mptcp else socket.IPPROTO_TCP
    if a.epoch is not None:
        # The run's common clock: sleep until this flow's start.
        time.sleep(max(0.0, a.epoch + a.start - time.monotonic()))
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto)
    lowat = False
    if a.stop is not None:
        # A flow that stops must stop putting data on the wire then, as the simulator's does
        # (it only finishes what is in flight): keep at most ~2 x STOP_CHUNK unsent in the
        # socket, so that closing at the stop leaves little more than the window to drain.
        try:
            s.setsockopt(socket.IPPROTO_TCP, TCP_NOTSENT_LOWAT, STOP_CHUNK)
            lowat = True
        except OSError:   # an MPTCP socket of a kernel without it: the whole send buffer drains
            pass
    if a.cc:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, a.cc.encode())
    if a.bind:
        s.bind((a.bind, 0))
    s.settimeout(5.0)
    connect_at = time.monotonic()
    s.connect((a.dst, a.port))
    # Write nothing until the receiver says it has accepted the connection. Linux 6.18 makes
    # the server's subflow plain TCP when the first segment it gets after its SYN/ACK carries no
    # MP_CAPABLE, such as a later data segment when the earlier ones were lost
    # (subflow_syn_recv_sock(), net/mptcp/subflow.c: "OoO DSS packets coming legitly after
    # dropped or reordered MPC will cause fallback"), and only the third ACK and the first data
    # skb carry MP_CAPABLE (mptcp_established_options_mp(), net/mptcp/options.c). With those
    # lost at a full queue, as when Khalili's 15 connections start together behind one access,
    # the connection would be TCP. Before the receiver's byte, every segment the client sends is
    # the third ACK again, so the server can only accept the connection as MPTCP; the simulator
    # has no fallback.
    s.settimeout(READY_TIMEOUT_S)
    connected_at = time.monotonic()
    try:
        ready = s.recv(1)
    except TimeoutError:
        raise SystemExit(f"the receiver did not accept the connection within {READY_TIMEOUT_S:g} s "
                         "of connect()") from None
    if ready != READY:
        raise SystemExit(f"the receiver sent {ready!r} where it accepts a connection with {READY!r}")
    ready_wait_s = time.monotonic() - connected_at
    s.setblocking(False)
    local_port = s.getsockname()[1]
    cc = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16).rstrip(b"\0").decode()
    if a.cc and cc != a.cc:
        # An MPTCP socket accepts an unknown name silently and keeps the default.
        raise SystemExit(f"requested congestion control {a.cc!r} but the socket uses {cc!r}: "
                         "is it registered? (`pathpool kernel load`)")
    chunk = b"\0" * (STOP_CHUNK if lowat else BULK_CHUNK)
    written = 0
    samples = []
    now = time.monotonic()
    if a.epoch is None:
        t0, next_sample, end_at = now, now, now + a.duration
    else:
        iv = a.sample_ms / 1000.0
        t0 = a.epoch
        next_sample = t0 + math.ceil((now - t0) / iv - 1e-9) * iv
        end_at = t0 + (a.duration if a.stop is None else min(a.stop, a.duration))
    # When the connect began and when the sender could write (the receiver's byte in, one
    # round trip after connect() returned when nothing is lost): a SYN dropped by a full
    # drop-tail queue waits for the 1 s initial RTO (measured: Table V's SP flow connected 1.4 s
    # after its start), as any Linux client's would; only the first says whether the sender was
    # on time.
    connect_s, connected_s = connect_at - t0, now - t0
    import select

    size = a.bytes or 0
    done_at = None
    while True:
        now = time.monotonic()
        if now >= end_at:
            break
        if now >= next_sample:
            infos = subflow_infos(s, a.mptcp)
            smp = {"t": now - t0, "subflows": infos}
            if a.mptcp:
                smp["conn"] = conn_info(s, written)
            samples.append(smp)
            next_sample += a.sample_ms / 1000.0
            # A download is over when every byte is written and acknowledged on every subflow
            # (nothing unacknowledged, nothing unsent): then the sender stops sampling.
            if size and written >= size and all(x.get("unacked", 0) == 0 and x.get("notsent_bytes", 0) == 0
                                                for x in infos):
                done_at = now - t0
                break
        if size and written >= size:
            time.sleep(min(0.01, max(0.0, next_sample - time.monotonic())))
            continue
        _, w, _ = select.select([], [s], [], min(0.01, max(0.0, next_sample - now)))
        if w:
            try:
                written += s.send(chunk if not size else chunk[: min(len(chunk), size - written)])
            except BlockingIOError:
                pass
    elapsed = time.monotonic() - t0
    final = subflow_infos(s, a.mptcp)
    s.close()
    import resource

    ru = resource.getrusage(resource.RUSAGE_SELF)
    return {"cc": cc, "mptcp": a.mptcp, "local_port": local_port, "written_bytes": written, "duration_s": elapsed,
            # CLOCK_MONOTONIC (shared by the namespaces) of the samples' t = 0: the receiver's
            # progress marks are on the same clock.
            "t0_mono": t0,
            "size_bytes": size, "done_s": done_at, "connect_s": connect_s, "connected_s": connected_s,
            # From connect()'s return to the receiver's byte (cmd_recv): about one round trip.
            "ready_wait_s": ready_wait_s,
            "notsent_lowat": lowat,
            "final": final, "samples": samples,
            # CPU seconds of this sender (a CPU-bound sender would not keep its window full).
            "cpu_s": ru.ru_utime + ru.ru_stime}


def cmd_recv(a: argparse.Namespace) -> dict:
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((a.addr, a.port))
    # Every sender connects at once (up to 20 for Khalili N1 = 15): room for all of them.
    ls.listen(max(16, a.conns))
    ls.settimeout(a.timeout)
    print("listening", file=sys.stderr, flush=True)
    results = []
    lock = threading.Lock()
    marks = sorted(float(x) for x in a.marks.split(",")) if a.epoch is not None and a.marks else []

    def report(st: dict, still_open: bool) -> None:
        """Append one connection's row, once: when it closes, or at the deadline if it has not
        closed by then (its sender still draining the send buffer), so that every accepted
        connection is reported."""
        with lock:
            if st["reported"]:
                return
            st["reported"] = True
            got = st["got"]
            row = {"peer": st["peer"][0], "port": st["peer"][1], "bytes": got,
                   "progress": st["progress"] + [[st["t_last"], got]],
                   "duration_s": st["t_last"] - (st["t_accept"] if st["t_first"] is None else st["t_first"]),
                   # No chunk read after the window's end: every byte so far came within it.
                   "bytes_in_window": got if st["in_window"] is None else st["in_window"],
                   "window_s": a.window, "open": still_open}
            if a.epoch is not None:
                t_first = st["t_first"]
                row.update(accept_s=st["t_accept"] - a.epoch, at_marks=st["at_marks"] + [[m, got] for m in st["pending"]],
                           first_byte_s=None if t_first is None else t_first - a.epoch,
                           last_byte_s=None if t_first is None else st["t_last"] - a.epoch)
            results.append(row)

    def serve(conn: socket.socket, st: dict) -> None:
        conn.settimeout(a.timeout)
        # t_first, where the connection's duration and window start: its first data read. The
        # sender writes only after READY, one round trip after accept(); counted from accept(),
        # every connection would lose that round trip (the simulator's flows send from their
        # start). in_window: bytes received in the first --window seconds from t_first (every
        # flow is measured over the same span, so a flow that drains its send buffer alone
        # afterwards does not count that tail). With --epoch, at_marks: the bytes received by each mark
        # (the flows' ends on the run's clock); a chunk read after a mark arrived after it.
        try:
            while True:
                b = conn.recv(1 << 20)
                now = time.monotonic()
                with lock:
                    if b and st["t_first"] is None:
                        st["t_first"] = now
                    if (a.window and st["in_window"] is None and st["t_first"] is not None
                            and now - st["t_first"] >= a.window):
                        st["in_window"] = st["got"]
                    while st["pending"] and now >= a.epoch + st["pending"][0]:
                        st["at_marks"].append([st["pending"].pop(0), st["got"]])
                    if not b:
                        break
                    # Progress notes: the count after a read at most every PROGRESS_S, and
                    # before a read that ends a silence the count of the last read before it,
                    # so that "read by t" (the last note at or before t) is never more than
                    # PROGRESS_S behind and a stall shows as one.
                    if now - st["t_last"] >= PROGRESS_S and st["progress"][-1][0] < st["t_last"]:
                        st["progress"].append([st["t_last"], st["got"]])
                    st["got"] += len(b)
                    st["t_last"] = now
                    if now - st["progress"][-1][0] >= PROGRESS_S:
                        st["progress"].append([now, st["got"]])
        except OSError:
            pass
        conn.close()
        report(st, still_open=False)

    threads, states = [], []
    deadline = time.monotonic() + a.timeout
    while len(threads) < a.conns and time.monotonic() < deadline:
        try:
            c, peer = ls.accept()
        except OSError:
            break
        try:
            c.sendall(READY)   # the sender writes after this (cmd_send)
        except OSError:
            c.close()
            continue
        t0 = time.monotonic()
        st = {"peer": peer, "t_accept": t0, "t_last": t0, "t_first": None, "got": 0, "in_window": None,
              "progress": [[t0, 0]],
              "pending": list(marks), "at_marks": [], "reported": False}
        th = threading.Thread(target=serve, args=(c, st), daemon=True)
        th.start()
        threads.append(th)
        states.append(st)
    for th in threads:
        th.join(max(0.0, deadline - time.monotonic()))
    for st in states:
        report(st, still_open=True)
    ls.close()
    return {"connections": results}


def cmd_owd_send(a: argparse.Namespace) -> dict:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    if a.bind:
        s.bind((a.bind, 0))
    for i in range(a.count):
        s.sendto(struct.pack("<Qq", i, time.monotonic_ns()) + bytes(a.size), (a.dst, a.port))
        time.sleep(a.interval_ms / 1000.0)
    s.close()
    return {"sent": a.count}


def cmd_owd_recv(a: argparse.Namespace) -> dict:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((a.addr, a.port))
    s.settimeout(a.timeout)
    print("listening", file=sys.stderr, flush=True)
    owd = []
    try:
        while len(owd) < a.count:
            b, _ = s.recvfrom(4096)
            t = time.monotonic_ns()   # namespaces share CLOCK_MONOTONIC
            _, sent = struct.unpack_from("<Qq", b, 0)
            owd.append((t - sent) / 1e6)
    except OSError:
        pass
    s.close()
    return {"owd_ms": owd}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pathpool.kernel.transfer")
    sub = p.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("send")
    sp.add_argument("--dst", required=True)
    sp.add_argument("--port", type=int, required=True)
    sp.add_argument("--duration", type=float, required=True)
    sp.add_argument("--cc", default=None)
    sp.add_argument("--bind", default=None)
    sp.add_argument("--mptcp", action="store_true")
    sp.add_argument("--sample-ms", type=float, default=100.0)
    sp.add_argument("--bytes", type=int, default=0,
                    help="a download: write this many bytes, stop when all are acknowledged (0 = bulk)")
    sp.add_argument("--epoch", type=float, default=None,
                    help="the run's t = 0 (CLOCK_MONOTONIC s): connect at EPOCH + START, stop at EPOCH + "
                    "min(STOP, DURATION), sample times from EPOCH (default: from the connect)")
    sp.add_argument("--start", type=float, default=0.0, help="with --epoch: connect START s after it")
    sp.add_argument("--stop", type=float, default=None,
                    help="with --epoch: stop writing and close STOP s after it (unsent data kept small)")
    sp.set_defaults(func=cmd_send)
    rp = sub.add_parser("recv")
    rp.add_argument("--addr", required=True)
    rp.add_argument("--port", type=int, required=True)
    rp.add_argument("--conns", type=int, default=1)
    rp.add_argument("--timeout", type=float, default=30.0)
    rp.add_argument("--window", type=float, default=0.0,
                    help="also report the bytes received in the first WINDOW s of each connection")
    rp.add_argument("--epoch", type=float, default=None,
                    help="the run's t = 0 (CLOCK_MONOTONIC s): report accept/first/last byte times from it")
    rp.add_argument("--marks", default="",
                    help="with --epoch: comma-separated times (s) at which to report each connection's bytes")
    rp.set_defaults(func=cmd_recv)
    op = sub.add_parser("owd-send")
    op.add_argument("--dst", required=True)
    op.add_argument("--port", type=int, required=True)
    op.add_argument("--bind", default=None)
    op.add_argument("--count", type=int, default=200)
    op.add_argument("--interval-ms", type=float, default=5.0)
    op.add_argument("--size", type=int, default=100)
    op.set_defaults(func=cmd_owd_send)
    orp = sub.add_parser("owd-recv")
    orp.add_argument("--addr", required=True)
    orp.add_argument("--port", type=int, required=True)
    orp.add_argument("--count", type=int, default=200)
    orp.add_argument("--timeout", type=float, default=10.0)
    orp.set_defaults(func=cmd_owd_recv)
    a = p.parse_args(argv)
    json.dump(a.func(a), sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
