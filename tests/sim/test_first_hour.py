"""What a new user meets first, from an installed package in an empty directory: shipped
scenario names in the Python API as on the command line, a suggestion for a misspelt one,
arguments named in errors, units that cannot be mistaken."""

from __future__ import annotations

import pytest


def _one_line(err: str) -> bool:
    return err.count("\n") == 1 and "Traceback" not in err


def test_api_accepts_shipped_names_from_an_empty_directory(tmp_path, monkeypatch):
    import pathpool

    monkeypatch.chdir(tmp_path)
    sc = pathpool.load_scenario("examples/two_paths", overrides=["duration=1s"])
    assert sc.name == "two_paths" and sc.duration_s == 1.0
    res = pathpool.run(sc, seeds=[1])
    assert len(res.flows) == len(sc.spec["flows"])
    # The same name with .toml, and straight to run.
    assert pathpool.load_scenario("examples/two_paths.toml").name == "two_paths"


def test_a_local_file_wins_over_a_shipped_name(tmp_path, monkeypatch, tiny_dict):
    import pathpool
    import tomli_w

    (tmp_path / "examples").mkdir()
    tiny_dict["name"] = "mine"
    (tmp_path / "examples" / "two_paths.toml").write_text(tomli_w.dumps(tiny_dict))
    monkeypatch.chdir(tmp_path)
    assert pathpool.load_scenario("examples/two_paths.toml").name == "mine"


@pytest.mark.parametrize("typo", ["examples/two_path", "exmaples/two_paths", "scenarios/examples/two_paths.toml"])
def test_a_misspelt_shipped_name_gets_a_suggestion(tmp_path, monkeypatch, cli, typo):
    import pathpool

    monkeypatch.chdir(tmp_path)
    with pytest.raises(pathpool.ScenarioError) as e:
        pathpool.load_scenario(typo)
    assert "'examples/two_paths'" in str(e.value) and "\n" not in str(e.value)
    r = cli("run", typo, "-q", "-o", tmp_path / "out")
    assert r.code == 2 and _one_line(r.err), r.err
    assert "examples/two_paths" in r.err


def test_seeds_as_an_int_is_refused_naming_the_argument(tiny_dict):
    import pathpool

    with pytest.raises(TypeError) as e:
        pathpool.run(tiny_dict, seeds=5)
    msg = str(e.value)
    assert "seeds" in msg and "seeds=[5]" in msg and "range(" in msg and "\n" not in msg


def test_seeds_as_a_seed_list_spec(tiny_dict):
    import pathpool

    tiny_dict["duration"] = "1s"
    res = pathpool.run(tiny_dict, seeds="3-4")
    assert sorted(res.flows["seed"].unique()) == [3, 4]


def test_overrides_as_one_string_and_bad_overrides_name_the_argument(tiny_dict):
    import pathpool

    sc = pathpool.load_scenario(tiny_dict, overrides="duration=5s")
    assert sc.duration_s == 5.0
    with pytest.raises(TypeError, match=r"overrides\[1\]"):
        pathpool.load_scenario(tiny_dict, overrides=["duration=5s", 5])


@pytest.mark.parametrize(("field", "value", "unit"), [
    ("rate", "10", "Mbps"), ("delay", "10", "ms"), ("buffer", "50", "pkt"), ("rate", "10Mbps ", "Mbps"),
])
def test_a_string_without_its_unit_is_refused_in_a_file(tmp_path, cli, tiny_dict, field, value, unit):
    import tomli_w

    tiny_dict["links"][0][field] = value
    path = tmp_path / "s.toml"
    path.write_text(tomli_w.dumps(tiny_dict))
    r = cli("run", path, "-q", "-o", tmp_path / "out")
    assert r.code == 2 and _one_line(r.err), r.err
    assert str(path) in r.err and f"links[0].{field}" in r.err and unit in r.err


def test_a_buffer_that_cannot_hold_one_packet_is_refused(tmp_path, cli, tiny_dict):
    import tomli_w

    tiny_dict["links"][0]["buffer"] = "1B"
    path = tmp_path / "s.toml"
    path.write_text(tomli_w.dumps(tiny_dict))
    r = cli("run", path, "-q", "-o", tmp_path / "out")
    assert r.code == 2 and _one_line(r.err), r.err
    assert "links[0].buffer" in r.err and "1500" in r.err
    assert not (tmp_path / "out").exists()


def test_every_shipped_scenario_still_validates():
    from pathpool.data import list_scenarios, scenario_path
    from pathpool.sim.scenario import load_scenario

    # fig1_stream configures `ratecontrol stream`, not the simulator.
    for name in list_scenarios():
        if name != "pluntke2011/fig1_stream":
            load_scenario(scenario_path(name), allow_large=True)


def test_run_summary_shows_completions_only_for_file_transfers(tmp_path, cli, tiny_dict, monkeypatch):
    import tomli_w

    monkeypatch.setenv("COLUMNS", "120")
    tiny_dict["duration"] = "2s"
    path = tmp_path / "s.toml"
    path.write_text(tomli_w.dumps(tiny_dict))
    r = cli("run", path, "-o", tmp_path / "bulk", "--no-progress")
    assert r.code == 0, r.err
    assert "done" not in r.out and "0/2" not in r.out, r.out
    tiny_dict["flows"][1].update(app="file", size="100KB")
    path.write_text(tomli_w.dumps(tiny_dict))
    r = cli("run", path, "-o", tmp_path / "file", "--no-progress")
    assert r.code == 0, r.err
    rows = {line.split("│")[1].strip(): line for line in r.out.splitlines() if line.count("│") > 3}
    assert "2/2" in rows["tcp"] and "/2" not in rows["mp"], r.out
