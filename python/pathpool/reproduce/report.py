"""The report: ``OUT/index.html`` (one self-contained page, figures embedded as base64 PNG) and
``OUT/README.md`` (figures linked from ``figures/``)."""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path

import numpy as np
import pandas as pd

from pathpool.atomic import atomic_write_text
from pathpool.reproduce.experiments import parse_rate, parse_seconds
from pathpool.reproduce.figures import draw_all
from pathpool.reproduce.verdict import TOLERANCE

__all__ = ["facts", "findings_text", "write_report"]

FINDINGS_TEMPLATE = Path(__file__).resolve().parent / "findings.md"




def _num(v: float, digits: int = 3) -> str:
    return "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}g}"


def _ours(r) -> str:
    if math.isnan(r.mean):
        return "—"
    if math.isnan(r.lo):
        return f"{r.mean:.3g} (n={r.n})"
    return f"{r.mean:.3g} [{r.lo:.3g}, {r.hi:.3g}]"


def tolerance_text() -> str:
    return (
        f"**Tolerance.** A published number is *reproduced* when our mean over seeds is within "
        f"{TOLERANCE['rel']:.0%} of it (relative) or our {TOLERANCE['confidence']:.0%} t-based confidence interval "
        f"overlaps the paper's (its value ± its published margin, when it gives one). Otherwise it is "
        f"*same ordering only* when the algorithms of its row are ordered as in the paper (every pair the paper "
        f"separates by more than {TOLERANCE['tie']:.0%}), else *not reproduced*. A claim of the text is *reproduced* "
        f"when it holds as stated (sizes within {TOLERANCE['rel']:.0%}), *same ordering only* when its direction "
        f"holds but not its size or not for every algorithm, *not reproduced* otherwise."
    )


def facts(outcome) -> dict[str, str]:
    """Numbers computed from the results that the findings text refers to by name."""
    f: dict[str, str] = {}
    s = outcome.summary

    def m(exp, alg, metric, x=None):
        v = s[(s["experiment"] == exp) & (s["algorithm"] == alg) & (s["metric"] == metric)]
        if x is not None:
            v = v[np.isclose(v["x"], x)]
        return float(v["mean"].iloc[0]) if len(v) else math.nan

    # Mathis et al. (1997) bound of two uncoupled Reno subflows: 2 * MSS/RTT * sqrt(3/(2p)).
    for e in outcome.experiments:
        if e.key.startswith("rsf/table2_s") and e.key[-1] in "23456":
            links = e.base["links"]
            bound = 0.0
            for ln in links:
                p = float(str(ln["loss"]).rstrip("%")) / 100
                rtt = parse_seconds(ln["delay"]) * (2 if outcome.options.delay_reading == "one-way" else 1)
                bound += 1448 * 8 / rtt * math.sqrt(1.5 / p) / 1e6 if p > 0 else math.inf
            k = e.key.split("/")[1]
            f[f"{k}_mathis"] = f"{bound:.2f}"
            c = outcome.comparison
            c = c[(c["table"] == e.key) & c["paper"].notna()]
            if len(c):
                f[f"{k}_paper_max"] = f"{c['paper'].max():.2f}"
                f[f"{k}_over_bound"] = f"{c['paper'].max() / bound:.1f}"
    for alg in ("rsf-db", "lia", "olia", "balia", "rsf-lb", "tcp"):
        for k in ("table2_s0", "table2_s1", "table2_s2", "table2_s3", "table2_s4", "table2_s5", "table2_s6"):
            f[f"{k}_{alg}"] = _num(m(f"rsf/{k}", alg, "throughput_mbps"))
    for n in (5, 15):
        for alg in ("tcp", "lia", "olia", "balia", "rsf-db", "rsf-lb"):
            for t in (1, 2):
                f[f"k{n}_{alg}_t{t}"] = _num(m(f"khalili/n1_{n}", alg, f"type{t}_mbps"))
    recovery = {}
    for alg in ("ewtcp", "semicoupled", "max", "balia", "coupled", "olia", "lia"):
        recovery[alg] = m("balia/table5", alg, "recovery_s")
        f[f"t5_{alg}"] = _num(recovery[alg])
    # The ordering is stated from the data, so the prose cannot drift from the numbers.
    known = sorted((v, a) for a, v in recovery.items() if v is not None and not math.isnan(v))
    f["t5_order"] = ", ".join(f"{a} {_num(v)} s" for v, a in known) or "—"
    # The trace: how often RSF-DB's factor was 1.
    t = outcome.tables.get("series")
    if t is not None and len(t):
        tr = t[(t["experiment"] == "rsf/trace") & (t["run_algorithm"] == "rsf-db") & (t["entity"] == "link")
               & (t["metric"] == "queue_bytes")]
        exp = next((e for e in outcome.experiments if e.key == "rsf/table2_s2"), None)
        if len(tr) and exp is not None:
            rate = parse_rate(exp.base["links"][0]["rate"])
            q = tr["value"].to_numpy() * 8 / rate
            d = float(exp.spec["params"]["rsf-db"]["d"])
            f["trace_q_p95_ms"] = f"{np.percentile(q, 95) * 1e3:.1f}"
            f["trace_q_max_ms"] = f"{q.max() * 1e3:.1f}"
            f["trace_factor_one_pct"] = f"{np.mean(q <= d / 2) * 100:.0f}"
    for k, v in list(f.items()):
        if v == "nan":
            f[k] = "—"
    return f


