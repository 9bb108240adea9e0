"""The report: ``OUT/index.html`` (one self-contained page, figures embedded as base64 PNG) and
``OUT/README.md`` (figures linked from ``figures/``, each also as PDF).

Both are built from one list of sections, so they carry the same table of contents, anchors,
tables and text; the Markdown prose is rendered to HTML with Python-Markdown, not by hand."""

from __future__ import annotations

import base64
import html
import math
import re
from pathlib import Path

import markdown
import numpy as np
import pandas as pd

from pathpool.atomic import atomic_write_text
from pathpool.reproduce.experiments import ACK_READINGS
from pathpool.reproduce.figures import draw_all
from pathpool.reproduce.verdict import TOLERANCE

__all__ = ["REFERENCES", "facts", "findings_text", "write_report"]

FINDINGS_TEMPLATE = Path(__file__).resolve().parent / "findings.md"

#: The papers the report reproduces or relies on: (how the report cites it, the reference).
REFERENCES: tuple[tuple[str, str], ...] = (
    ("Pokhrel & Williamson 2020", ("S. R. Pokhrel, C. Williamson, \"A Rent-Seeking Framework for Multipath TCP\", "
     "IFIP Performance 2020, and its talk's slides (RSF-MPTCP: RSF-DB eq. (1), RSF-LB eq. (2), Table 2, "
     "Figs. 2-6).")),
    ("Walid et al. 2014", ("A. Walid, J. Hwang, Q. Peng, S. H. Low, \"Balia (Balanced linked adaptation)\", "
     "slides, 2014 (Balia's window rules, the (beta, eta) family, Khalili's LIA/OLIA/Balia table).")),
    ("Pluntke & Rio 2011", ("C. Pluntke, M. Rio, \"TCP-friendly Rate Control for non-TCP Multipath Flows\", "
     "ACM CoNEXT student workshop 2011.")),
    ("Peng et al. 2016", ("Q. Peng, A. Walid, J. Hwang, S. H. Low, \"Multipath TCP: Analysis, Design and "
     "Implementation\", IEEE/ACM Transactions on Networking 24(1), 2016 (arXiv 1308.3119).")),
    ("Khalili et al. 2013", ("R. Khalili, N. Gast, M. Popovic, J.-Y. Le Boudec, \"MPTCP is not Pareto-optimal: "
     "performance issues and a possible solution\", IEEE/ACM Transactions on Networking 21(5), 2013 (OLIA).")),
    ("RFC 6356", ("C. Raiciu, M. Handley, D. Wischik, \"Coupled Congestion Control for Multipath Transport "
     "Protocols\", RFC 6356, 2011 (LIA).")),
)

_NEEDS = re.compile(r"<!--\s*needs:\s*(.*?)\s*-->")
_VERDICT_CLASS = {"reproduced": "ok", "same ordering only": "mid", "not reproduced": "bad", "undecided": "und"}




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
        f"overlaps the paper's (its value ± its published margin, when it gives one) while its half-width is at most "
        f"{TOLERANCE['max_halfwidth']:.0%} of our mean (a wide interval decides nothing; n is the number of seeds). "
        f"Otherwise it is "
        f"*same ordering only* when the algorithms of its row are ordered as in the paper (of the pairs the paper "
        f"separates by more than {TOLERANCE['tie']:.0%}, every pair whose intervals do not overlap is in the paper's "
        f"order, and at least one is; overlapping intervals are no order), else *not reproduced*. A claim of the text "
        f"is *reproduced* "
        f"when it holds as stated (sizes within {TOLERANCE['rel']:.0%}), *same ordering only* when its direction "
        f"holds but not its size or not for every algorithm, *not reproduced* otherwise. A number is *undecided* "
        f"when our interval is wider than that and contains {1 - TOLERANCE['rel']:.2f} or "
        f"{1 + TOLERANCE['rel']:.2f} times the paper's value: which side of the boundary the mean falls on is then "
        f"the luck of few runs (the kernel's repetitions; the simulator's seeds are raised until no interval is wide); "
        f"so is a number outside the band whose row has a pair the paper separates with overlapping intervals, one "
        f"of them wide (its order open) and no pair against the paper's order, and a claim whose verdict changes "
        f"when its wide intervals' values move to their ends."
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
            links = e.base.spec["links"]
            bound = 0.0
            for ln in links:
                p = ln["loss"]
                rtt = ln["delay_s"] * (2 if outcome.options.delay_reading == "one-way" else 1)
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
    best = max(m("rsf/table2_s2", a, "throughput_mbps") for a in ("lia", "olia", "balia"))
    f["table2_s2_ratio"] = _num(m("rsf/table2_s2", "rsf-db", "throughput_mbps") / best)
    t3 = {}
    for alg in ("ewtcp", "semicoupled", "max", "balia", "coupled", "olia"):
        t3[alg] = m("balia/table3", alg, "mptcp_mbps")
        f[f"t3_{alg}_mp"] = _num(t3[alg])
        f[f"t3_{alg}_sp"] = _num(m("balia/table3", alg, "sptcp_mbps"))
    # Stated from the data, like Table V's order below.
    ranked = sorted(((v, a) for a, v in t3.items() if a in ("ewtcp", "semicoupled", "max", "coupled")
                     and not math.isnan(v)), reverse=True)
    f["t3_order"] = " > ".join(f"{a} {_num(v)}" for v, a in ranked) or "—"
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
            rate = exp.base.spec["links"][0]["rate_bps"]
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
        ran = {e.key for e in outcome.experiments}
        values = _Missing(facts(outcome))
        # The template is paragraphs each behind a "needs" comment; text before the first is a note.
        parts = _NEEDS.split(FINDINGS_TEMPLATE.read_text(encoding="utf-8"))
        interp = "\n\n".join(text.strip().format_map(values) for needs, text in zip(parts[1::2], parts[2::2])
                              if all(n in ran for n in needs.split()))
    return gen, interp


