"""The conventions every ``pathpool`` subcommand follows: one registry imported lazily,
``--version``, ``-o/--out``, ``--json``, one-line errors with exit 2, quiet closed pipes, plain
progress lines without a terminal."""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from pathpool.cli import COMMANDS, build_parser

HEAVY = ("numpy", "pandas", "scipy", "matplotlib", "rich", "pyarrow", "distributed", "multiprocessing", "concurrent")


def _pathpool(*args: str, cwd: Path | None = None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pathpool.cli", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=300, check=False, **kw)


class _Recorder:
    def __init__(self) -> None:
        self.names: list[str] = []
        self.parsers: dict[str, argparse.ArgumentParser] = {}

    def add_parser(self, name: str, **kw) -> argparse.ArgumentParser:
        self.names.append(name)
        self.parsers[name] = argparse.ArgumentParser(prog=f"pathpool {name}", **kw)
        return self.parsers[name]


@pytest.mark.parametrize("module", sorted({m for m, _ in COMMANDS.values()}))
def test_each_module_registers_exactly_its_commands(module):
    rec = _Recorder()
    importlib.import_module(module).register(rec)
    assert sorted(rec.names) == sorted(n for n, (m, _) in COMMANDS.items() if m == module)


def test_cli_modules_do_not_import_each_other():
    """The old cycle compare -> sim.cli -> kernel.cli -> compare is gone: no CLI module imports
    another one at import time or while registering."""
    code = (
        "import sys, importlib\n"
        f"mods = {sorted({m for m, _ in COMMANDS.values()})!r}\n"
        "for m in mods:\n"
        "    before = set(sys.modules)\n"
        "    mod = importlib.import_module(m)\n"
        "    class R:\n"
        "        def add_parser(self, name, **kw):\n"
        "            import argparse; return argparse.ArgumentParser()\n"
        "    mod.register(R())\n"
        "    others = [o for o in mods if o != m and o in set(sys.modules) - before]\n"
        "    assert not others, (m, others)\n"
        "    for o in mods: sys.modules.pop(o, None)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr


def _imported_by(*args: str) -> tuple[subprocess.CompletedProcess, set[str]]:
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "pathpool.cli", *args],
                       capture_output=True, text=True, timeout=60, check=False)
    return r, {line.rsplit("|", 1)[-1].strip() for line in r.stderr.splitlines() if "|" in line}


def test_help_imports_no_subcommand_and_no_heavy_library():
    r, imported = _imported_by("--help")
    assert r.returncode == 0
    assert not {m for m in imported if m.split(".")[0] in HEAVY}
    assert not {m for m in imported if m in {mod for mod, _ in COMMANDS.values()}}
    for name in COMMANDS:
        assert name in r.stdout


@pytest.mark.parametrize("command", list(COMMANDS))
def test_command_help_imports_no_heavy_library(command):
    r, imported = _imported_by(command, "--help")
    assert r.returncode == 0, r.stderr[-2000:]
    assert not {m for m in imported if m.split(".")[0] in HEAVY}