class _Missing(dict):
    def __missing__(self, key: str) -> str:
        return f"({key}: not run)"


def findings_text(outcome) -> tuple[str, str]:
    """(generated findings, hand-written interpretation filled with computed numbers) in Markdown."""
    lines = []
    c = outcome.comparison
    if len(c):
        counts = c[c["paper"].notna()]["verdict"].value_counts()
        lines.append("Published numbers: " + ", ".join(f"{v} {k}" for k, v in counts.items()) + ".")
    for r in outcome.claims.itertuples():
        lines.append(f"- **{r.verdict}** — {r.claim} ({r.source}). Measured: {r.measured}.")
    gen = "\n".join(lines)
    interp = ""
    if FINDINGS_TEMPLATE.exists():
        interp = FINDINGS_TEMPLATE.read_text(encoding="utf-8").format_map(_Missing(facts(outcome)))
    return gen, interp


def _md_table(c: pd.DataFrame) -> str:
    out = ["| row | algorithm | metric | paper | ours: mean [95% CI] | verdict |", "|---|---|---|---|---|---|"]
    for r in c.itertuples():
        paper = _num(r.paper) + (f" ± {_num(r.paper_ci)}" if not math.isnan(r.paper_ci) else "")
        out.append(f"| {r.group} | {r.algorithm} | {r.metric} | {paper} | {_ours(r)} | {r.verdict} |")
    return "\n".join(out)


def _html_table(c: pd.DataFrame) -> str:
    rows = []
    for r in c.itertuples():
        paper = _num(r.paper) + (f" ± {_num(r.paper_ci)}" if not math.isnan(r.paper_ci) else "")
        cls = {"reproduced": "ok", "same ordering only": "mid", "not reproduced": "bad"}.get(r.verdict, "")
        rows.append(f"<tr><td>{html.escape(str(r.group))}</td><td>{r.algorithm}</td><td>{r.metric}</td><td>{paper}</td>"
                    f"<td>{_ours(r)}</td><td class='{cls}'>{r.verdict}</td></tr>")
    return ("<table><tr><th>row</th><th>algorithm</th><th>metric</th><th>paper</th><th>ours: mean [95% CI]</th>"
            "<th>verdict</th></tr>" + "".join(rows) + "</table>")


def _md_to_html(text: str) -> str:
    """Just enough Markdown for our own findings text: paragraphs, bullets, **bold**, headings."""
    import re

    out, in_list = [], False
    for line in text.splitlines():
        esc = html.escape(line)
        esc = re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", esc)
        esc = re.sub(r"`(.+?)`", r"<code>\1</code>", esc)
        if line.startswith("- "):
            if not in_list:
                out.append("<ul>")
                in_list = True
            out.append(f"<li>{esc[2:]}</li>")
            continue
        if in_list:
            out.append("</ul>")
            in_list = False
        if line.startswith("#"):
            level = min(6, len(line) - len(line.lstrip("#")) + 2)
            out.append(f"<h{level}>{esc.lstrip('#').strip()}</h{level}>")
        elif line.strip():
            out.append(f"<p>{esc}</p>")
    if in_list:
        out.append("</ul>")
    return "\n".join(out)


