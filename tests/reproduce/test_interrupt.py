"""Ctrl-C stops `pathpool reproduce` at any moment: exit 130, one line, nothing left running.

The signal goes at many moments spread over a run (start-up, planning, simulating, merging,
writing), to the process alone and to its process group (what a terminal's Ctrl-C does, so the
workers get it too), once or twice in a row.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

#: Seconds from SIGINT to exit that count as "at once". The command itself needs well under
#: half a second (SIGKILL to the workers, reaping them, the interpreter's exit); the rest is
#: slack for a 2-core machine shared with other builds, where a woken process can wait
#: hundreds of milliseconds for a core. A hang (the defect this guards) never ends at all.
PROMPT_S = 2.0

#: Moments tried (half to the process, half to its group), spread over one run.
MOMENTS = 16


def _marked(marker: str) -> list[int]:
    """Processes still alive whose environment carries ``marker`` (the command and its workers)."""
    found = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            if marker.encode() not in (p / "environ").read_bytes():
                continue
            state = (p / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(p.name))
    return found


def _start(out: Path, marker: str) -> subprocess.Popen:
    env = {**os.environ, "PATHPOOL_TEST_MARK": marker, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, "-m", "pathpool.cli", "reproduce", "balia", "-n", "12", "--only", "table5",
         "-j", "2", "-o", str(out), "--force"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, start_new_session=True,
    )


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_sigint_at_random_moments_stops_everything_at_once(tmp_path):
    seed = int(os.environ.get("PATHPOOL_SIGNAL_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    # Stratified over the first ~5 s of a run of ~9 s (start-up ~1 s, then 12 seeds of Balia's
    # Table V in 2 workers), so every phase gets a signal whatever the draw, and none lands
    # after the run has finished.
    span = 5.0
    moments = [0.15 + (k + rng.random()) * span / MOMENTS for k in range(MOMENTS)]
    rng.shuffle(moments)
    interrupted = 0
    slowest = 0.0
    for k, at in enumerate(moments):
        group = k % 2 == 1
        twice = k % 4 == 3  # a second Ctrl-C while the first is being handled
        marker = uuid.uuid4().hex
        proc = _start(tmp_path / f"out{k}", marker)
        time.sleep(at)
        sent = time.monotonic()
        try:
            if group:
                os.killpg(proc.pid, signal.SIGINT)
            else:
                os.kill(proc.pid, signal.SIGINT)
            if twice:
                time.sleep(rng.uniform(0.02, 0.3))
                os.killpg(proc.pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        try:
            code = proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            pytest.fail(f"hung after SIGINT at {at:.2f} s (group={group}, twice={twice}; PATHPOOL_SIGNAL_SEED={seed})")
        took = time.monotonic() - sent
        err = proc.stderr.read().decode()
        left = _marked(marker)
        where = f"SIGINT at {at:.2f} s (group={group}, twice={twice}; PATHPOOL_SIGNAL_SEED={seed})"
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        assert not left, f"{where}: processes left running: {left}"
        if code == 0:
            continue  # finished before the signal: nothing to stop
        interrupted += 1
        slowest = max(slowest, took)
        assert code == 130, f"{where}: exit {code}: {err}"
        assert err.strip().splitlines()[-1:] == ["pathpool: interrupted (SIGINT); stopped"], f"{where}: {err}"
        assert "Traceback" not in err and "leaked" not in err, f"{where}: {err}"
        assert took < PROMPT_S, f"{where}: exit {took:.2f} s after the signal"
    print(f"{interrupted} of {MOMENTS} runs interrupted; slowest exit {slowest:.2f} s after SIGINT")
    # Most moments fall inside the run; a draw where the run beat the signals tests nothing.
    assert interrupted >= MOMENTS * 3 // 4, f"only {interrupted} of {MOMENTS} runs were interrupted"
