"""The verdicts of the committed reports under the current verdict code, from their summaries.

A verdict is a function of the summaries alone (mean, CI, n per algorithm), which ``results/``
holds, so the verdict code can be checked against a report without its runs. This prints, as
Markdown, every published number of ``results/comparison.csv`` (simulator) and
``results/linux_comparison.csv`` (kernel) and every claim of ``results/claims.csv`` and
``results/linux_claims.csv`` whose verdict the current code gives differently, and the totals
before and after:

    python tests/reproduce/current_verdicts.py

It was written when the rule of "Orderings within the noise" (reproduce README) came in and this
report's kernel runs were in no cache any more: it listed the 20 kernel numbers and 8 claims the
rule moved. Since this report was assembled again under the rule it prints no row, and tests/reproduce/test_verdict.py asserts that for
report/ and report/kernel, so that a change of the rule without regenerating both fails there.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from pathpool.reproduce.compare import claims, compare
from pathpool.reproduce.experiments import PAPERS, load_experiments

HERE = Path(__file__).resolve().parents[2] / "report" / "kernel" / "results"
KEY = ["table", "group", "algorithm", "metric"]


def _ran(summary: pd.DataFrame) -> list:
    """The shipped experiments that ``summary`` has rows of."""
    ran = set(summary["experiment"])
    return [e for e in load_experiments(list(PAPERS)) if e.key in ran]


def changes(summary: pd.DataFrame, committed: pd.DataFrame) -> tuple[pd.DataFrame, dict, dict]:
    """(rows whose verdict moves, totals before, totals after) over the published numbers."""
    now = compare(_ran(summary), summary)
    m = committed.merge(now[KEY + ["verdict", "ordering_agrees"]], on=KEY, suffixes=("_was", "_now"))
    pub = m[m["paper"].notna()]
    return (pub[pub["verdict_was"] != pub["verdict_now"]], pub["verdict_was"].value_counts().to_dict(),
            pub["verdict_now"].value_counts().to_dict())


def claim_changes(summary: pd.DataFrame, committed: pd.DataFrame) -> pd.DataFrame:
    """The claims whose verdict moves, with what the current code measured."""
    now = claims(summary, _ran(summary))
    m = committed.merge(now[["claim_id", "experiment", "verdict", "measured"]], on=["claim_id", "experiment"],
                        suffixes=("_was", "_now"))
    return m[m["verdict_was"] != m["verdict_now"]]


def main() -> None:
    print("| engine | row | algorithm | paper | ours: mean [95% CI] | n | verdict in this report | now |")
    print("|---|---|---|---|---|---|---|---|")
    totals = []
    for engine, summ, comp in (("simulator", "summary.csv", "comparison.csv"),
                               ("kernel", "linux_summary.csv", "linux_comparison.csv")):
        moved, was, now = changes(pd.read_csv(HERE / summ), pd.read_csv(HERE / comp))
        for r in moved.itertuples():
            print(f"| {engine} | {r.table} {r.group} | {r.algorithm} | {r.paper:.3g} | {r.mean:.3g} [{r.lo:.3g}, "
                  f"{r.hi:.3g}] | {r.n} | {r.verdict_was} | {r.verdict_now} |")
        totals.append(f"{engine}: {was} -> {now}")
    print()
    for t in totals:
        print(f"- {t}")
    print()
    print("| engine | claim | verdict in this report | now | measured (now) |")
    print("|---|---|---|---|---|")
    for engine, summ, cl in (("simulator", "summary.csv", "claims.csv"),
                             ("kernel", "linux_summary.csv", "linux_claims.csv")):
        for r in claim_changes(pd.read_csv(HERE / summ), pd.read_csv(HERE / cl)).itertuples():
            print(f"| {engine} | {r.claim_id} ({r.experiment}) | {r.verdict_was} | {r.verdict_now} | {r.measured_now} |")


if __name__ == "__main__":
    main()
