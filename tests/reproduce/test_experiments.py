"""Scenario files validate; experiment definitions expand into the right job grid."""

from __future__ import annotations

import math

import pathpool
import pytest
from pathpool.reproduce.experiments import (
    PAPERS,
    Options,
    build_jobs,
    load_experiment,
    load_experiments,
    parse_bytes,
    parse_rate,
    parse_seconds,
)


@pytest.fixture(scope="module")
def experiments():
    return load_experiments(list(PAPERS))


def test_every_scenario_file_validates_for_every_algorithm_and_point(experiments):
    assert {e.paper for e in experiments} == set(PAPERS)
    for e in experiments:
        for alg in e.algorithms:
            for x in e.xs():
                for o in (Options(), Options(delay_reading="one-way", buffer_reading="bdp",
                                             balia_reading="single-bottleneck", khalili_reading="uncapped",
                                             ack_reading="papers")):
                    # Validated by Rust while built (a ScenarioError names the field if not).
                    sc = e.scenario(alg, x, o)
                    assert sc.extensions == {} and sc.origin == str(e.path)


def test_the_reproduce_table_belongs_to_python(repo_root):
    from pathpool import _core

    path = repo_root / "scenarios/rsf2020/fig4_bandwidth.toml"
    # The simulator's config knows no [reproduce]: on its own it refuses the table...
    with pytest.raises(pathpool.ScenarioError, match="unknown field `reproduce`"):
        _core.validate_scenario(path.read_text(), str(path))
    # ...and Python, which registers it, gets it back untyped beside the validated base.
    sc = pathpool.load_scenario(path)
    assert sc.extensions["reproduce"]["paper"] == "rsf"
    assert load_experiment(path).spec == sc.extensions["reproduce"]


def test_job_grid_of_a_sweep(repo_root):
    e = load_experiment(repo_root / "scenarios/rsf2020/fig4_bandwidth.toml")
    jobs = e.jobs([1, 2, 3])
    assert len(jobs) == len(e.algorithms) * 8 * 3
    # algorithm-major, then x, then seed
    assert [j.seed for j in jobs[:4]] == [1, 2, 3, 1]
    assert jobs[0].tags == {"experiment": "rsf/fig4", "run_algorithm": "lia", "x": 10.0}
    j = next(j for j in jobs if j.tags["run_algorithm"] == "rsf-db" and j.tags["x"] == 80.0)
    assert [ln["rate_bps"] for ln in j.scenario.spec["links"]] == [20e6, 80e6]
    assert all(f["algorithm"] == "rsf-db" and f["params"] == {"d": 0.1} for f in j.scenario.spec["flows"])
    # The job runs the text Rust rendered from the file plus the overrides that made it.
    assert j.scenario.text.splitlines()[0] == (
        f'# {e.path} --set flows.0.algorithm="rsf-db" --set flows.0.params={{"d" = 0.1}} --set links.1.rate="80Mbps"')
    # distinct runs have distinct cache keys
    assert len({j.key() for j in jobs}) == len(jobs)


def test_single_path_pseudo_algorithm(repo_root):
    e = load_experiment(repo_root / "scenarios/khalili/n1_5.toml")
    sc = e.scenario("tcp").spec
    t1 = [f for f in sc["flows"] if f["name"].startswith("type1")]
    assert t1 and all(f["kind"] == "tcp" and f["paths"] == ["p1"] and f["algorithm"] == "reno" for f in t1)
    assert "path" in t1[0]["written"] and not {"paths", "scheduler", "params"} & set(t1[0]["written"])
    t2 = [f for f in sc["flows"] if f["name"].startswith("type2")]
    assert t2 and all(f["paths"] == ["p2_type2"] for f in t2)


