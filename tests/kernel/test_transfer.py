"""The test bed's receiver (``python -m pathpool.kernel.transfer recv``) on the loopback (no
namespaces, no root), and the run's completeness check."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time

import pytest
from pathpool.kernel.loader import KernelError
from pathpool.kernel.testbed import receiver_connection


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _receiver(port: int, *args: str):
    """The test bed's receiver on the loopback at ``port`` (skips without MPTCP sockets)."""
    recv = subprocess.Popen([sys.executable, "-m", "pathpool.kernel.transfer", "recv", "--addr", "127.0.0.1",
                             "--port", str(port), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if recv.stderr.readline().strip() != "listening":
            pytest.skip("no MPTCP listening socket here")
        yield recv
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait()


def test_receiver_reports_a_connection_still_open_at_its_deadline():
    """A sender still draining when the receiver's deadline passes (Khalili N1 = 15 under load):
    the connection is reported with the bytes it got, marked open. Before the fix it was left
    out, and the run recorded that flow as 0 bytes delivered."""
    port = _free_port()
    with _receiver(port, "--conns", "2", "--timeout", "2", "--window", "1") as recv:
        closed, kept = socket.create_connection(("127.0.0.1", port)), socket.create_connection(("127.0.0.1", port))
        closed.sendall(b"x" * 1000)
        closed.close()
        kept.sendall(b"y" * 5000)   # and stays open past the receiver's 2 s
        out, _ = recv.communicate(timeout=20)
        kept.close()
    conns = {c["port"]: c for c in json.loads(out)["connections"]}
    assert sorted((c["bytes"], c["open"]) for c in conns.values()) == [(1000, False), (5000, True)]
    # Every byte of the open one arrived within its 1 s window.
    assert [c["bytes_in_window"] for c in conns.values() if c["open"]] == [5000]


def test_a_sender_the_receiver_did_not_report_fails_the_run():
    raw = {"senders": {"a": {"local_port": 40000}, "b": {"local_port": 40001}},
           "receiver": {"connections": [{"peer": "10.77.0.1", "port": 40000, "bytes": 7}]}}
    assert receiver_connection(raw, "a", "10.77.0.1")["bytes"] == 7
    with pytest.raises(KernelError, match="flow b: the receiver reported no connection from 10.77.0.1:40001"):
        receiver_connection(raw, "b", "10.77.0.1")
    with pytest.raises(KernelError, match="flow a"):
        receiver_connection(raw, "a", "10.77.1.1")   # right port, wrong path


def test_receiver_clock_start_is_the_accept():
    """duration_s runs from accept to the last byte: a closed connection's is short."""
    port = _free_port()
    recv = subprocess.Popen([sys.executable, "-m", "pathpool.kernel.transfer", "recv", "--addr", "127.0.0.1",
                             "--port", str(port), "--conns", "1", "--timeout", "5"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if recv.stderr.readline().strip() != "listening":
            pytest.skip("no MPTCP listening socket here")
        c = socket.create_connection(("127.0.0.1", port))
        c.sendall(b"z" * 100)
        time.sleep(0.2)
        c.close()
        out, _ = recv.communicate(timeout=20)
    finally:
        if recv.poll() is None:
            recv.kill()
            recv.wait()
    (conn,) = json.loads(out)["connections"]
    assert conn["bytes"] == 100 and conn["open"] is False and conn["duration_s"] < 1.0


def test_conn_info_reads_the_connection_send_queue():
    """``conn_info`` on a loopback MPTCP connection whose receiver does not read: what the
    writer got in is held by the connection (``outq``), never more than was written, and the
    part no subflow was given (``unassigned``) is within it; once the receiver has read every
    byte, both are 0. (Swapped or wrong ioctl numbers fail one of these.)"""
    from pathpool.kernel.transfer import IPPROTO_MPTCP, conn_info

    try:
        ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
    except OSError:
        pytest.skip("no MPTCP sockets here")
    with ls:
        ls.bind(("127.0.0.1", 0))
        ls.listen(1)
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM, IPPROTO_MPTCP)
        c.connect(ls.getsockname())
        srv, _ = ls.accept()
        with c, srv:
            assert {k: conn_info(c, 0).get(k) for k in ("written", "outq", "unassigned")} == \
                {"written": 0, "outq": 0, "unassigned": 0}
            c.setblocking(False)
            written = 0
            try:
                while True:
                    written += c.send(b"x" * 65536)
            except BlockingIOError:
                pass
            time.sleep(0.2)
            held = conn_info(c, written)
            assert held["written"] == written
            assert 0 < held["outq"] <= written
            assert 0 <= held["unassigned"] <= held["outq"]
            assert 0 < held["wmem_queued"] and 0 < held["sndbuf"]
            got, deadline = 0, time.monotonic() + 10
            srv.settimeout(1.0)
            while got < written and time.monotonic() < deadline:
                got += len(srv.recv(1 << 20))
            assert got == written
            deadline = time.monotonic() + 5
            while conn_info(c, written)["outq"] and time.monotonic() < deadline:
                time.sleep(0.01)
            done = conn_info(c, written)
            assert (done["outq"], done["unassigned"]) == (0, 0)


def test_receiver_times_a_connection_from_its_first_data():
    """The receiver sends READY on accept and the sender writes only after it, one round trip
    later: a connection's duration and its window start at its first data, as the simulator's
    flows send from their start. Here the client waits 0.5 s after READY, then sends 1,000
    bytes twice 0.2 s apart, within a 0.4 s window. Timed from accept() (before the fix) its
    duration was 0.7 s and its window held nothing."""
    from pathpool.kernel.transfer import READY

    port = _free_port()
    with _receiver(port, "--conns", "1", "--timeout", "5", "--window", "0.4") as recv:
        with socket.create_connection(("127.0.0.1", port)) as c:
            c.settimeout(5)
            assert c.recv(1) == READY
            time.sleep(0.5)
            c.sendall(b"x" * 1000)
            time.sleep(0.2)
            c.sendall(b"y" * 1000)
        out, _ = recv.communicate(timeout=20)
    (row,) = json.loads(out)["connections"]
    assert row["bytes"] == row["bytes_in_window"] == 2000, row
    assert 0.15 < row["duration_s"] < 0.4, row
