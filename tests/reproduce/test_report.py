"""A whole (tiny) reproduce run: every table in the HTML, images embedded, files written."""

from __future__ import annotations

import base64
import re

import pytest
from pathpool.reproduce import Options, reproduce
from pathpool.reproduce.compare import published


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    return reproduce(["all"], seeds=[1, 2], out=out, workers=2, options=Options(time_scale=0.05, size_scale=0.02))


def test_every_table_is_in_the_report(outcome):
    page = (outcome.out / "index.html").read_text()
    md = (outcome.out / "README.md").read_text()
    for table in outcome.comparison["table"].unique():
        assert f"<code>{table}</code>" in page and f"(`{table}`)" in md
    # every published number of the transcribed tables appears in the comparison
    t2 = published("rsf2020_table2.csv")
    got = outcome.comparison[outcome.comparison["table"].str.startswith("rsf/table2")]
    assert set(t2["throughput_mbps"]) <= set(got["paper"])
    assert "Tolerance" in page and "Claims of the text" in page and "Findings" in page
    assert set(outcome.claims["claim_id"]) == set(published("claims_checks.csv")["claim_id"])


def test_images_are_embedded_and_written(outcome):
    page = (outcome.out / "index.html").read_text()
    imgs = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    assert len(imgs) >= 10
    assert all(base64.b64decode(i)[:8] == b"\x89PNG\r\n\x1a\n" for i in imgs)
    assert "src='http" not in page and "src='figures" not in page
    figs = outcome.out / "figures"
    assert (figs / "rsf_fig4.png").exists() and (figs / "rsf_fig4.svg").read_text().lstrip().startswith("<?xml")


def test_results_files_and_resume(outcome):
    res = outcome.out / "results"
    for name in ("per_run", "summary", "comparison", "claims", "flows"):
        assert (res / f"{name}.parquet").exists() and (res / f"{name}.csv").exists()
    # every configuration has both seeds
    n = outcome.per_run.groupby(["experiment", "algorithm", "x", "metric"], dropna=False)["seed"].nunique()
    assert (n == 2).all()
    again = reproduce(["khalili"], seeds=[1, 2], out=outcome.out, workers=1, report=False,
                      options=Options(time_scale=0.05, size_scale=0.02))
    k = outcome.summary[outcome.summary["experiment"].str.startswith("khalili")].reset_index(drop=True)
    assert again.summary.reset_index(drop=True).equals(k)
