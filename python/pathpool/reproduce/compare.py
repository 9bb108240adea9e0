"""Put each published number (from ``published/*.csv`` only) beside ours, with a verdict."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from pathpool.reproduce.experiments import Experiment
from pathpool.reproduce.verdict import cell_verdict, check_claim, kendall_tau, ordering_agrees

__all__ = ["AGREEMENT_METRICS", "DISAGREE", "agreement", "claims", "compare", "published", "published_rows",
           "with_kernel"]

#: Relative difference between the engines above which the report explains the row.
DISAGREE = 0.15

#: The metrics compared between the engines (the published quantities and Jain's index; not
#: bookkeeping such as the count of incomplete downloads).
AGREEMENT_METRICS = ("throughput_mbps", "jain", "mptcp_mbps", "sptcp_mbps", "type1_mbps", "type2_mbps",
                     "recovery_s", "window_cv")

PUBLISHED = Path(__file__).resolve().parent / "published"

#: Paper column name -> our algorithm name(s), per CSV layout.
_KHALILI_COLS = {"sptcp_mbps": "tcp", "lia_mbps": "lia", "olia_mbps": "olia", "balia_mbps": "balia"}


def published(name: str) -> pd.DataFrame:
    """One transcribed table (``published/<name>``)."""
    return pd.read_csv(PUBLISHED / name)


def published_rows(e: Experiment) -> list[dict]:
    """The published numbers an experiment is compared with, as rows
    ``group, algorithm, metric, paper, paper_ci, source``; empty when the paper gives none."""
    csv = e.spec.get("published")
    if not csv:
        return []
    df = published(csv)
    rows: list[dict] = []
    if csv == "rsf2020_table2.csv":
        sel = df[df["scenario_id"] == int(e.spec["published_row"])]
        for _, r in sel.iterrows():
            ours = [a for a in e.algorithms if a.startswith("rsf")] if r["algorithm"] == "rsf" else [r["algorithm"]]
            for a in ours:
                rows.append({"group": r["scenario"], "algorithm": a, "metric": "throughput_mbps",
                             "paper": float(r["throughput_mbps"]), "paper_ci": math.nan, "source": r["source"]})
    elif csv in ("balia2016_table3.csv", "balia2016_table4.csv"):
        for _, r in df.iterrows():
            for metric in ("mptcp_mbps", "sptcp_mbps"):
                if metric in df.columns:
                    rows.append({"group": metric, "algorithm": r["algorithm"], "metric": metric,
                                 "paper": float(r[metric]), "paper_ci": float(r[metric.replace("_mbps", "_ci")]),
                                 "source": r["source"]})
    elif csv == "khalili_slides2014.csv":
        sel = df[df["n1"] == int(e.spec["published_row"])]
        for _, r in sel.iterrows():
            metric = f"{r['flow_type']}_mbps"
            for col, alg in _KHALILI_COLS.items():
                rows.append({"group": metric, "algorithm": alg, "metric": metric, "paper": float(r[col]),
                             "paper_ci": math.nan, "source": r["source"]})
    else:
        raise ValueError(f"{e.path}: no comparison layout for published table {csv!r}")
    return rows


#: Columns of :func:`compare`'s table (also when no experiment has a published number, as Balia
#: Table V alone, whose values were lost in extraction).
COMPARE_COLUMNS = ["table", "title", "group", "algorithm", "metric", "paper", "paper_ci", "mean", "lo", "hi",
                   "n", "verdict", "ordering_agrees", "kendall_tau", "source"]


def compare(experiments: list[Experiment], summary: pd.DataFrame) -> pd.DataFrame:
    """One row per published number (and per algorithm we ran that the paper did not)."""
    out = []
    for e in experiments:
        pub = published_rows(e)
        if not pub:
            continue
        s = summary[(summary["experiment"] == e.key) & summary["x"].isna()]
        groups = {}
        for r in pub:
            groups.setdefault((r["group"], r["metric"]), []).append(r)
        for (group, metric), rs in groups.items():
            ours = s[s["metric"] == metric].set_index("algorithm")
            paper_map = {r["algorithm"]: r["paper"] for r in rs}
            ours_map = {a: float(ours.loc[a, "mean"]) for a in ours.index}
            agree = ordering_agrees(paper_map, ours_map,
                                    {a: (float(ours.loc[a, "lo"]), float(ours.loc[a, "hi"])) for a in ours.index})
            tau = kendall_tau(paper_map, ours_map)
            seen = set()
            for r in rs:
                a = r["algorithm"]
                seen.add(a)
                m, lo, hi, n = (ours.loc[a, ["mean", "lo", "hi", "n"]] if a in ours.index else (math.nan,) * 3 + (0,))
                out.append({"table": e.key, "title": e.title, "group": group, "algorithm": a, "metric": metric,
                            "paper": r["paper"], "paper_ci": r["paper_ci"], "mean": float(m), "lo": float(lo),
                            "hi": float(hi), "n": int(n),
                            "verdict": cell_verdict(r["paper"], r["paper_ci"], float(m), float(lo), float(hi), agree),
                            "ordering_agrees": agree, "kendall_tau": tau, "source": r["source"]})
            for a in ours.index:
                if a not in seen:
                    row = ours.loc[a]
                    out.append({"table": e.key, "title": e.title, "group": group, "algorithm": a, "metric": metric,
                                "paper": math.nan, "paper_ci": math.nan, "mean": float(row["mean"]),
                                "lo": float(row["lo"]), "hi": float(row["hi"]), "n": int(row["n"]),
                                "verdict": "— (not in the paper)", "ordering_agrees": agree, "kendall_tau": tau,
                                "source": ""})
    df = pd.DataFrame(out, columns=COMPARE_COLUMNS)
    # True, False, None or "open" (verdict.ORDER_OPEN): as text, one column type for Parquet;
    # the CSV reads as before ("True", "False", empty).
    df["ordering_agrees"] = df["ordering_agrees"].map(lambda v: None if v is None else str(v)).astype(object)
    return df


def claims(summary: pd.DataFrame, experiments: list[Experiment]) -> pd.DataFrame:
    """Every claim of ``claims_checks.csv`` whose experiment was run, with its verdict."""
    checks = published("claims_checks.csv")
    keys = {e.key for e in experiments}
    rows = []
    for _, r in checks.iterrows():
        if r["experiment"] not in keys:
            continue
        verdict, measured = check_claim(r, summary)
        rows.append({"claim_id": r["claim_id"], "experiment": r["experiment"], "claim": r["claim"],
                     "measured": measured, "verdict": verdict, "source": r["source"]})
    return pd.DataFrame(rows, columns=["claim_id", "experiment", "claim", "measured", "verdict", "source"])


#: Kernel columns :func:`with_kernel` adds to the simulator's comparison.
KERNEL_COLUMNS = ("linux_mean", "linux_lo", "linux_hi", "linux_n", "linux_verdict")


def with_kernel(sim: pd.DataFrame, kernel: pd.DataFrame) -> pd.DataFrame:
    """The simulator's comparison with the kernel's mean, CI, n and verdict beside each row
    (NaN / "not run on the kernel" where the test bed did not run the experiment)."""
    out = sim.copy()
    if not len(out):
        for c in KERNEL_COLUMNS:
            out[c] = pd.Series(dtype=object if c == "linux_verdict" else float)
        return out
    key = ["table", "group", "algorithm", "metric"]
    k = kernel[key + ["mean", "lo", "hi", "n", "verdict"]] if len(kernel) else pd.DataFrame(
        columns=key + ["mean", "lo", "hi", "n", "verdict"])
    k = k.rename(columns={c: f"linux_{c}" for c in ("mean", "lo", "hi", "n", "verdict")})
    out = out.merge(k, on=key, how="left")
    out["linux_n"] = out["linux_n"].fillna(0).astype(int)
    out["linux_verdict"] = out["linux_verdict"].fillna("not run on the kernel")
    return out


def agreements(sims: Sequence[tuple[str, pd.DataFrame]], kernel: pd.DataFrame) -> pd.DataFrame:
    """:func:`agreement` for each (simulator reading, simulator summary) in ``sims``, stacked in
    that order with the reading in a first column ``sim_reading``."""
    parts = [agreement(sim, kernel).assign(sim_reading=reading) for reading, sim in sims]
    df = pd.concat(parts, ignore_index=True) if parts else agreement(pd.DataFrame(), kernel).assign(sim_reading="")
    return df[["sim_reading", *[c for c in df.columns if c != "sim_reading"]]]


def agreement(sim: pd.DataFrame, kernel: pd.DataFrame) -> pd.DataFrame:
    """Simulator vs kernel for every (experiment, algorithm, x, metric) both ran.

    Columns: ``experiment, algorithm, x, metric, sim_mean, sim_lo, sim_hi, sim_n, linux_mean,
    linux_lo, linux_hi, linux_n, ratio`` (kernel / simulator), ``overlap`` (the two 95% CIs
    overlap; None when either has fewer than 2 runs) and ``disagree`` (``|ratio - 1| >``
    :data:`DISAGREE`).
    """
    cols = ["experiment", "algorithm", "x", "metric", "sim_mean", "sim_lo", "sim_hi", "sim_n", "linux_mean",
            "linux_lo", "linux_hi", "linux_n", "ratio", "overlap", "disagree"]
    if not len(sim) or not len(kernel):
        return pd.DataFrame(columns=cols)
    key = ["experiment", "algorithm", "x", "metric"]

    def side(df: pd.DataFrame, p: str) -> pd.DataFrame:
        df = df[df["metric"].isin(AGREEMENT_METRICS)].copy()
        # x is NaN for unswept experiments; NaN never equals NaN in a merge key, so key on its text.
        df["_x"] = df["x"].map(repr)
        return df.rename(columns={c: f"{p}_{c}" for c in ("mean", "lo", "hi", "n")})

    m = side(sim, "sim").merge(side(kernel, "linux").drop(columns=["x"]), on=["experiment", "algorithm", "_x",
                                                                              "metric"])
    rows = []
    for r in m.to_dict("records"):
        s, k = float(r["sim_mean"]), float(r["linux_mean"])
        ratio = k / s if s != 0 and math.isfinite(s) and math.isfinite(k) else math.nan
        known = all(math.isfinite(float(r[c])) for c in ("sim_lo", "sim_hi", "linux_lo", "linux_hi"))
        overlap = (r["sim_lo"] <= r["linux_hi"] and r["linux_lo"] <= r["sim_hi"]) if known else None
        rows.append({**{c: r[c] for c in key}, **{c: r[c] for c in cols[4:12]}, "ratio": ratio, "overlap": overlap,
                     "disagree": bool(math.isfinite(ratio) and abs(ratio - 1) > DISAGREE)})
    return pd.DataFrame(rows, columns=cols)
