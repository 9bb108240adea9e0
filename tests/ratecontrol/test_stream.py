"""The streaming run of Pluntke & Rio 2011, Figure 1: determinism, probing, accounting, config errors, CLI."""

import json

import numpy as np
import pandas as pd
import pytest
from pathpool.cli import main
from pathpool.ratecontrol import ConfigError, load_config, run_stream

SHORT = {"duration": 60.0, "switch_at": 30.0, "settle": 10.0, "estimation_window": 10.0}


@pytest.fixture(scope="module")
def short_run():
    return run_stream(None, seed=5, **SHORT)


def test_shipped_scenario_loads_with_seed_003_paths():
    cfg = load_config()
    assert [(p.loss, p.rtt_mean) for p in cfg.paths] == [(0.1, 0.02), (0.02, 0.1), (0.01, 0.3)]
    assert cfg.deadline == pytest.approx(0.3) and cfg.switch_at == 250.0


def test_deterministic_per_seed(short_run):
    again = run_stream(None, seed=5, **SHORT)
    pd.testing.assert_frame_equal(short_run.intervals, again.intervals)
    pd.testing.assert_frame_equal(short_run.paths, again.paths)
    other = run_stream(None, seed=6, **SHORT)
    assert not short_run.intervals.goodput_pps.equals(other.intervals.goodput_pps)


def test_accounting(short_run):
    df = short_run.intervals
    assert np.all(df.on_time_source <= df.source_packets)
    assert np.all(df.source_packets == df.packets * (df.k / short_run.config.block_length))
    assert np.all(df.packets % short_run.config.block_length == 0)
    sent = short_run.paths.groupby("t").sent.sum().to_numpy()
    np.testing.assert_array_equal(sent, df.packets.to_numpy())
    # FEC only ever helps: in-time source packets >= those that arrived in time by themselves
    assert np.all(df.residual_loss <= df.loss_before_fec + 1e-12)


def test_probing_fraction_honoured_in_optimised_phase(short_run):
    cfg = short_run.config
    pf = short_run.paths[short_run.paths.controller == "optimised"]
    wide = pf.pivot(index="t", columns="path", values="rate_pps")
    floor = cfg.probe_fraction / len(cfg.paths) * wide.sum(axis=1)
    assert np.all(wide.min(axis=1) >= floor * (1 - 1e-9))


def test_packets_follow_rates(short_run):
    pf = short_run.paths
    # smooth weighted round robin: each path's count within one interval is within 1-2 packets of its share
    total = pf.groupby("t").sent.transform("sum")
    share = pf.rate_pps / pf.groupby("t").rate_pps.transform("sum")
    assert np.all(np.abs(pf.sent - share * total) <= 2.0)


def test_config_errors_name_file_and_field(tmp_path):
    f = tmp_path / "bad.toml"
    f.write_text('[fec]\nloss_model = "oracle"\n[[path]]\nloss = 0.1\nrtt_mean_ms = 20\n')
    with pytest.raises(ConfigError, match=r"bad\.toml: field fec\.loss_model = 'oracle'; allowed values: measured, chebyshev"):
        load_config(f)
    f.write_text("[[path]]\nloss = 1.5\nrtt_mean_ms = 20\n")
    with pytest.raises(ConfigError, match=r"path\[0\]\.loss"):
        load_config(f)
    with pytest.raises(ConfigError, match="unknown StreamConfig fields"):
        run_stream(None, nonsense=1)


def test_cli_stream_writes_results_atomically(tmp_path):
    out = tmp_path / "o"
    assert main(["ratecontrol", "stream", "--out", str(out), "--seed", "3", "--duration", "40"]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == ["fig1_stream.png", "fig1_stream.svg", "intervals.csv", "paths.csv", "summary.json"]
    s = json.loads((out / "summary.json").read_text())
    assert s["published"]["mptcp"]["goodput_pps"] == 133.0 and s["seed"] == 3
    assert len(pd.read_csv(out / "intervals.csv")) == 40


def test_cli_rates_json(capsys):
    assert main(["ratecontrol", "rates", "--path", "0.1,20ms", "--path", "2%,100ms", "--path", "0.01,0.3s", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert np.round(d["mptcp_lia"], 1).tolist() == [88.2, 88.2, 47.1]
    assert np.round(d["mptcp_printed"], 1).tolist() == [83.9, 83.9, 55.9]
    assert sum(d["optimised"]) == pytest.approx(d["tcp_rate"][0])


def test_cli_rejects_bad_path():
    with pytest.raises(SystemExit):
        main(["ratecontrol", "rates", "--path", "0.1"])
