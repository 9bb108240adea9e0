"""Benchmarks (pytest-benchmark; disabled by default, run with --benchmark-enable) and the
`pathpool bench` command."""

from __future__ import annotations

import json

import pathpool
import tomli_w
from pathpool import _core


def test_bench_small_scenario(benchmark, tiny_scenario):
    text = tomli_w.dumps(tiny_scenario)
    out = benchmark(_core.run_scenario, text, "<bench>", 1)
    assert out["stats"]["data_packets"] > 0


def test_bench_command_reports_packets_per_second(tiny_path, cli):
    r = cli("bench", tiny_path, "--repeat", "2", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert len(doc["runs"]) == 2
    for run in doc["runs"]:
        assert run["data_packets"] > 0 and run["wall_s"] > 0
        assert run["data_packets_per_s"] == run["data_packets"] / run["wall_s"]
        assert run["cpu_s"] > 0
        assert run["data_packets_per_cpu_s"] == run["data_packets"] / run["cpu_s"]
    # same seed, same simulation: the counts (unlike the times) repeat exactly
    assert doc["runs"][0]["data_packets"] == doc["runs"][1]["data_packets"]
    assert doc["runs"][0]["events"] == doc["runs"][1]["events"]


def test_bench_defaults_to_the_shipped_bench_scenario(monkeypatch):
    """Without an argument `bench` runs the package's bench/bench scenario, from any directory."""
    import argparse

    from pathpool.cli import build_parser
    from pathpool.data import scenario_path

    args = build_parser("bench").parse_args(["bench"])
    assert isinstance(args, argparse.Namespace) and args.scenario is None
    seen = {}

    def fake_load(path):
        seen["path"] = path
        raise pathpool.ScenarioError("stop here", origin=str(path))

    monkeypatch.setattr("pathpool.sim.scenario.load_scenario", fake_load)
    assert args.func(args) == 2
    assert seen["path"] == str(scenario_path("bench/bench"))


def test_shipped_bench_scenario_is_valid(repo_root):
    """`make bench` runs scenarios/bench/bench.toml; it must at least validate."""
    import pathpool

    sc = pathpool.load_scenario(repo_root / "scenarios" / "bench" / "bench.toml")
    assert sc.duration_s >= 30
