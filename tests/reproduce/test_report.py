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
    assert (figs / "rsf_fig4.png").exists() and (figs / "rsf_fig4.pdf").read_bytes().startswith(b"%PDF")


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


def test_contents_anchors_and_references(outcome):
    page = (outcome.out / "index.html").read_text()
    md = (outcome.out / "README.md").read_text()
    links = re.findall(r"<a href=\"#([a-z0-9-]+)\">", page)
    assert len(links) >= len(outcome.comparison["table"].unique()) + 4
    for a in links:  # every entry of the table of contents lands on a heading, in both documents
        assert f"<h2 id='{a}'>" in page and f'<a id="{a}"></a>' in md
    for cite in ("Pokhrel &amp; Williamson 2020", "Peng et al. 2016", "Pluntke &amp; Rio 2011"):
        assert cite in page and cite.replace("&amp;", "&") in md
    assert not re.findall(r"\b\d{3}_[0-9a-f]{16}\.txt", page + md)  # papers cited by name, never by file


def test_markdown_is_rendered_and_paragraphs_are_whole(outcome):
    page = (outcome.out / "index.html").read_text()
    body = re.sub(r"<figure>.*?</figure>", "", page, flags=re.DOTALL)
    assert "**" not in body and "*reproduced*" not in body and "<em>reproduced</em>" in body
    # A hand-written paragraph of findings.md spans many source lines; it must be one <p>.
    para = re.search(r"<p><strong>RSF-DB is uncoupled Reno in every scenario of the paper\.</strong>(.*?)</p>", page, re.DOTALL)
    assert para is not None and "because the coupled algorithms slow" in para.group(1).replace("\n", " ")


def test_figures_are_pdf_and_200_dpi_png(outcome):
    import struct

    figs = outcome.out / "figures"
    pngs = sorted(figs.glob("*.png"))
    assert len(pngs) >= 10
    for png in pngs:
        assert png.with_suffix(".pdf").read_bytes().startswith(b"%PDF")
        data = png.read_bytes()
        i = data.index(b"pHYs")  # pixels per metre, x then y
        ppm = struct.unpack(">I", data[i + 4 : i + 8])[0]
        assert ppm * 0.0254 >= 199.5, png.name


def test_bars_without_published_values_have_no_paper_legend():
    import math as m

    from pathpool.reproduce.figures import _bars

    fig = _bars([("a", "lia", 1.0, 0.9, 1.1, m.nan), ("b", "olia", 2.0, 1.9, 2.1, m.nan)], "y", "t")
    assert fig.axes[0].get_legend() is None
    fig = _bars([("a", "lia", 1.0, 0.9, 1.1, 1.2), ("b", "olia", 2.0, 1.9, 2.1, m.nan)], "y", "t")
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert labels == ["ours (95% CI)", "paper"]


def test_conclusions_only_for_experiments_that_ran(tmp_path):
    out = reproduce(["khalili"], seeds=[1, 2], out=tmp_path, workers=2,
                    options=Options(time_scale=0.05, size_scale=0.02))
    page = (out.out / "index.html").read_text()
    assert "Khalili&#x27;s scenario (Walid et al. 2014)" in page or "Khalili's scenario (Walid et al. 2014)" in page
    assert "RSF-DB is uncoupled Reno" not in page and "Balia (Peng et al. 2016)" not in page
    assert "not run" not in page


def test_every_findings_paragraph_names_real_experiments():
    from pathpool.reproduce.experiments import PAPERS, load_experiments
    from pathpool.reproduce.report import _NEEDS, FINDINGS_TEMPLATE

    keys = {e.key for e in load_experiments(PAPERS)}
    needs = _NEEDS.findall(FINDINGS_TEMPLATE.read_text(encoding="utf-8"))
    assert len(needs) >= 8
    for n in needs:  # a misspelt key would hide its paragraph from every report
        assert set(n.split()) <= keys, n


def test_results_folder_is_one_unit(tmp_path, monkeypatch):
    # A run that fails (or is killed) while writing results/ leaves the previous set whole;
    # a folder holding other files is refused rather than replaced.
    from pathpool.errors import OutputError
    from pathpool.reproduce import runner as rr

    opts = Options(time_scale=0.05, size_scale=0.02)
    reproduce(["khalili"], seeds=[1], out=tmp_path, workers=1, report=False, options=opts)
    res = tmp_path / "results"
    before = {p.name: p.read_bytes() for p in res.iterdir()}
    real = rr.write_table

    def flaky(df, directory, name, csv=True):
        if name == "claims":
            raise OSError("disk full (simulated)")
        return real(df, directory, name, csv)

    monkeypatch.setattr(rr, "write_table", flaky)
    with pytest.raises(OSError, match="simulated"):
        reproduce(["khalili"], seeds=[1], out=tmp_path, workers=1, report=False, options=opts)
    assert {p.name: p.read_bytes() for p in res.iterdir()} == before  # per_run, summary: old bytes
    # no temporaries left: only the locks of results/ and of the run cache
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == [".cache.lock", ".results.lock"]
    monkeypatch.setattr(rr, "write_table", real)
    (res / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="other files"):
        reproduce(["khalili"], seeds=[1], out=tmp_path, workers=1, report=False, options=opts)
    assert (res / "notes.txt").read_text() == "mine"