_TABLE_HEAD = ("row", "algorithm", "metric", "paper", "ours: mean [95% CI]", "n", "verdict")
#: Column heads when both engines ran: each engine's mean, n and verdict.
_TABLE_HEAD_BOTH = ("row", "algorithm", "metric", "paper", "simulator: mean [95% CI]", "n", "simulator verdict",
                    "kernel: mean [95% CI]", "n", "kernel verdict")


def _kernel_cell(r) -> str:
    m, lo, hi = float(r.linux_mean), float(r.linux_lo), float(r.linux_hi)
    if math.isnan(m):
        return "—"
    return f"{m:.3g} (n={int(r.linux_n)})" if math.isnan(lo) else f"{m:.3g} [{lo:.3g}, {hi:.3g}]"


def _head(c: pd.DataFrame, backend: str = "sim") -> tuple[str, ...]:
    if "linux_mean" in c.columns:
        return _TABLE_HEAD_BOTH
    if backend == "linux":
        return tuple(h.replace("ours", "kernel") for h in _TABLE_HEAD)
    return _TABLE_HEAD


def _table_rows(c: pd.DataFrame) -> list[tuple[str, ...]]:
    rows = []
    both = "linux_mean" in c.columns
    for r in c.itertuples():
        paper = _num(r.paper) + (f" ± {_num(r.paper_ci)}" if not math.isnan(r.paper_ci) else "")
        row = (str(r.group), r.algorithm, r.metric, paper, _ours(r), str(r.n), r.verdict)
        if both:
            row += (_kernel_cell(r), str(int(r.linux_n)), str(r.linux_verdict))
        rows.append(row)
    return rows


