"""The kernel's second stage (``--ci-target F --kernel-max-seeds N``): which kernel cells get more
repetitions and how many (Stein's rule per experiment x algorithm, by hand), the CLI's refusals,
and a whole ``reproduce --backend linux`` that takes both stages from the kernel cache (no
kernel needed: every run is stored by hand under its real cache key)."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from pathpool.kernel.loader import KernelError
from pathpool.reproduce import kernel as kb
from pathpool.reproduce import runner
from pathpool.reproduce.experiments import Options, build_jobs, load_experiments
from pathpool.sweep import Cache

NAN = math.nan


def _per_run(cells: dict[tuple[str, str, float, str], list[float]]) -> pd.DataFrame:
    rows = []
    for (exp, alg, x, metric), values in cells.items():
        for seed, v in enumerate(values, 1):
            rows.append({"experiment": exp, "algorithm": alg, "x": x, "seed": seed, "metric": metric, "value": v})
    return pd.DataFrame(rows)


def test_cells_grow_by_steins_rule_by_hand():
    per_run = _per_run({
        # mean 10, sd 1, t(0.975, 2) = 4.30265: half-width 2.48414 = 24.84% of the mean; for 5%:
        # ceil(3 * (0.248414 / 0.05)^2) = ceil(74.05) = 75; for 20%: ceil(3 * 1.54268) = ceil(4.628) = 5
        ("p/t3", "lia", NAN, "mptcp_mbps"): [9.0, 10.0, 11.0],
        # the same algorithm's other published quantity is narrow: the widest one decides
        ("p/t3", "lia", NAN, "sptcp_mbps"): [5.0, 5.01, 4.99],
        # narrow everywhere (2.48%): stays at 3
        ("p/t3", "olia", NAN, "mptcp_mbps"): [10.0, 10.1, 9.9],
        # bookkeeping, not a published quantity: as wide as it gets, asks for nothing
        ("p/t3", "olia", NAN, "incomplete"): [0.0, 1.0, 0.0],
        # a zero mean has no relative width
        ("p/t3", "balia", NAN, "mptcp_mbps"): [-1.0, 0.0, 1.0],
        # one point of a swept experiment is its own cell: mean 5, half-width 49.7%: 3 * 9.9366^2 = 296.2
        ("p/fig", "lia", 4.0, "throughput_mbps"): [4.0, 5.0, 6.0],
        ("p/fig", "lia", 8.0, "throughput_mbps"): [8.0, 8.01, 7.99],
    })
    assert _named(runner.kernel_repetitions_needed(per_run, 3, 0.05, 200)) == {"p/t3 lia": 75, "p/fig lia x=4": 200}
    got = _named(runner.kernel_repetitions_needed(per_run, 3, 0.05, 10))
    assert got == {"p/t3 lia": 10, "p/fig lia x=4": 10}
    assert _named(runner.kernel_repetitions_needed(per_run, 3, 0.2, 10)) == {"p/t3 lia": 5, "p/fig lia x=4": 10}
    # a cap at the first stage's count grows nothing
    assert runner.kernel_repetitions_needed(per_run, 3, 0.05, 3) == {}


def _named(need: dict) -> dict[str, int]:
    return {runner.cell_name(c): n for c, n in need.items()}


@pytest.mark.parametrize("args, says", [
    (["--kernel-seeds", "3", "--kernel-max-seeds", "2"], ("--kernel-max-seeds 2: increasing integers, the first at "
                                                          "least --kernel-seeds (3)")),
    (["--kernel-max-seeds", "2"], "--kernel-max-seeds 2: increasing integers, the first at least --kernel-seeds (10)"),
    (["--kernel-max-seeds", "5", "--ci-target", "0"], "needs --backend linux or both and --ci-target F > 0"),
    (["--kernel-stage-only", "table3"], "--kernel-stage-only needs --kernel-max-seeds"),
    (["--kernel-seeds", "3", "--kernel-max-seeds", "2,5"], ("--kernel-max-seeds 2,5: increasing integers, the "
                                                            "first at least --kernel-seeds (3)")),
    (["--kernel-seeds", "3", "--kernel-max-seeds", "10", "--kernel-stage-only", "table2_s1=2"],
     "--kernel-stage-only 'table2_s1=2': PATTERN or PATTERN=N with N an integer of at least --kernel-seeds (3)"),
    (["--kernel-seeds", "3", "--kernel-max-seeds", "10", "--kernel-stage-only", "table2_s1=x"],
     "--kernel-stage-only 'table2_s1=x': PATTERN or PATTERN=N"),
    (["--kernel-seeds", "3", "--kernel-max-seeds", "10", "--kernel-stage-only", "=5"],
     "--kernel-stage-only '=5': PATTERN or PATTERN=N"),
    (["--kernel-seeds", "3", "--kernel-max-seeds", "10", "--kernel-stage-only", "nosuch=5"],
     "--kernel-stage-only 'nosuch' matches no experiment (allowed: rsf/fig2,"),
    (["--only", "nosuch"], "--only 'nosuch' matches no experiment"),
    (["--kernel-max-seeds", "10,5"], "'10,5': integers >= 1, comma-separated and increasing"),
    (["--kernel-max-seeds", "10,x"], "'10,x': integers >= 1, comma-separated and increasing"),
])
def test_cli_refuses_a_bad_kernel_cap_in_one_line(tmp_path, capsys, args, says):
    from pathpool.cli import main

    base = ["reproduce", "rsf", "--backend", "linux", "--ci-target", "0.05", "-o", str(tmp_path / "r")]
    try:
        code = main(base + args)
    except SystemExit as e:             # refused by argparse (the option's type)
        code = e.code
    lines = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert code == 2 and len(lines) == 1 and says in lines[0], lines
    assert not (tmp_path / "r").exists()          # refused before anything


def test_cli_refuses_the_stage_on_the_simulator_alone(tmp_path, capsys):
    from pathpool.cli import main

    code = main(["reproduce", "rsf", "--ci-target", "0.05", "--kernel-max-seeds", "5", "-o", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and "needs --backend linux or both" in err


# --- a whole reproduce from the kernel cache ----------------------------------------------------

#: RSF Table 2 scenario 0, per-connection throughput (Mbps) per algorithm and seed; LIA's three
#: first runs are wide (mean 2.2, sd 0.3: half-width 0.745 = 33.9%), the others' narrow.
VALUES = {alg: [2.2, 2.21, 2.19, 2.2, 2.2] for alg in ("tcp", "olia", "balia", "rsf-db", "rsf-lb")}
VALUES["lia"] = [1.9, 2.2, 2.5, 2.3, 2.1]


def _store(cache_dir, exp, seeds, algs=None, values=VALUES):
    """Fake kernel runs of ``exp`` in the kernel cache under their real keys (every flow of a run
    with the throughput of ``values``)."""
    o = Options()
    jobs = [j for j in build_jobs([exp], seeds, o) if algs is None or j.tags["run_algorithm"] in algs]
    runnable, _ = kb.plan_jobs(jobs, o.ack_reading)
    cache = Cache(cache_dir, sim_columns=False)
    for kj in runnable:
        v = values[kj.job.tags["run_algorithm"]][kj.job.seed - 1]
        flows = pd.DataFrame({**{k: [t] * len(exp.spec["flows"]) for k, t in kj.job.tags.items()},
                              "seed": kj.job.seed, "flow": exp.spec["flows"], "goodput_bps": v * 1e6,
                              "completion_time_s": 10.0})
        cache.store(kj, {t: flows if t == "flows" else pd.DataFrame() for t in kb.TABLES})
    return runnable


def test_the_stage_takes_its_runs_from_the_cache_and_resumes(tmp_path, monkeypatch):
    exp = next(e for e in load_experiments(["rsf"]) if e.key == "rsf/table2_s0")
    croot = kb.cache_root(tmp_path)
    _store(croot, exp, [1, 2, 3])

    def run(**kw):
        return runner.reproduce(["rsf"], seeds=10, out=tmp_path, backend="linux",
                only=["table2_s0"], ci_target=0.05, report=False,
                kernel=runner.KernelOptions(repetitions=3, beds=1, max_repetitions=5, cache_only=True), **kw)

    # The stage asks for LIA seeds 4 and 5 (Stein: 3 * (0.339 / 0.05)^2 = 138, capped at 5) and
    # nothing else; with seed 5 missing, cache-only stops before any run, naming it.
    _store(croot, exp, [4], {"lia"})
    with pytest.raises(KernelError, match=r"1 of 2 kernel runs are not in the cache .*lia seed 5"):
        run()
    _store(croot, exp, [5], {"lia"})
    out = run()
    k = out.kernel
    assert k.more_seeds == {"rsf/table2_s0 lia": 5} and k.first_seeds == 3 and k.jobs == 6 * 3 + 2
    th = k.summary[k.summary["metric"] == "throughput_mbps"].set_index("algorithm")
    assert th["n"].to_dict() == {"tcp": 3, "lia": 5, "olia": 3, "balia": 3, "rsf-db": 3, "rsf-lb": 3}
    assert th.loc["lia", "mean"] == pytest.approx(sum(VALUES["lia"]) / 5)
    # the comparison shows the kernel's n per cell
    c = out.comparison.set_index("algorithm")
    assert c.loc["lia", "n"] == 5 and c.loc["tcp", "n"] == 3


def test_the_stage_is_limited_to_the_named_experiments(tmp_path):
    exps = {e.key: e for e in load_experiments(["rsf"])}
    croot = kb.cache_root(tmp_path)
    for key in ("rsf/table2_s0", "rsf/table2_s5"):
        _store(croot, exps[key], [1, 2, 3])
    _store(croot, exps["rsf/table2_s5"], [4, 5], {"lia"})
    # scenario 0's LIA is as wide as scenario 5's, but only scenario 5 may grow (nothing of
    # scenario 0 beyond seed 3 is cached, so cache-only would stop if the stage asked for it)
    out = runner.reproduce(["rsf"], seeds=10, out=tmp_path, backend="linux",
            only=["table2_s0", "table2_s5"], ci_target=0.05, report=True,
            kernel=runner.KernelOptions(repetitions=3, beds=1, max_repetitions=5, cache_only=True, stage_only=["table2_s5"]))
    assert out.kernel.more_seeds == {"rsf/table2_s5 lia": 5}
    n = out.kernel.summary.groupby(["experiment", "algorithm"])["n"].max()
    assert n[("rsf/table2_s0", "lia")] == 3 and n[("rsf/table2_s5", "lia")] == 5
    # the report's head names the grown cell, the method its range of repetitions
    md = (tmp_path / "README.md").read_text()
    assert "Kernel repetitions: 3, and more where" in md and "`rsf/table2_s5 lia` 5" in md
    assert "(3-5 repetitions each;" in md


#: For two stages after the first (caps 5 and 8): LIA wide at 3 and still wide at 5, TCP wide at
#: 3 and narrow at the 4 the second stage gives it, the rest narrow from the start.
STAGED = {alg: [2.2, 2.21, 2.19] for alg in ("olia", "balia", "rsf-db", "rsf-lb")}
STAGED["lia"] = [1.9, 2.2, 2.5, 2.3, 2.1, 2.0, 2.4, 2.2]
STAGED["tcp"] = [2.15, 2.2, 2.25, 2.2]


@pytest.mark.parametrize("caps, lia, tcp", [((5,), 5, 4), ((5, 8), 8, 4)])
def test_a_later_stage_counts_each_cell_at_the_repetitions_it_has(tmp_path, caps, lia, tcp):
    # Second stage from n0 = 3: LIA 33.9% -> ceil(3 * 6.78^2) = 138, cap 5; TCP mean 2.2, sd 0.05,
    # h = 4.3027 * 0.05 / sqrt(3) / 2.2 = 5.646% -> ceil(3 * 1.1292^2) = ceil(3.825) = 4.
    # Third stage from each cell's own count: LIA over 5 (mean 2.2, sd sqrt(0.05) = 0.2236,
    # h = 2.7764 * 0.2236 / sqrt(5) / 2.2 = 12.62%) -> ceil(5 * 2.524^2) = 32, cap 8, seeds 6-8;
    # TCP over 4 (sd 0.04082, h = 3.1824 * 0.04082 / 2 / 2.2 = 2.95%) stays at 4.
    exp = next(e for e in load_experiments(["rsf"]) if e.key == "rsf/table2_s0")
    croot = kb.cache_root(tmp_path)
    _store(croot, exp, [1, 2, 3], values=STAGED)
    _store(croot, exp, [4, 5], {"lia"}, values=STAGED)
    _store(croot, exp, [4], {"tcp"}, values=STAGED)
    if len(caps) > 1:
        _store(croot, exp, [6, 7], {"lia"}, values=STAGED)

    def run():
        return runner.reproduce(["rsf"], seeds=10, out=tmp_path, backend="linux",
                only=["table2_s0"], ci_target=0.05, report=False,
                kernel=runner.KernelOptions(repetitions=3, beds=1, max_repetitions=caps, cache_only=True))

    if len(caps) > 1:
        # the third stage asks for LIA's seed 8 (after its own 5, not after the first stage's 3)
        with pytest.raises(KernelError, match=r"1 of 3 kernel runs are not in the cache .*lia seed 8"):
            run()
        _store(croot, exp, [8], {"lia"}, values=STAGED)
    k = run().kernel
    assert k.more_seeds == {"rsf/table2_s0 lia": lia, "rsf/table2_s0 tcp": tcp}
    th = k.summary[k.summary["metric"] == "throughput_mbps"].set_index("algorithm")
    assert th["n"].to_dict() == {"tcp": 4, "lia": lia, "olia": 3, "balia": 3, "rsf-db": 3, "rsf-lb": 3}
    assert th.loc["lia", "mean"] == pytest.approx(sum(STAGED["lia"][:lia]) / lia)
    assert k.jobs == 6 * 3 + (lia - 3) + 1


def test_a_later_stage_by_hand():
    per_run = _per_run({("p/t3", "lia", NAN, "mptcp_mbps"): STAGED["lia"][:5],
                        ("p/t3", "tcp", NAN, "mptcp_mbps"): STAGED["tcp"]})
    # each cell at its own count (None), or every cell at one n0 as the second stage does
    assert _named(runner.kernel_repetitions_needed(per_run, None, 0.05, 100)) == {"p/t3 lia": 32}
    assert _named(runner.kernel_repetitions_needed(per_run, 3, 0.05, 100)) == {"p/t3 lia": 20}


def test_the_last_stage_repeats_while_a_cell_is_still_wide(tmp_path):
    # LIA: at 3, h = 4.3027 * 0.15 / sqrt(3) / 2.2 = 16.94% -> cap 5; at 5 (sd 0.10607), h =
    # 5.99% -> ceil(5 * 1.1973^2) = ceil(7.17) = 8; at 8 (sd 0.17928; 1.9 and 2.5 drawn), h =
    # 6.81% -> ceil(8 * 1.3627^2) = 15, cap 10: a repetition of the last stage. Without it the
    # cell stopped at 8 with a 6.8% half-width.
    values = dict(STAGED, lia=[2.05, 2.2, 2.35, 2.2, 2.2, 1.9, 2.5, 2.2, 2.2, 2.2], tcp=[2.2, 2.21, 2.19])
    exp = next(e for e in load_experiments(["rsf"]) if e.key == "rsf/table2_s0")
    croot = kb.cache_root(tmp_path)
    _store(croot, exp, [1, 2, 3], values=values)
    _store(croot, exp, list(range(4, 11)), {"lia"}, values=values)
    k = runner.reproduce(["rsf"], seeds=10, out=tmp_path, backend="linux",
            only=["table2_s0"], ci_target=0.05, report=False,
            kernel=runner.KernelOptions(repetitions=3, beds=1, max_repetitions=(5, 10), cache_only=True)).kernel
    assert k.more_seeds == {"rsf/table2_s0 lia": 10}
    assert k.jobs == 6 * 3 + 7
    # at 8 the rule asked for 15, above the cap
    per_run = _per_run({("p/t3", "lia", NAN, "mptcp_mbps"): values["lia"][:8]})
    assert _named(runner.kernel_repetitions_needed(per_run, None, 0.05, 100)) == {"p/t3 lia": 15}


@pytest.mark.parametrize("caps, patterns", [((5,), ["table2_s0=4", "table2_s5"]),
                                            ((5, 8), ["table2_s0=4", "table2_s5=5"])])
def test_a_stage_pattern_caps_its_experiments_below_the_caps(tmp_path, caps, patterns):
    # Both scenarios' LIA is wide at 3 (33.9%: Stein asks 138). Scenario 0 may grow to 4 only
    # (table2_s0=4), scenario 5 to the cap 5; with caps 5,8 scenario 5 is held at 5 too (at 5 its
    # LIA is 12.6% wide, and the third stage would ask for 32, cap 8: seeds 6-8, not cached, so
    # cache-only would stop).
    exps = {e.key: e for e in load_experiments(["rsf"])}
    croot = kb.cache_root(tmp_path)
    for key in ("rsf/table2_s0", "rsf/table2_s5"):
        _store(croot, exps[key], [1, 2, 3])
    _store(croot, exps["rsf/table2_s0"], [4], {"lia"})
    _store(croot, exps["rsf/table2_s5"], [4, 5], {"lia"})
    k = runner.reproduce(["rsf"], seeds=10, out=tmp_path, backend="linux",
            only=["table2_s0", "table2_s5"], ci_target=0.05, report=False,
            kernel=runner.KernelOptions(repetitions=3, beds=1, max_repetitions=caps, cache_only=True, stage_only=patterns)).kernel
    assert k.more_seeds == {"rsf/table2_s0 lia": 4, "rsf/table2_s5 lia": 5}
    n = k.summary.groupby(["experiment", "algorithm"])["n"].max()
    assert n[("rsf/table2_s0", "lia")] == 4 and n[("rsf/table2_s5", "lia")] == 5


def test_stage_patterns_by_hand():
    assert runner.stage_pattern("balia/fig3=10", 5) == ("balia/fig3", 10)
    assert runner.stage_pattern("table3", 5) == ("table3", None)
    with pytest.raises(ValueError, match="at least --kernel-seeds \\(5\\)"):
        runner.stage_pattern("table3=4", 5)
    exps = [e for e in load_experiments(["rsf"]) if e.key in ("rsf/table2_s0", "rsf/table2_s5")]
    # the smallest N of the patterns naming an experiment holds; no pattern: every one, no limit
    got = runner._stage_ceilings(exps, [("table2_s*", 20), ("table2_s0", 12), ("table2_s0", None)])
    assert got == {"rsf/table2_s0": 12, "rsf/table2_s5": 20}
    assert runner._stage_ceilings(exps, None) == {"rsf/table2_s0": math.inf, "rsf/table2_s5": math.inf}