def test_version(cli):
    import pathpool

    r = _pathpool("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"pathpool {pathpool.__version__}"


def _all_parsers():
    """(command path, parser) for every command and subcommand."""
    out = []
    for name in COMMANDS:
        top = build_parser(name)
        sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
        stack = [((name,), sub.choices[name])]
        while stack:
            path, p = stack.pop()
            out.append((path, p))
            for a in p._actions:
                if isinstance(a, argparse._SubParsersAction):
                    stack.extend(((*path, n), c) for n, c in a.choices.items())
    return out


def test_every_option_has_help_text():
    missing = [
        (" ".join(path), a.option_strings or a.dest)
        for path, p in _all_parsers()
        for a in p._actions
        if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
        and a.help is not argparse.SUPPRESS and not (a.help or "").strip()
    ]
    assert missing == []


def test_out_is_spelled_the_same_everywhere():
    """Every option that names where output goes is -o/--out (and --output still parses)."""
    writers = []
    for path, p in _all_parsers():
        strings = {s for a in p._actions for s in a.option_strings}
        if strings & {"--out", "--output"}:
            writers.append(path)
            assert {"-o", "--out", "--output"} <= strings, path
    assert {("run",), ("reproduce",), ("sweep",), ("plot",), ("analyze", "game"),
            ("ratecontrol", "stream"), ("compare",)} <= set(writers)


@pytest.mark.parametrize("args", [
    ["analyze", "equilibrium", "--algorithm", "foo"],
    ["analyze", "game", "--paths", "0"],
    ["analyze", "conditions", "--points", "-5"],
    ["analyze", "game", "--connections", "1", "--paths", "1"],  # valid numbers, impossible game
    ["analyze", "game", "--capacity", "1", "2", "3"],  # 3 capacities for 2 paths
    ["ratecontrol", "rates", "--path", "2,20ms"],
    ["run", "no/such/scenario.toml"],
    ["reproduce", "--seeds", "0"],
    ["run", "examples/two_paths", "--backend", "linux", "--set", "duration=1"],
    ["testbed", "run", "--path", "1,2"],
    ["testbed", "up", "--hold", "0"],
    ["testbed", "run", "--path", "10,10,0,0"],  # queue of 0 packets
    ["testbed", "run", "--access", "10,50"],
    ["testbed", "run", "--egress", "0,x"],
    # parse, but no such test bed: three router links for two paths; one link with two rates;
    # egress beside --shared; a path in two access links
    ["testbed", "run", "--egress", "0,0,0"],
    ["testbed", "up", "--path", "10,10,0", "--path", "20,10,0", "--egress", "0,0"],
    ["testbed", "up", "--shared", "--egress", "0,0"],
    ["testbed", "run", "--access", "10,50,0+1", "--access", "5,50,1"],
    ["nosuchcommand"],
    ["scenarios"],
])
def test_bad_input_is_one_line_on_stderr_with_exit_2(args, tmp_path):
    r = _pathpool(*args, "-o", str(tmp_path)) if args[0] == "analyze" else _pathpool(*args)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr


def test_testbed_options_describe_the_test_bed():
    """``--path`` with a queue, ``--egress`` and ``--access`` reach the Testbed as given (checked,
    not built: no root needed)."""
    from pathpool.kernel.cli import _testbed

    a = build_parser("testbed").parse_args(["testbed", "run", "--path", "10,10,0,40", "--path", "10,30,0.01,40",
                                   "--path", "5,20,0", "--egress", "0,0,1", "--access", "8,25,0+2",
                                   "--delayed-acks"])
    tb = _testbed(a)
    assert [(p.rate_mbps, p.delay_ms, p.loss, p.queue_pkts) for p in tb.paths] == [
        (10, 10, 0, 40), (10, 30, 0.01, 40), (5, 20, 0, 100)]
    assert tb.egress == [0, 0, 1] and tb.link_spec(0) is tb.paths[0] and tb.link_spec(1) is tb.paths[2]
    assert [(x.rate_mbps, x.queue_pkts, x.paths) for x in tb.access] == [(8, 25, (0, 2))]
    assert tb.quickack is False
    default = _testbed(build_parser("testbed").parse_args(["testbed", "up"]))
    assert default.egress == [0, 1] and default.access == [] and default.quickack


def test_closed_pipe_ends_quietly():
    proc = subprocess.Popen([sys.executable, "-m", "pathpool.cli", "ratecontrol", "rates", "--path", "0.1,20ms",
                             "--path", "2%,100ms", "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before a byte is written
    _, err = proc.communicate(timeout=120)
    assert err == b""
    assert proc.returncode == 141


def test_progress_without_a_terminal_is_plain_lines(tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text('scenario = "examples/two_paths"\nseeds = [1, 2]\n')
    r = _pathpool("sweep", str(grid), "-o", str(tmp_path / "out"), "-j", "1")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines and all(line.startswith("sweep grid.toml: runs: ") for line in lines), r.stderr
    assert "2/2 (100%)" in lines[-1]
    assert "\r" not in r.stderr and "\x1b" not in r.stderr


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_run_progress_without_a_terminal_is_plain_lines(tmp_path, jobs):
    r = _pathpool("run", "examples/two_paths", "--seeds", "1,2", "-j", jobs, "-o", str(tmp_path / "out"), "-q")
    assert r.returncode == 0, r.stderr
    lines = r.stderr.strip().splitlines()
    assert lines and all(line.startswith("run two_paths: seeds: ") for line in lines), r.stderr
    assert "2/2 (100%)" in lines[-1]
    assert "\r" not in r.stderr and "\x1b" not in r.stderr
    r = _pathpool("run", "examples/two_paths", "--seeds", "1", "-o", str(tmp_path / "o2"), "-q", "--no-progress")
    assert r.returncode == 0 and r.stderr == "", r.stderr


def test_progress_lines_are_periodic(monkeypatch, capsys):
    from pathpool import cliutil

    clock = iter([0.0, 1.0, 11.0, 12.0, 30.0, 31.0, 40.0, 41.0])
    monkeypatch.setattr(cliutil.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(cliutil.sys.stderr, "isatty", lambda: False)
    with cliutil.progress("x", every_s=10) as tick:  # t0 = 0
        tick(1, 4)  # t=1: too early
        tick(2, 4)  # t=11: a line (10 s since t0)
        tick(3, 4)  # t=30: a line
        tick(4, 4)  # t=40: the final line
    err = capsys.readouterr().err.splitlines()
    assert [e.split(",")[0] for e in err] == ["x: 2/4 (50%)", "x: 3/4 (75%)", "x: 4/4 (100%)"]


def test_progress_lines_go_on_when_a_second_stage_raises_the_total(monkeypatch, capsys):
    from pathpool import cliutil

    clock = iter([0.0, 1.0, 2.0, 3.0, 30.0, 31.0, 40.0, 41.0])
    monkeypatch.setattr(cliutil.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(cliutil.sys.stderr, "isatty", lambda: False)
    with cliutil.progress("x", every_s=10) as tick:  # t0 = 0
        tick(2, 2)  # t=1: the first stage's final line
        tick(2, 5)  # t=3: the second stage planned: too early
        tick(4, 5)  # t=30: a line (was silent after the first "final")
        tick(5, 5)  # t=40: the final line
    err = capsys.readouterr().err.splitlines()
    assert [e.split(",")[0] for e in err] == ["x: 2/2 (100%)", "x: 4/5 (80%)", "x: 5/5 (100%)"]


def test_run_json_is_the_summary(tmp_path, cli):
    r = cli("run", "examples/two_paths", "--seeds", "2", "--out", str(tmp_path / "r"), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    written = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert doc["flows"] == written["flows"] and doc["seeds"] == [2]
    assert {Path(f).name for f in doc["files"]} >= {"flows.parquet", "summary.json"}


def test_analyze_json(tmp_path, cli):
    r = cli("analyze", "equilibrium", "--network", "fig1", "--algorithm", "lia", "--t-end", "1",
            "-o", str(tmp_path), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    import pandas as pd

    csv = pd.read_csv(tmp_path / "equilibrium_fig1_lia.csv")
    assert len(doc["tables"]) == 1 and len(doc["tables"][0]["rows"]) == len(csv)


def test_reproduce_one_paper_never_writes_the_all_papers_report():
    from pathpool.reproduce.cli import _default_out

    args = build_parser("reproduce").parse_args(["reproduce", "rsf"])
    assert args.output is None and _default_out(args.paper) == "report-rsf"
    assert _default_out("all") == "report"


def test_reproduce_uses_linux_recovery_unless_told_otherwise():
    """A bare `pathpool reproduce` gives the committed report's numbers, which `make reproduce`
    made with Linux's loss recovery; rfc6675 (the files' own) stays one flag away."""
    parse = build_parser("reproduce").parse_args
    assert parse(["reproduce", "rsf"]).recovery_reading == "linux"
    assert parse(["reproduce", "rsf", "--recovery-reading", "rfc6675"]).recovery_reading == "rfc6675"
    assert "recovery reading `linux`" in (Path(__file__).parents[2] / "report" / "README.md").read_text()


def test_reproduce_with_no_experiment_is_exit_2(monkeypatch, cli, tmp_path):
    monkeypatch.setattr("pathpool.reproduce.experiments.load_experiments", lambda papers, root=None: [])
    r = cli("reproduce", "khalili", "-o", str(tmp_path / "rep"))
    assert r.code == 2 and "nothing to run" in r.err
    assert not (tmp_path / "rep").exists()


def test_run_set_reaches_the_scenario_loader(tmp_path, cli):
    """`--set` is handed to load_scenario(overrides=...): the run uses the overridden value, or, in
    a build whose loader has no overrides, the command says so in one line and runs nothing."""
    import inspect

    from pathpool.sim.scenario import load_scenario

    out = tmp_path / "r"
    r = cli("run", "examples/two_paths", "--seeds", "1", "-o", str(out), "-q",
            "--set", "links.bottleneck_a.rate=20Mbps", "--set", "flows.mptcp.algorithm=olia")
    if "overrides" in inspect.signature(load_scenario).parameters:
        assert r.code == 0, r.err
        import tomllib

        sc = tomllib.loads((out / "scenario.toml").read_text())
        assert sc["links"][0]["rate"] == "20Mbps" and sc["flows"][0]["algorithm"] == "olia"
    else:
        assert r.code == 2 and r.err.count("\n") == 1 and "--set" in r.err
        assert not out.exists()