def test_readings_change_what_they_say(repo_root):
    e = load_experiment(repo_root / "scenarios/rsf2020/table2_s2_homogeneous_2pct.toml")
    base = e.scenario("lia").spec
    assert all(p["ack_delay_s"] == pytest.approx(1e-4) for p in base["paths"])
    one_way = e.scenario("lia", options=Options(delay_reading="one-way")).spec
    # ack_delay removed: ACKs come back over the forward delay, 150 ms.
    assert all(p["ack_delay_s"] == pytest.approx(0.15) for p in one_way["paths"])
    bdp = e.scenario("lia", options=Options(buffer_reading="bdp")).spec
    # 10 Mbps x 150 ms / 1500 B = 125 packets
    assert [ln["buffer_packets"] for ln in bdp["links"]] == [125, 125]
    b = load_experiment(repo_root / "scenarios/balia2016/table3_friendliness.toml")
    single = b.scenario("balia", options=Options(balia_reading="single-bottleneck")).spec
    assert [(ln["name"], ln["rate_bps"]) for ln in single["links"]] == [("link1", 4e6)]
    assert all(p["links"] == ["link1"] for p in single["paths"])
    k = load_experiment(repo_root / "scenarios/khalili/n1_15.toml")
    assert "access" in {ln["name"] for ln in k.base.spec["links"]}
    unc = k.scenario("lia", options=Options(khalili_reading="uncapped")).spec
    assert "access" not in {ln["name"] for ln in unc["links"]}
    assert all("access" not in p["links"] for p in unc["paths"])


def test_scaling_for_quick_runs(repo_root):
    e = load_experiment(repo_root / "scenarios/balia2016/table5_responsiveness.toml")
    sc = e.scenario("balia", options=Options(time_scale=0.1)).spec
    assert sc["duration_s"] == pytest.approx(16.0)
    sp = next(f for f in sc["flows"] if f["name"] == "sp")
    assert (sp["start_s"], sp["stop_s"]) == (pytest.approx(4.0), pytest.approx(8.0))
    r = load_experiment(repo_root / "scenarios/rsf2020/fig2_filesize.toml")
    sc = r.scenario("lia", 8.0, Options(size_scale=0.01)).spec
    assert sc["flows"][0]["size_bytes"] == 80000


def test_units():
    assert parse_seconds("150ms") == pytest.approx(0.15)
    assert parse_seconds(2) == 2.0
    assert parse_bytes("4MB") == 4e6 and parse_bytes("1MiB") == 2**20
    assert parse_rate("10Mbps") == 1e7
    with pytest.raises(ValueError, match="unknown time unit"):
        parse_seconds("10 parsecs")
    # The simulator's own unit rules (one copy, in Rust): case matters.
    assert parse_rate("10Mbit/s") == 1e7 and parse_seconds("500µs") == pytest.approx(5e-4)
    with pytest.raises(ValueError, match="unknown rate unit"):
        parse_rate("10MBps")


def test_bad_options_are_named():
    with pytest.raises(ValueError, match="delay_reading"):
        Options(delay_reading="sideways")


def test_build_jobs_covers_all(experiments):
    jobs = build_jobs(experiments, [1])
    assert len(jobs) == sum(len(e.algorithms) * len(e.xs()) for e in experiments)
    assert not any(math.isnan(j.tags["x"]) for j in jobs if j.tags["experiment"] == "rsf/fig2")


def _counting_by_flow(sc):
    """(delayed ACKs, counting) of each flow, counting where the scenario writes it."""
    return {f["name"]: (f["delayed_ack"], f["counting"] if "counting" in f["written"] else None)
            for f in sc.spec["flows"]}


