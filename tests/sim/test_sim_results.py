"""pathpool.run: tables, their schema, one row per entity per seed, conservation, summary."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pathpool
import pytest
from pathpool.sim.schema import TABLES, column_names


@pytest.fixture(scope="module")
def results(tiny_scenario):
    return pathpool.run(tiny_scenario)


def test_dict_scenario_runs_with_its_seeds(results):
    assert results.scenario.origin == "<dict>"
    assert results.scenario.name == "tiny"
    assert results.seeds == (1, 2)


@pytest.mark.parametrize("table", ["flows", "subflows", "links", "series", "stats"])
def test_tables_have_the_documented_columns_and_types(results, table):
    df: pd.DataFrame = getattr(results, table)
    assert list(df.columns) == column_names(table)
    for col in TABLES[table]:
        kind = df[col.name].dtype.kind
        expected = {"uint64": "u", "uint32": "u", "float64": "f", "string": "OU"}[col.type]
        assert kind in expected, (table, col.name, df[col.name].dtype)


def test_one_row_per_entity_per_seed(results):
    sc = results.scenario
    import tomllib

    spec = tomllib.loads(sc.text)
    n_flows = sum(f.get("count", 1) for f in spec["flows"])
    n_subflows = sum(f.get("count", 1) * (len(f["paths"]) if "paths" in f else 1) for f in spec["flows"])
    for seed in results.seeds:
        assert (results.flows["seed"] == seed).sum() == n_flows
        assert (results.subflows["seed"] == seed).sum() == n_subflows
        assert (results.links["seed"] == seed).sum() == len(spec["links"])
    assert list(results.flows["seed"].unique()) == list(results.seeds)
    assert sorted(results.flows["flow"].unique()) == sorted(f["name"] for f in spec["flows"])
    assert sorted(results.links["link"].unique()) == sorted(l["name"] for l in spec["links"])
    per_flow = results.subflows.groupby(["seed", "flow"]).size()
    for row in results.flows.itertuples():
        assert per_flow[(row.seed, row.flow)] == row.n_subflows


def test_flow_accounting_is_consistent(results):
    f = results.flows
    dur = f["end_s"] - f["start_s"]
    assert (dur > 0).all()
    # goodput is defined as delivered bytes over the flow's active time
    np.testing.assert_allclose(f["goodput_bps"], f["delivered_bytes"] * 8 / dur, rtol=1e-12)
    # nothing is delivered that was not sent; retransmissions are sends
    mss = 1448
    assert (f["delivered_bytes"] <= f["sent_packets"] * mss).all()
    assert (f["retransmitted_packets"] <= f["sent_packets"]).all()
    assert (f["goodput_bps"] <= f["throughput_bps"] * (1 + 1e-9)).all()
    assert (f["delivered_bytes"] > 0).all()


def test_goodput_within_link_capacity(results):
    """The two flows through link `la` (tcp, and mp's subflow 0) cannot get more than its rate,
    nor mp's subflow over `lb` more than that link's; a link forwards no more than its rate."""
    sub = results.subflows
    links = results.links
    mss = 1448
    dur = results.scenario.duration_s
    for seed in results.seeds:
        s = sub[sub["seed"] == seed]
        rate = links[links["seed"] == seed].set_index("link")["rate_bps"]
        fwd = links[links["seed"] == seed].set_index("link")["forwarded_packets"]
        on_a = s[s["path"] == "a"]["goodput_bps"].sum()
        on_b = s[s["path"] == "b"]["goodput_bps"].sum()
        assert 0 < on_a <= rate["la"]
        assert 0 < on_b <= rate["lb"]
        for link in ("la", "lb"):
            # every forwarded packet carries at least an MSS of payload here (bulk flows)
            assert fwd[link] * mss * 8 <= rate[link] * dur + mss * 8


def test_packets_are_conserved(results):
    """Flows: sent = received + dropped + in flight. Links: arrived = forwarded + drops + still
    queued. ACKs return over delay-only routes in this scenario, so the data packets the links
    dropped are exactly the ones the flows lost in the network."""
    f, links = results.flows, results.links
    assert (f["sent_packets"] == f["received_packets"] + f["dropped_packets"] + f["in_flight_packets"]).all()
    assert (
        links["arrived_packets"]
        == links["forwarded_packets"] + links["queue_drops"] + links["random_drops"] + links["queued_packets_end"]
    ).all()
    assert links["utilisation"].between(0, 1).all()
    for seed in results.seeds:
        fs = f[f["seed"] == seed]
        ls = links[links["seed"] == seed]
        assert fs["dropped_packets"].sum() == (ls["queue_drops"] + ls["random_drops"]).sum()
        # a packet can be sent but not yet offered to its first link (still in the event queue)
        not_arrived = int(fs["sent_packets"].sum()) - int(ls["arrived_packets"].sum())
        assert 0 <= not_arrived <= int(fs["in_flight_packets"].sum())
    assert (f["integrity_errors"] == 0).all()


def test_series_is_long_form_within_the_run(results):
    from pathpool.sim.schema import SERIES_METRICS

    s = results.series
    assert len(s) > 0
    documented = {(e, m) for e, ms in SERIES_METRICS.items() for m in ms}
    seen = set(zip(s["entity"], s["metric"]))
    assert seen <= documented, seen - documented
    assert s["time_s"].between(0, results.scenario.duration_s).all()
    assert set(s["seed"].unique()) == set(results.seeds)
    assert not s["value"].isna().all()


def test_summary_matches_tables(results):
    summary = results.summary
    assert summary["scenario"] == "tiny"
    assert summary["seeds"] == [1, 2]
    for per_seed in summary["per_seed"]:
        f = results.flows[results.flows["seed"] == per_seed["seed"]]
        assert per_seed["jain_index"] == pytest.approx(pathpool.jain_index(f["goodput_bps"]))
        # the simulator computes it too: two implementations agree
        assert per_seed["jain_index"] == pytest.approx(per_seed["jain_goodput"], rel=1e-12)
        assert per_seed["delivered_bytes"] == int(f["delivered_bytes"].sum())
    assert summary["totals"]["delivered_bytes"] == int(results.flows["delivered_bytes"].sum())
    assert summary["wall_s"] > 0
    mp = next(x for x in summary["flows"] if x["flow"] == "mp")
    g = results.flows[results.flows["flow"] == "mp"]["goodput_bps"]
    assert mp["goodput_bps_mean"] == pytest.approx(g.mean())
    assert mp["goodput_bps_std"] == pytest.approx(g.std(ddof=1))


def test_jain_index_by_hand():
    assert pathpool.jain_index([3.0, 3.0, 3.0, 3.0]) == pytest.approx(1.0)
    assert pathpool.jain_index([1.0, 0.0, 0.0, 0.0]) == pytest.approx(0.25)
    assert pathpool.jain_index([1.0, 2.0]) == pytest.approx(9 / 10)
    assert math.isnan(pathpool.jain_index([]))
    assert math.isnan(pathpool.jain_index([0.0, 0.0]))


def test_explicit_seeds_override_the_scenario(tiny_dict):
    r = pathpool.run(tiny_dict, seeds=np.array([7, 3]))
    assert r.seeds == (7, 3)
    assert list(r.flows["seed"].unique()) == [7, 3]  # in the order asked for


def test_progress_callback_is_monotone_and_finishes(tiny_dict):
    seen: list[float] = []
    pathpool.run(tiny_dict, seeds=[1], progress=seen.append)
    assert seen, "no progress reported"
    assert seen == sorted(seen)
    assert seen[-1] == pytest.approx(1.0)
    assert all(0.0 <= x <= 1.0 for x in seen)


def test_results_roundtrip_through_files(tmp_path, results):
    results.write(tmp_path)
    back = pathpool.read_results(tmp_path)
    for name in ("flows", "subflows", "links", "series"):
        pd.testing.assert_frame_equal(getattr(back, name), getattr(results, name))
    assert back.scenario.text == results.scenario.text
    assert back.seeds == results.seeds
    csv = pd.read_csv(tmp_path / "flows.csv")
    assert list(csv.columns) == column_names("flows")
    np.testing.assert_array_equal(csv["goodput_bps"].to_numpy(), results.flows["goodput_bps"].to_numpy())


def test_algorithms_listing():
    algos = pathpool.algorithms()
    names = [a["name"] for a in algos]
    expected = {"reno", "cubic", "ewtcp", "coupled", "semicoupled", "max", "lia", "olia", "balia", "generalized", "rsf-db", "rsf-lb"}
    assert expected <= set(names), expected - set(names)
    assert len(names) == len(set(names))
    for a in algos:
        assert a["source"].strip() and a["summary"].strip() and a["formula"].strip(), a["name"]
        assert isinstance(a["coupled"], bool)
        for p in a["params"]:
            assert set(p) == {"name", "default", "allowed", "doc"}
            assert p["name"] and p["default"] and p["allowed"], (a["name"], p)
    by_name = {a["name"]: a for a in algos}
    assert by_name["lia"]["coupled"] and not by_name["reno"]["coupled"]
    assert {"beta", "eta"} <= {p["name"] for p in by_name["generalized"]["params"]}


def test_algorithms_cli(cli):
    import json

    r = cli("algorithms", "--json")
    assert r.code == 0
    assert json.loads(r.out) == pathpool.algorithms()
    r = cli("algorithms")
    assert r.code == 0
    for a in pathpool.algorithms():
        assert a["name"] in r.out