def write_report(outcome) -> None:
    """Write ``index.html`` and ``README.md`` under ``outcome.out``."""
    figs = draw_all(outcome)
    o = outcome.options
    readings = (f"delay reading `{o.delay_reading}`, buffer reading `{o.buffer_reading}`, Balia network "
                f"`{o.balia_reading}`, Khalili access `{o.khalili_reading}`"
                + (f", time scale {o.time_scale:g}, size scale {o.size_scale:g}" if (o.time_scale, o.size_scale) != (1, 1) else ""))
    head = (f"Seeds: {len(outcome.seeds)} ({outcome.seeds[0]}..{outcome.seeds[-1]}); jobs: {outcome.timing['jobs']}; "
            f"simulation wall time {outcome.timing['simulate_s']:.0f} s. Readings: {readings}.")
    gen, interp = findings_text(outcome)
    c = outcome.comparison
    md = ["# pathpool reproduce: the seeds' experiments beside the published numbers", "", head, "",
          tolerance_text(), ""]
    hb = [f"<p>{html.escape(head)}</p>", _md_to_html(tolerance_text())]
    for table in (c["table"].unique() if len(c) else []):
        sub = c[c["table"] == table]
        title = sub["title"].iloc[0]
        md += [f"## {title} (`{table}`)", "", _md_table(sub), ""]
        hb += [f"<h2>{html.escape(title)} <code>{table}</code></h2>", _html_table(sub)]
    if len(outcome.claims):
        md += ["## Claims of the text", "", "| claim | measured | verdict |", "|---|---|---|"]
        hb += ["<h2>Claims of the text</h2><table><tr><th>claim</th><th>measured</th><th>verdict</th></tr>"]
        for r in outcome.claims.itertuples():
            md.append(f"| {r.claim} ({r.source}) | {r.measured} | {r.verdict} |")
            cls = {"reproduced": "ok", "same ordering only": "mid", "not reproduced": "bad"}.get(r.verdict, "")
            hb.append(f"<tr><td>{html.escape(r.claim)}<br><small>{html.escape(r.source)}</small></td>"
                      f"<td>{html.escape(r.measured)}</td><td class='{cls}'>{r.verdict}</td></tr>")
        md.append("")
        hb.append("</table>")
    md += ["## Findings", "", gen, "", interp, ""]
    hb += ["<h2>Findings</h2>", _md_to_html(gen), _md_to_html(interp)]
    md += ["## Figures", ""]
    hb.append("<h2>Figures</h2>")
    for name, caption, png in figs:
        md += [f"![{name}](figures/{name}.png)", "", f"*{caption}* (also `figures/{name}.svg`)", ""]
        b64 = base64.b64encode(png).decode()
        hb.append(f"<figure><img alt='{name}' src='data:image/png;base64,{b64}'><figcaption>{html.escape(caption)}"
                  f"</figcaption></figure>")
    md += ["## Files", "", ("`results/`: per_run, summary, comparison, claims, flows, subflows, links (Parquet + CSV); "
           "series (Parquet; CSV for the first seed); timing.json. `cache/`: one folder per run, reused unless `--force`."), ""]
    style = ("body{font-family:sans-serif;max-width:1100px;margin:auto;padding:1em}table{border-collapse:collapse;"
             "margin:0.5em 0}td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px}.ok{background:#d9f2d9}"
             ".mid{background:#fff2cc}.bad{background:#f8d0d0}img{max-width:100%}figcaption{font-size:12px;color:#444}")
    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>pathpool reproduce</title>"
            f"<style>{style}</style></head><body><h1>pathpool reproduce: the seeds' experiments beside the published "
            "numbers</h1>" + "\n".join(hb) + "</body></html>")
    atomic_write_text(outcome.out / "index.html", page, mkdir=True)
    atomic_write_text(outcome.out / "README.md", "\n".join(md), mkdir=True)
