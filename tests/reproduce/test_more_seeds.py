"""``--ci-target``: the second stage that gives an experiment more seeds when a published
quantity's confidence interval is too wide (Stein's two-stage rule, ``runner.seeds_needed``)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest
from pathpool.reproduce import runner
from pathpool.reproduce.experiments import Options


def _per_run(rows: list[tuple[str, str, list[float]]]) -> pd.DataFrame:
    out = []
    for exp, metric, values in rows:
        for seed, v in enumerate(values, 1):
            out.append({"experiment": exp, "algorithm": "lia", "x": math.nan, "metric": metric,
                        "seed": seed, "value": v})
    return pd.DataFrame(out)


@pytest.fixture
def fake(monkeypatch):
    exps = [SimpleNamespace(key=k) for k in ("p/wide", "p/tight", "p/books", "p/capped")]

    def use(rows):
        monkeypatch.setattr(runner.metrics, "compute", lambda tables, experiments, options: _per_run(rows))
    return exps, use


def test_seed_count_is_steins_rule_by_hand(fake):
    exps, use = fake
    use([
        # mean 10, sd sqrt(2/3) = 0.8165, t(0.975, 3) = 3.1824: half-width 1.2992 = 12.99% of the
        # mean; for 5%: ceil(4 * (0.12992 / 0.05)^2) = ceil(27.006) = 28 seeds
        ("p/wide", "throughput_mbps", [9.0, 10.0, 11.0, 10.0]),
        ("p/tight", "throughput_mbps", [10.0, 10.01, 9.99, 10.0]),
        # bookkeeping, not a published quantity: as wide as it gets, asks for nothing
        ("p/books", "incomplete", [0.0, 1.0, 0.0, 1.0]),
        # the same spread around 2: half-width 65.0% of the mean; for 5%: 4 * 13.0^2 = 675, capped;
        # for 20%: ceil(4 * (0.64958 / 0.2)^2) = ceil(42.2) = 43
        ("p/capped", "type2_mbps", [1.0, 2.0, 3.0, 2.0]),
    ])
    got = {e.key: n for e, n in runner.seeds_needed({}, exps, Options(), 4, 0.05, 200)}
    assert got == {"p/wide": 28, "p/capped": 200}
    assert {e.key: n for e, n in runner.seeds_needed({}, exps, Options(), 4, 0.2, 200)} == {"p/capped": 43}


def test_second_stage_runs_only_the_extra_seeds_of_wide_experiments(tmp_path, monkeypatch):
    """A real (shortened) reproduce: the stage adds seeds 3.. to the experiments it names, and
    the summary's n is the new count there and 2 elsewhere."""
    wanted = {"khalili/n1_5": 4}
    monkeypatch.setattr(runner, "seeds_needed", lambda tables, experiments, options, n0, target, cap: [
        (e, wanted[e.key]) for e in experiments if e.key in wanted])
    opts = Options(time_scale=0.05, size_scale=0.02)
    out = runner.reproduce(["khalili"], seeds=[1, 2], out=tmp_path, workers=1, report=False, options=opts,
                           ci_target=0.05)
    ns = out.summary.groupby("experiment")["n"].max().to_dict()
    assert ns == {"khalili/n1_5": 4, "khalili/n1_15": 2}
    assert sorted(out.per_run[out.per_run["experiment"] == "khalili/n1_5"]["seed"].unique()) == [1, 2, 3, 4]
    assert out.more_seeds == {"khalili/n1_5": 4}