def _md_grid(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(out)


def _html_grid(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """A table whose cells that hold a verdict word are coloured by it."""
    h = "".join(f"<th>{x}</th>" for x in head)
    body = "".join("<tr>" + "".join(f"<td class='{_VERDICT_CLASS.get(v, '')}'>{html.escape(v)}</td>" for v in row)
                   + "</tr>" for row in rows)
    return f"<table><tr>{h}</tr>{body}</table>"


def _md_table(c: pd.DataFrame, backend: str = "sim") -> str:
    return _md_grid(_head(c, backend), _table_rows(c))


def _html_table(c: pd.DataFrame, backend: str = "sim") -> str:
    return _html_grid(_head(c, backend), _table_rows(c))


def _x_text(x: float) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:g}"


def _rows_of(tables: dict, name: str, r) -> pd.DataFrame | None:
    """The rows of table ``name`` that belong to the agreement row ``r`` (None if there are none)."""
    t = tables.get(name)
    if t is None or not len(t) or "experiment" not in t:
        return None
    sel = t[(t["experiment"] == r.experiment) & (t["run_algorithm"] == r.algorithm)]
    if isinstance(r.x, float) and not math.isnan(r.x):
        sel = sel[np.isclose(sel["x"], r.x)]
    return sel


def _retrans_share(tables: dict, r) -> str:
    """Retransmitted / sent data packets of the row's runs, as a percentage ("—" if unknown)."""
    sel = _rows_of(tables, "flows", r)
    sent = float(sel["sent_packets"].sum()) if sel is not None else 0.0
    return f"{100 * float(sel['retransmitted_packets'].sum()) / sent:.1f}%" if sel is not None and sent > 0 else "—"


def _packets_per_run(tables: dict, r) -> str:
    """Mean over runs of the packets the row's bottleneck links forwarded ("—" if unknown)."""
    sel = _rows_of(tables, "links", r)
    per = sel.groupby("seed")["forwarded_packets"].sum() if sel is not None else ()
    return f"{per.mean():.0f}" if len(per) else "—"


#: How each ACK reading runs on the kernel (``pathpool.reproduce.kernel``).
KERNEL_ACKS = {
    "quickack": "the receiver acknowledges every segment (route attribute `quickack 1`), as the scenario files do",
    "linux": "the kernel's delayed ACKs; every pp_* counts acknowledged segments (`--counting bytes`), single-path "
             "TCP is the kernel's reno",
    "papers": "the kernel's delayed ACKs; the multipath algorithms one step per ACK (`--counting acks`, as the papers' "
             "v0.88/v0.93 kernels), single-path TCP per segment on the kernel's reno (RSF's Linux 4.9) or per ACK on "
             "pp_reno (Balia's and Khalili's Linux 3.11), RSF-DB/LB per ACK",
    "papers-rsf-bytes": "as `papers`, with RSF-DB/LB per acknowledged segment",
}

#: Where the causes of the engines' differences are written down. They took investigations beyond
#: one report's runs, so they live with the findings that name their runs, not in this code.
KERNEL_FINDINGS = "report/FINDINGS.md"

KERNEL_METHOD = (
    "Every experiment the namespace test bed can express ran on the real kernel from the same scenario file as "
    "the simulator: `pathpool.kernel.mapping` turns each scenario into test-bed paths (rate = the path's slowest "
    "link as a `tbf` drop-tail queue of the link's buffer, both counting IP packets as the simulator's links do; paths through one link share its queue; a link "
    "crossed before the paths split, as Khalili's access, is an IFB device shaped by `tbf`, fed once the router has "
    "received the packet (so the senders' TCP small queues do not reach it); one-way delays by "
    "user-space forwarders, Bernoulli loss on data packets by nftables), one MPTCP connection or TCP socket per flow, and the pp_* BPF congestion "
    "controls (single-path Reno flows: the kernel's own `reno`). File downloads write the file and end when every "
    "byte is acknowledged; throughput = file size / time from the sender's first write to the receiver's last byte. ACK reading "
    "`{reading}`: {ack}. {jobs} kernel runs ({n} repetitions each; the seed only labels a repetition: the kernel is "
    "not seeded), {time}. What the kernel does that the simulator does not model even "
    "under its Linux reading: the handshakes' packets (the joins' time is modelled), the receive buffer's "
    "learned payload-to-truesize ratio, segments cut short at the connection-level window's edge (the report's "
    "own simulator columns, the papers' reading, also leave out upstream Linux's MPTCP scheduler, send buffers, "
    "the way the bed's sender writes, restart after idle, the joins' time, DSS option bytes, the short segments "
    "Linux cuts at write and fragment ends and receive-window autotuning){jitter}, and a cap of 300 s per run (`--kernel-max-duration`; a download still "
    "running counts with its goodput so far and in `incomplete`, as in the simulator). Table rows: paper | "
    "simulator mean [95% CI] | kernel mean [95% CI], each engine with its own n and verdict under the same "
    "tolerance."
)

#: How the kernel flows start, per ``--kernel-start-jitter``.
KERNEL_JITTER = {
    "off": ", the flows' start jitter of the report's own simulator columns (every kernel flow starts at its "
           "scenario `start`, as its sender process comes up, and the simulator's runs beside them in the "
           "agreement table draw each start over that spread, about 8 ms per flow in the run; flows that start "
           "late or stop early, as Balia Table V's SP-TCP flow, do so on the run's clock)",
    "scenario": " (but not the flows' start times: with `--kernel-start-jitter scenario` every kernel flow "
                "starts at the simulator's start for its seed, the scenario's `start` plus the jitter Rust draws "
                "for that seed)",
}


#: The hosts' timing noise on the test bed, per ``--kernel-send-jitter``.
KERNEL_SEND_JITTER = {
    "off": " The test bed's hosts had their own timing noise only (tens of microseconds), while the simulator's "
           "flows send each data packet after a random delay of up to their `send_jitter` (0.5 ms by default): "
           "flows sharing a drop-tail queue can lock into phase on the bed and not in the simulator "
           "(`--kernel-send-jitter scenario` has the bed hold each data packet as long before its path's queue).",
    "scenario": " Each data packet was held by its path's forwarder a random time of up to its flows' "
                "`send_jitter` (0.5 ms by default), in order, before the path's queue, as the simulator delays it "
                "(`--kernel-send-jitter scenario`; behind Khalili's shared access link, whose queue comes first, "
                "the path's ACKs were held instead).",
}


#: The columns that identify a kernel run in its tables, and its flows' end (s from its start).
_RUN_KEY = ["experiment", "run_algorithm", "x", "seed"]


def _testbed_hours(flows: pd.DataFrame | None) -> float:
    """Hours of test-bed time of the kernel runs in ``flows``: each run's last flow end (seconds
    from the run's start), summed; NaN when the table does not say (no such columns)."""
    if flows is None or not len(flows):
        return 0.0
    if not {*_RUN_KEY, "end_s"} <= set(flows.columns):
        return math.nan
    return float(flows.groupby(_RUN_KEY, dropna=False)["end_s"].max().sum()) / 3600


def _kernel_time(bed_h: float, wall_s: float) -> str:
    """The kernel runs' time in words: their test-bed time when known, and this report's wall
    time (cached runs count at ~0 there)."""
    wall = f"{wall_s / 60:.1f} min of wall time"
    if math.isnan(bed_h):
        return wall
    return f"{bed_h:.1f} h of test-bed time (the runs' lengths; {wall} for this report, cached runs included at ~0)"


def _kernel_reps(k) -> str:
    """The kernel's repetitions per cell in words: one count, or the first stage's and the range."""
    if not len(k.per_run):
        return "0"
    per_cell = k.per_run.groupby(["experiment", "algorithm", "x"], dropna=False)["seed"].nunique()
    lo, hi = int(per_cell.min()), int(per_cell.max())
    return str(lo) if lo == hi else f"{lo}-{hi}"


#: The metrics of an MPTCP connection's (or a multipath user's) rate in the agreement table.
MPTCP_RATE_METRICS = ("throughput_mbps", "mptcp_mbps", "type1_mbps")


def multipath_experiments(experiments) -> set[str]:
    """Keys of the experiments with a multipath flow over more than one path (RSF Table 2's
    scenario 0 runs its MPTCP algorithms over one path)."""
    return {e.key for e in experiments
            if any(fl["kind"] == "mptcp" and len(fl["paths"]) > 1 for fl in e.base.spec["flows"])}


def agreement_counts(a: pd.DataFrame, multipath: set[str]) -> str:
    """One sentence per simulator reading in ``a``: how many rows that are an MPTCP connection's
    rate (experiments in ``multipath``) are within 10% and 15% of the kernel's, and in how many
    the kernel is below the simulator."""
    out = []
    for reading, g in a.groupby("sim_reading", sort=False):
        g = g[g["metric"].isin(MPTCP_RATE_METRICS) & (g["algorithm"] != "tcp") & g["ratio"].notna()
              & g["experiment"].isin(multipath)]
        if not len(g):
            continue
        dev = (g["ratio"] - 1).abs()
        out.append(f" Under `{reading}`, of the {len(g)} rows that are an MPTCP connection's rate over "
                   f"several paths ({', '.join(MPTCP_RATE_METRICS)}), {int((dev <= 0.10).sum())} "
                   f"are within 10% and {int((dev <= 0.15).sum())} within 15%, the kernel below the simulator in "
                   f"{int((g['ratio'] < 1).sum())} (geometric mean of kernel / simulator "
                   f"{float(np.exp(np.log(g['ratio']).mean())):.3f}).")
    return "".join(out)


def kernel_sections(outcome) -> list[tuple[str, str, str, str]]:
    """The kernel's sections: the agreement table, the rows where the engines disagree by more
    than :data:`pathpool.reproduce.compare.DISAGREE`, and what the test bed could not run."""
    from pathpool.reproduce.compare import DISAGREE

    k = outcome.kernel
    out: list[tuple[str, str, str, str]] = []
    if k is None:
        return out
    method = KERNEL_METHOD.format(reading=outcome.options.ack_reading, jitter=KERNEL_JITTER[k.start_jitter],
                                  time=_kernel_time(_testbed_hours(k.tables.get("flows")), k.wall_s),
                                  ack=KERNEL_ACKS[outcome.options.ack_reading], jobs=k.jobs,
                                  n=_kernel_reps(k))
    method += KERNEL_SEND_JITTER[k.send_jitter]
    out.append(("Method: the kernel backend", "", method, _md_to_html(method)))
    from pathpool.reproduce.runner import AGREEMENT_READINGS

    everything = k.agreement
    a = everything[everything["sim_reading"] == k.agreement_reading] if len(everything) else everything
    if len(a):
        head = ("experiment", "algorithm", "x", "metric", "simulator [95% CI]", "n", "kernel [95% CI]", "n",
                "kernel / simulator", "CIs overlap")
        rows = []
        for r in a.itertuples():
            ov = "—" if r.overlap is None or (isinstance(r.overlap, float) and math.isnan(r.overlap)) else (
                "yes" if r.overlap else "no")
            rows.append((r.experiment, r.algorithm, _x_text(r.x), r.metric,
                         f"{_num(r.sim_mean)} [{_num(r.sim_lo)}, {_num(r.sim_hi)}]", str(int(r.sim_n)),
                         f"{_num(r.linux_mean)} [{_num(r.linux_lo)}, {_num(r.linux_hi)}]", str(int(r.linux_n)),
                         _num(r.ratio), ov))
        n_dis = int(a["disagree"].sum())
        intro = (f"Every quantity both engines measured, from the same scenario files and seeds (the kernel's seed "
                 f"labels a repetition). The simulator's side is {AGREEMENT_READINGS[k.agreement_reading]} "
                 f"(agreement reading `{k.agreement_reading}`). {len(a)} rows; {n_dis} differ by more than "
                 f"{DISAGREE:.0%} (kernel / simulator outside [{1 - DISAGREE:.2f}, {1 + DISAGREE:.2f}]); the CIs "
                 f"overlap in {int(sum(v is True for v in a['overlap']))} (a comparison needs n >= 2 on both "
                 f"sides).{agreement_counts(everything, multipath_experiments(outcome.experiments))}")
        out.append(("Simulator vs kernel", "", intro + "\n\n" + _md_grid(head, rows),
                    _md_to_html(intro) + _html_grid(head, rows)))
        dis = a[a["disagree"]]
        if len(dis):
            lines = []
            for r in dis.itertuples():
                sim_tables = k.beside_tables if k.agreement_reading == "linux" else outcome.tables
                rs, rk = _retrans_share(sim_tables, r), _retrans_share(k.tables, r)
                ps, pk = _packets_per_run(sim_tables, r), _packets_per_run(k.tables, r)
                lines.append(f"- `{r.experiment}` {r.algorithm}{' x=' + _x_text(r.x) if _x_text(r.x) else ''} "
                             f"{r.metric}: simulator {_num(r.sim_mean)}, kernel {_num(r.linux_mean)} "
                             f"(x{_num(r.ratio)}); retransmitted: simulator {rs}, kernel {rk}; packets through the "
                             f"bottleneck(s) per run: simulator {ps}, kernel {pk}.")
            text = (f"Each row below differs by more than {DISAGREE:.0%} between the engines; what was measured is "
                    "listed, with the retransmitted share of the packets each engine sent (same runs). What could be "
                    f"established about the causes, with the runs each number comes from, is in `{KERNEL_FINDINGS}` "
                    "of pathpool's repository; where it says nothing, the cause is not known.\n\n"
                    + "\n".join(lines))
            out.append((f"Where the engines disagree by more than {DISAGREE:.0%}", "", text, _md_to_html(text)))
    if getattr(outcome, "backend", "sim") == "both" and len(k.claims):
        head = ("claim", "measured on the kernel", "kernel verdict")
        rows = [(f"{r.claim} ({r.source})", str(r.measured), str(r.verdict)) for r in k.claims.itertuples()]
        intro = "The claims of the text checked against the kernel's runs (same thresholds as the simulator's)."
        out.append(("Claims of the text on the kernel", "", intro + "\n\n" + _md_grid(head, rows),
                    _md_to_html(intro) + _html_grid(head, rows)))
    if len(k.skipped):
        head = ("experiment", "algorithms", "why the test bed cannot run it")
        rows = []
        for (exp, reason), g in k.skipped.groupby(["experiment", "reason"], sort=False):
            rows.append((exp, ", ".join(g["algorithm"]), reason))
        intro = ("Not dropped silently: these experiments ran in the simulator only, for the reason the mapping onto "
                 "the test bed gives (`pathpool.kernel.mapping`).")
        out.append(("Not run on the kernel", "", intro + "\n\n" + _md_grid(head, rows),
                    _md_to_html(intro) + _html_grid(head, rows)))
    return out


def _md_to_html(text: str) -> str:
    """Our Markdown prose (paragraphs joined across source lines, emphasis, code, lists) as HTML."""
    return markdown.markdown(text, extensions=["tables"], output_format="html")


def _anchor(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def write_report(outcome) -> None:
    """Write ``index.html`` and ``README.md`` under ``outcome.out``.

    Sections: what ran and the tolerance, a table of contents, one table per published table,
    the claims of the text, the findings (only for experiments that ran), the figures (PNG at
    200 dpi embedded in the page, PDF beside it), the files and the references.
    """
    figs = draw_all(outcome)
    o = outcome.options
    readings = (f"delay reading `{o.delay_reading}`, buffer reading `{o.buffer_reading}`, Balia network "
                f"`{o.balia_reading}`, Khalili access `{o.khalili_reading}`, ACK reading `{o.ack_reading}` "
                f"({ACK_READINGS[o.ack_reading]}), recovery reading `{o.recovery_reading}`"
                + (f", time scale {o.time_scale:g}, size scale {o.size_scale:g}" if (o.time_scale, o.size_scale) != (1, 1) else ""))
    backend = getattr(outcome, "backend", "sim")
    engines = {"sim": "the simulator", "linux": "the real Linux kernel (namespace test bed, pp_* BPF controls)",
               "both": "the simulator and the real Linux kernel (namespace test bed, pp_* BPF controls)"}[backend]
    kinfo = ""
    if outcome.kernel is not None:
        import platform

        kinfo = (f" Kernel: Linux {platform.release()}, {outcome.kernel.jobs} runs in real time, "
                 f"{outcome.kernel.wall_s:.0f} s wall time (cached runs included at ~0).")
        k = outcome.kernel
        if k.more_seeds:
            kinfo += (f" Kernel repetitions: {k.first_seeds}, and more where a published quantity's 95% CI was "
                      "wider than the target over those (second stage, "
                      + ", ".join(f"`{c}` {n}" for c, n in sorted(k.more_seeds.items()))
                      + "; each table's kernel n column).")
    sim_time = f"simulation wall time {outcome.timing['simulate_s']:.0f} s. " if backend != "linux" else ""
    more = ""
    if outcome.more_seeds:
        more = (" and more where a published quantity's 95% CI was wider than the target over those: "
                + ", ".join(f"`{k}` {n}" for k, n in sorted(outcome.more_seeds.items()))
                + " (each table's n column)")
    head = (f"Engines: {engines}. Seeds: {len(outcome.seeds)} ({outcome.seeds[0]}..{outcome.seeds[-1]}){more}; "
            f"jobs: {outcome.timing['jobs']}; {sim_time}Readings: {readings}.{kinfo} "
            "Papers are cited by authors and year (see References).")
    gen, interp = findings_text(outcome)
    c = outcome.comparison

    # (title, experiment key or "", markdown body, html body): the TOC and both documents come from it.
    sections: list[tuple[str, str, str, str]] = []
    for table in (c["table"].unique() if len(c) else []):
        sub = c[c["table"] == table]
        sections.append((sub["title"].iloc[0], table, _md_table(sub, backend), _html_table(sub, backend)))
    if len(outcome.claims):
        md_rows = ["| claim | measured | verdict |", "|---|---|---|"]
        html_rows = ["<table><tr><th>claim</th><th>measured</th><th>verdict</th></tr>"]
        for r in outcome.claims.itertuples():
            md_rows.append(f"| {r.claim} ({r.source}) | {r.measured} | {r.verdict} |")
            html_rows.append(f"<tr><td>{html.escape(r.claim)}<br><small>{html.escape(r.source)}</small></td>"
                             f"<td>{html.escape(r.measured)}</td>"
                             f"<td class='{_VERDICT_CLASS.get(r.verdict, '')}'>{r.verdict}</td></tr>")
        html_rows.append("</table>")
        sections.append(("Claims of the text", "", "\n".join(md_rows), "".join(html_rows)))
    sections += kernel_sections(outcome)
    findings_md = gen + ("\n\n### Interpretation\n\n" + interp if interp else "")
    sections.append(("Findings", "", findings_md, _md_to_html(findings_md)))
    md_figs, html_figs = [], []
    for name, caption, png in figs:
        md_figs += [f"![{name}](figures/{name}.png)", "", f"*{caption}* (vector: `figures/{name}.pdf`)", ""]
        b64 = base64.b64encode(png).decode()
        html_figs.append(f"<figure><img alt='{name}' src='data:image/png;base64,{b64}'><figcaption>"
                         f"{html.escape(caption)} (vector: <code>figures/{name}.pdf</code>)</figcaption></figure>")
    if figs:
        sections.append(("Figures", "", "\n".join(md_figs), "\n".join(html_figs)))
    files = ("`results/`: per_run, summary, comparison, claims, flows, subflows, links (Parquet + CSV); "
             "series (Parquet; CSV for the first seed); timing.json. `figures/`: every figure as PNG (200 dpi) "
             "and PDF. `cache/`: one folder per run, reused unless `--force`.")
    if outcome.kernel is not None:
        files += (" Kernel: `results/linux_skipped` (what the test bed cannot run)"
                  + (", linux_per_run, linux_summary, linux_comparison, linux_claims, linux_flows, linux_subflows, "
                     "agreement (column sim_reading: which simulator runs each row compares with)"
                     + (" and the simulator's runs beside the kernel's, as_testbed_flows and as_testbed_subflows"
                        if outcome.kernel.agreement_reading == "linux" else "")
                     if backend == "both" else "")
                  + "; `cache-linux/<kernel release>/`: one folder per kernel run.")
    sections.append(("Files", "", files, _md_to_html(files)))
    refs = "\n".join(f"- **{cite}**: {text}" for cite, text in REFERENCES)
    sections.append(("References", "", refs, _md_to_html(refs)))

    title = "pathpool reproduce: the papers' experiments beside the published numbers"
    toc = "\n".join(f"- [{t}](#{_anchor(t + ' ' + k)})" + (f" (`{k}`)" if k else "") for t, k, _, _ in sections)
    md = [f"# {title}", "", head, "", tolerance_text(), "", "## Contents", "", toc, ""]
    hb = [_md_to_html(head), _md_to_html(tolerance_text()), "<h2>Contents</h2>", _md_to_html(toc)]
    for t, k, md_body, html_body in sections:
        a = _anchor(t + " " + k)
        md += [f'<a id="{a}"></a>', "", f"## {t}" + (f" (`{k}`)" if k else ""), "", md_body, ""]
        hb += [f"<h2 id='{a}'>{html.escape(t)}" + (f" <code>{k}</code>" if k else "") + "</h2>", html_body]
    style = ("body{font-family:sans-serif;max-width:1100px;margin:auto;padding:1em}table{border-collapse:collapse;"
             "margin:0.5em 0}td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px}.ok{background:#d9f2d9}"
             ".mid{background:#fff2cc}.bad{background:#f8d0d0}.und{background:#e6e6e6}img{max-width:100%}figcaption{font-size:12px;color:#444}")
    page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>pathpool reproduce</title>"
            f"<style>{style}</style></head><body><h1>{html.escape(title)}</h1>" + "\n".join(hb) + "</body></html>")
    atomic_write_text(outcome.out / "index.html", page, mkdir=True)
    atomic_write_text(outcome.out / "README.md", "\n".join(md), mkdir=True)
