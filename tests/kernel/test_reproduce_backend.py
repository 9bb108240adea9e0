"""`pathpool reproduce --backend both` on the real kernel (root): a tiny experiment end to end
(both engines' columns, the agreement table from real runs, the kernel cache reused), and
SIGTERM in the middle of a kernel run leaves no namespace, process or registration behind.

The experiment is an RSF-style file download on two disjoint 20 Mbit/s, 10 ms paths (1 MB per
connection, a few seconds of real traffic per run), compared with Table 2's scenario 1 row.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
from pathpool.kernel import loader
from pathpool.kernel.testbed import _alive, _run, wait_gone
from pathpool.reproduce import kernel as kb

pytestmark = pytest.mark.kernel

EXPERIMENT = """
name = "tiny"
duration = "{duration}"
[[links]]
name = "l1"
rate = "20Mbps"
delay = "10ms"
buffer = 100
[[links]]
name = "l2"
rate = "20Mbps"
delay = "10ms"
buffer = 100
[[paths]]
name = "p1"
links = ["l1"]
[[paths]]
name = "p2"
links = ["l2"]
[[flows]]
name = "conn"
kind = "mptcp"
paths = ["p1", "p2"]
algorithm = "lia"
app = "{app}"
{size}
count = 2
[reproduce]
paper = "rsf"
experiment = "table2_s1"
title = "tiny"
metric = "download"
algorithms = {algorithms}
flows = ["conn"]
published = "rsf2020_table2.csv"
published_row = 1
"""


def _root(tmp: Path, duration: str = "60s", app: str = "file", size: str = 'size = "1MB"',
          algorithms: str = '["lia", "tcp"]') -> Path:
    d = tmp / "scen" / "rsf2020"
    d.mkdir(parents=True)
    (d / "tiny.toml").write_text(EXPERIMENT.format(duration=duration, app=app, size=size, algorithms=algorithms))
    return tmp / "scen"


@pytest.fixture(scope="module")
def root_env(kernel_unclaimed):
    assert wait_gone("pp-r", timeout_s=1), "a reproduce test bed exists before the tests"
    yield
    assert wait_gone("pp-r", timeout_s=5)


@pytest.fixture(scope="module")
def outcome(root_env, tmp_path_factory):
    from pathpool.reproduce import KernelOptions, reproduce

    tmp = tmp_path_factory.mktemp("kr")
    # Two test beds side by side (own namespace prefixes pp-r0-, pp-r1-; one loading of pp_lia).
    return reproduce(["rsf"], seeds=[1, 2], out=tmp / "out", workers=1, backend="both", kernel=KernelOptions(beds=2),
                     scenario_root=_root(tmp), report=True)


def test_both_columns_from_real_runs(outcome):
    c = outcome.comparison.set_index("algorithm")
    for alg in ("lia", "tcp"):
        assert c.loc[alg, "n"] == 2 and c.loc[alg, "linux_n"] == 2
        # Two 1 MB downloads over paths of 20 Mbit/s each: the kernel's throughput per connection
        # is positive and below what the paths carry (LIA: both paths, 40 Mbit/s; TCP: one).
        cap = 40.0 if alg == "lia" else 20.0
        assert 0.5 < c.loc[alg, "linux_mean"] < cap
        assert c.loc[alg, "linux_verdict"] in ("reproduced", "same ordering only", "not reproduced", "undecided")
    f = outcome.kernel.tables["flows"]
    assert len(f) == 2 * 2 * 2 and f["completion_time_s"].notna().all()   # every download finished
    assert (f["delivered_bytes"] == 1_000_000).all()
    # goodput = size / download time, as the simulator defines it
    assert ((f["goodput_bps"] - 8e6 / f["completion_time_s"]).abs() < 1e-6 * f["goodput_bps"]).all()


def test_agreement_table_from_real_runs(outcome):
    """Rows of both simulator readings: ``linux`` (the kernel's cells again in the simulator as
    the test bed runs them, the report's table) and ``scenario`` (the report's own columns)."""
    a = outcome.kernel.agreement
    assert list(dict.fromkeys(a["sim_reading"])) == ["linux", "scenario"]
    k = outcome.kernel.summary
    linux = a[(a["sim_reading"] == "linux") & (a["metric"] == "throughput_mbps")].set_index("algorithm")
    t = a[(a["sim_reading"] == "scenario") & (a["metric"] == "throughput_mbps")].set_index("algorithm")
    s = outcome.summary
    for alg in ("lia", "tcp"):
        sim = s[(s["algorithm"] == alg) & (s["metric"] == "throughput_mbps")]["mean"].iloc[0]
        lin = k[(k["algorithm"] == alg) & (k["metric"] == "throughput_mbps")]["mean"].iloc[0]
        assert t.loc[alg, "ratio"] == pytest.approx(lin / sim)
        assert t.loc[alg, "disagree"] == (abs(lin / sim - 1) > 0.15)
        assert linux.loc[alg, "sim_n"] == 2 and linux.loc[alg, "ratio"] == pytest.approx(
            lin / linux.loc[alg, "sim_mean"])
    # The MPTCP connection's simulator side differs between the readings (DSS bytes, scheduler).
    assert linux.loc["lia", "sim_mean"] != pytest.approx(t.loc["lia", "sim_mean"], rel=1e-6)
    page = (outcome.out / "README.md").read_text()
    assert "Simulator vs kernel" in page and "kernel verdict" in page
    assert "agreement reading `linux`" in page
    res = outcome.out / "results"
    assert (res / "agreement.csv").exists() and (res / "linux_comparison.parquet").exists()
    # The simulator's runs beside the kernel's (as the test bed runs the scenario), kept for diagnostics.
    beside = pd.read_parquet(res / "as_testbed_flows.parquet")
    assert len(beside) == 2 * 2 * 2 and set(beside["run_algorithm"]) == {"lia", "tcp"}


def test_kernel_runs_are_cached(outcome):
    from pathpool.reproduce import KernelOptions, reproduce

    t0 = time.monotonic()
    again = reproduce(["rsf"], seeds=[1, 2], out=outcome.out, workers=1, backend="linux", kernel=KernelOptions(beds=1),
                      scenario_root=outcome.experiments[0].path.parents[1], report=False)
    assert time.monotonic() - t0 < 10   # no test bed was built: four runs came from the cache
    a = again.comparison.set_index("algorithm")
    b = outcome.comparison.set_index("algorithm")
    for alg in ("lia", "tcp"):
        assert a.loc[alg, "mean"] == b.loc[alg, "linux_mean"]


def _reproduce_ns() -> list[str]:
    out = _run(["ip", "netns", "list"], check=False).stdout
    return [ln.split()[0] for ln in out.splitlines() if ln.startswith("pp-r")]


def test_sigterm_stops_everything(root_env, tmp_path):
    root = _root(tmp_path, duration="60s", app="bulk", size="", algorithms='["lia"]')
    script = textwrap.dedent(f"""
        import sys
        from pathpool.errors import run_command
        from pathpool.reproduce import KernelOptions, reproduce
        sys.exit(run_command(lambda: reproduce(["rsf"], seeds=[1], out={str(tmp_path / 'out')!r}, backend="linux",
                                               kernel=KernelOptions(beds=1), scenario_root={str(root)!r}, report=False) and 0))
    """)
    p = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _terminate_midrun(p, "pathpool")
    assert not (tmp_path / "out" / "results" / "per_run.csv").exists()


def _terminate_midrun(p: subprocess.Popen, name: str, progress: str | None = None) -> None:
    """SIGTERM ``p`` once its senders run inside a reproduce test bed; check that it exits 143
    with one line (besides its progress lines, starting with ``progress``) and leaves no
    namespace, process or registration behind."""
    try:
        deadline = time.monotonic() + 30
        # Wait until the senders run inside the test bed (pids in the client namespace).
        while time.monotonic() < deadline:
            ns = _reproduce_ns()
            if any(n.endswith("c") for n in ns):
                pids = _run(["ip", "netns", "pids", next(n for n in ns if n.endswith("c"))], check=False).stdout
                if pids.strip():
                    break
            time.sleep(0.2)
        else:
            pytest.fail("the kernel run did not start: " + (p.stderr.read() if p.poll() is not None else ""))
        assert any(n.startswith("pp_") for n in loader.registered())
        inside = []
        for n in _reproduce_ns():
            inside += [int(x) for x in _run(["ip", "netns", "pids", n], check=False).stdout.split()]
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
        assert p.returncode == 143, err
        assert time.monotonic() - t0 < 15
        lines = [ln for ln in err.splitlines() if ln.strip() and not (progress and ln.startswith(progress))]
        assert lines == [f"{name}: terminated (SIGTERM); stopped"], err
        assert _reproduce_ns() == []
        assert not [pid for pid in inside if _alive(pid)]
        assert not any(n.startswith("pp_") for n in loader.registered())
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for pre in [kb.BED_PREFIX.format(k) for k in range(4)]:
            wait_gone(pre, timeout_s=5)
