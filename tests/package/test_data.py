"""Scenarios shipped as package data (read through importlib.resources) and `pathpool scenarios`."""

from __future__ import annotations

import pytest
from pathpool.data import copy_scenario, list_scenarios, scenario_path, scenarios_dir


def test_the_package_ships_every_repository_scenario(repo_root):
    repo = sorted(p.relative_to(repo_root / "scenarios").with_suffix("").as_posix()
                  for p in (repo_root / "scenarios").rglob("*.toml"))
    assert list_scenarios() == repo
    assert (scenarios_dir() / "pluntke2011" / "published.csv").samefile(
        repo_root / "scenarios" / "pluntke2011" / "published.csv")


def test_scenario_path_by_name_with_or_without_suffix(repo_root):
    a = scenario_path("examples/two_paths")
    assert a == scenario_path("examples/two_paths.toml")
    assert a.samefile(repo_root / "scenarios" / "examples" / "two_paths.toml")
    with pytest.raises(KeyError, match="allowed: .*examples/two_paths"):
        scenario_path("examples/nope")


def test_copy_one_scenario_and_a_folder(tmp_path, repo_root):
    [one] = copy_scenario("examples/two_paths", tmp_path)
    assert one.read_bytes() == (repo_root / "scenarios/examples/two_paths.toml").read_bytes()
    files = copy_scenario("pluntke2011", tmp_path)
    assert sorted(p.name for p in files) == sorted(p.name for p in (repo_root / "scenarios/pluntke2011").iterdir())
    with pytest.raises(FileExistsError):
        copy_scenario("examples/two_paths", tmp_path)
    assert one.read_bytes() == (repo_root / "scenarios/examples/two_paths.toml").read_bytes()


def test_scenarios_cli(tmp_path, cli):
    r = cli("scenarios", "list")
    assert r.code == 0 and r.out.split() == list_scenarios()
    r = cli("scenarios", "copy", "examples/two_paths", tmp_path)
    assert r.code == 0 and (tmp_path / "two_paths.toml").is_file()
    r = cli("scenarios", "copy", "examples/two_paths", tmp_path)
    assert r.code == 2 and r.err.count("\n") == 1 and "exists" in r.err
    r = cli("scenarios", "copy", "nope", tmp_path)
    assert r.code == 2 and "allowed:" in r.err


def test_shipped_names_work_where_files_do(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no scenarios/ here
    r = cli("validate", "examples/two_paths", "bench/bench")
    assert r.code == 0, r.err
    assert r.out.count("ok ") == 2