def test_ack_readings_set_delayed_acks_and_counting_per_paper(experiments):
    by_key = {e.key: e for e in experiments}
    s2 = by_key["rsf/table2_s2"]
    # Today's reading leaves the files alone: an ACK per segment, counting irrelevant.
    assert all(v == (False, None) for v in _counting_by_flow(s2.scenario("lia")).values())
    # linux: delayed ACKs and per-segment counting for every flow.
    assert set(_counting_by_flow(s2.scenario("lia", options=Options(ack_reading="linux"))).values()) == {(True, "bytes")}
    # papers, RSF test bed (v0.93 on Linux 4.9): LIA and RSF-DB per ACK, regular TCP per segment.
    papers = Options(ack_reading="papers")
    assert set(_counting_by_flow(s2.scenario("lia", options=papers)).values()) == {(True, "acks")}
    assert set(_counting_by_flow(s2.scenario("rsf-db", options=papers)).values()) == {(True, "acks")}
    assert set(_counting_by_flow(s2.scenario("tcp", options=papers)).values()) == {(True, "bytes")}
    rsf_bytes = Options(ack_reading="papers-rsf-bytes")
    assert set(_counting_by_flow(s2.scenario("rsf-db", options=rsf_bytes)).values()) == {(True, "bytes")}
    assert set(_counting_by_flow(s2.scenario("lia", options=rsf_bytes)).values()) == {(True, "acks")}
    # papers, Balia's test bed (v0.88 on Linux 3.11): the single-path Reno users per ACK too.
    t3 = by_key["balia/table3"].scenario("balia", options=papers)
    kinds = {f["name"]: f["kind"] for f in t3.spec["flows"]}
    counted = _counting_by_flow(t3)
    assert {kinds[n] for n in counted} == {"tcp", "mptcp"}
    assert set(counted.values()) == {(True, "acks")}
    with pytest.raises(ValueError, match="ack_reading"):
        Options(ack_reading="sometimes")


def _edited(path, edit):
    """The scenario file edited as a dict, then validated: a construction independent of
    experiments.py's, to compare the overrides against."""
    import tomllib

    doc = tomllib.loads(path.read_text(encoding="utf-8"))
    doc.pop("reproduce")
    edit(doc)
    return pathpool.load_scenario(doc).spec


def test_deletions_build_the_same_scenario_as_editing_the_file(repo_root):
    k = load_experiment(repo_root / "scenarios/khalili/n1_15.toml")

    def uncapped(doc):
        doc["links"] = [ln for ln in doc["links"] if ln["name"] != "access"]
        for p in doc["paths"]:
            p["links"] = [n for n in p["links"] if n != "access"]
        for fl in doc["flows"]:
            if fl["name"] == "type1":
                fl["algorithm"] = "olia"

    assert k.scenario("olia", options=Options(khalili_reading="uncapped")).spec == _edited(k.path, uncapped)

    def single_path(doc):
        for fl in doc["flows"]:
            if fl["name"] == "type1":
                fl.update(kind="tcp", path=fl.pop("paths")[0], algorithm="reno")
                fl.pop("scheduler", None)
                fl.pop("params", None)

    assert k.scenario("tcp").spec == _edited(k.path, single_path)
    e = load_experiment(repo_root / "scenarios/rsf2020/table2_s2_homogeneous_2pct.toml")

    def one_way(doc):
        for p in doc["paths"]:
            p.pop("ack_delay", None)
        doc["flows"][0]["algorithm"] = "lia"
        doc["flows"][0].pop("params", None)

    assert e.scenario("lia", options=Options(delay_reading="one-way")).spec == _edited(e.path, one_way)


def test_recovery_reading_sets_every_window_flows_recovery(experiments):
    by_key = {e.key: e for e in experiments}
    t3 = by_key["balia/table3"]
    # Default: the files' own setting, the simulator's rfc6675.
    assert {f["recovery"] for f in t3.scenario("balia").spec["flows"]} == {"rfc6675"}
    # linux: every expanded flow runs Linux's recovery (Rust validated the override once).
    sc = t3.scenario("balia", options=Options(recovery_reading="linux"))
    assert {f["recovery"] for f in sc.spec["flows"]} == {"linux"}
    assert len(sc.spec["flows"]) > 1
    with pytest.raises(ValueError, match="recovery_reading"):
        Options(recovery_reading="newreno")
