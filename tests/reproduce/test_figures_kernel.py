"""Kernel bars in the report figures, drawn from a small synthetic result set (no root, no run):
the simulator and the kernel side by side where both ran, the simulator alone where the kernel
did not, each series with its n, and no legend entry for a series that is not drawn."""

from __future__ import annotations

import math
import struct
import types

import numpy as np
import pandas as pd
import pytest
from matplotlib.patches import Rectangle
from pathpool.reproduce.figures import _bars, draw_all

ALGS = ["lia", "olia", "rsf-db"]


def _comparison(kernel: bool) -> pd.DataFrame:
    rows = []
    for s, paper in ((2, [0.88, 0.98, 1.98]), (4, [1.88, 1.88, 2.89])):
        for i, (a, p) in enumerate(zip(ALGS, paper)):
            m = 0.5 + s * 0.1 + i * 0.2
            rows.append({"table": f"rsf/table2_s{s}", "title": f"scenario {s}", "group": f"group {s}",
                         "algorithm": a, "metric": "throughput_mbps", "paper": p, "mean": m, "lo": m - 0.01,
                         "hi": m + 0.01, "n": 30})
    c = pd.DataFrame(rows)
    if kernel:
        # The kernel ran scenario 2 only, with 3 repetitions; scenario 4 is "not run on the kernel".
        ran = c["table"] == "rsf/table2_s2"
        c["linux_mean"] = np.where(ran, c["mean"] * 0.8, np.nan)
        c["linux_lo"] = c["linux_mean"] - 0.05
        c["linux_hi"] = c["linux_mean"] + 0.05
        c["linux_n"] = np.where(ran, 3, 0)
    return c


def _summary(n: int, scale: float) -> pd.DataFrame:
    return pd.DataFrame([{"experiment": "rsf/fig2", "algorithm": a, "x": x, "metric": "throughput_mbps",
                          "mean": scale * (1 + i + x / 10), "lo": scale * (0.9 + i + x / 10),
                          "hi": scale * (1.1 + i + x / 10), "n": n}
                         for i, a in enumerate(ALGS) for x in ((4.0,) if n == 3 else (1.0, 4.0, 8.0))])


def _outcome(tmp_path, kernel: bool):
    exps = [types.SimpleNamespace(key=k) for k in ("rsf/table2_s2", "rsf/table2_s4", "rsf/fig2")]
    ks = types.SimpleNamespace(summary=_summary(3, 0.8)) if kernel else None
    return types.SimpleNamespace(out=tmp_path, experiments=exps, seeds=[1], summary=_summary(30, 1.0),
                                 comparison=_comparison(kernel), tables={"series": pd.DataFrame()}, kernel=ks)


def _bar_heights(ax, hatch: str | None) -> list[float]:
    return [round(p.get_height(), 9) for p in ax.patches if isinstance(p, Rectangle) and p.get_hatch() == hatch]


@pytest.fixture(autouse=True)
def _close_figures():
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


@pytest.mark.parametrize("kernel", [True, False])
def test_table2_figure_with_and_without_the_kernel(tmp_path, kernel, monkeypatch):
    import matplotlib.pyplot as plt
    from pathpool.reproduce import figures

    drawn = {}
    real = figures._save

    def keep(fig, outdir, name):
        drawn[name] = fig
        monkeypatch.setattr(plt, "close", lambda *_: None)  # keep the figure open to inspect it
        return real(fig, outdir, name)

    monkeypatch.setattr(figures, "_save", keep)
    out = draw_all(_outcome(tmp_path, kernel))
    names = [n for n, _, _ in out]
    assert names == ["rsf_table2", "rsf_fig2"]
    captions = {n: c for n, c, _ in out}
    assert ("Linux kernel ran" in captions["rsf_table2"]) is kernel

    fig = drawn["rsf_table2"]
    labels = [t.get_text() for t in fig.axes[-1].get_legend().get_texts()]
    c = _comparison(kernel)
    s2, s4 = fig.axes[0], fig.axes[1]
    if kernel:
        assert labels == ["simulator (95% CI, n=30)", "Linux kernel (95% CI, n=3)", "paper"]
        # Scenario 2: the kernel's three bars are its means; scenario 4: none (not run there).
        k2 = c[c["table"] == "rsf/table2_s2"]["linux_mean"].round(9).tolist()
        assert _bar_heights(s2, "..") == k2
        assert _bar_heights(s4, "..") == []
    else:
        assert labels == ["ours (95% CI, n=30)", "paper"]
        assert _bar_heights(s2, "..") == [] and _bar_heights(s4, "..") == []
    # The simulator's bars and the paper's are the comparison's numbers in both cases.
    assert _bar_heights(s2, None) == c[c["table"] == "rsf/table2_s2"]["mean"].round(9).tolist()
    assert _bar_heights(s4, "//") == c[c["table"] == "rsf/table2_s4"]["paper"].round(9).tolist()

    sweep = [t.get_text() for t in drawn["rsf_fig2"].axes[0].get_legend().get_texts()]
    assert ("lia (Linux kernel, n=3)" in sweep) is kernel
    assert ("lia (simulator, n=30)" if kernel else "lia (ours, n=30)") in sweep

    for name in names:  # vector and 200+ dpi raster
        assert (tmp_path / "figures" / f"{name}.pdf").read_bytes().startswith(b"%PDF")
        data = (tmp_path / "figures" / f"{name}.png").read_bytes()
        i = data.index(b"pHYs")
        assert struct.unpack(">I", data[i + 4 : i + 8])[0] * 0.0254 >= 199.5


def test_bars_draw_the_kernel_only_where_it_ran_and_no_paper_entry_without_a_value():
    rows = [("a", "lia", 1.0, 0.9, 1.1, math.nan), ("b", "olia", 2.0, 1.9, 2.1, math.nan)]
    fig = _bars(rows, "y", "t", kernel=[(0.7, 0.6, 0.8, 3), (math.nan,) * 4], n=[30, 30])
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["simulator (95% CI, n=30)", "Linux kernel (95% CI, n=3)"]
    assert _bar_heights(ax, "..") == [0.7]
    assert _bar_heights(ax, "//") == []
    # The kernel absent everywhere: the simulator alone, no legend at all.
    fig = _bars(rows, "y", "t", kernel=[(math.nan,) * 4] * 2, n=[30, 30])
    assert fig.axes[0].get_legend() is None


def _balia_outcome(tmp_path, kernel: bool):
    """Balia Table V and Fig. 3 (bar figures and first-seed traces), with or without kernel runs."""
    algs = ["balia", "lia"]
    exps = [types.SimpleNamespace(key="balia/table5", algorithms=algs, spec={"sp_window": [40.0, 80.0]}),
            types.SimpleNamespace(key="balia/fig3", algorithms=algs)]

    def summary(n):
        return pd.DataFrame([{"experiment": e, "algorithm": a, "x": math.nan, "metric": m, "mean": 1.0 + i,
                              "lo": 0.9 + i, "hi": 1.1 + i, "n": n}
                             for e, ms in (("balia/table5", ("recovery_s", "sptcp_mbps")),
                                           ("balia/fig3", ("window_cv",)))
                             for m in ms for i, a in enumerate(algs + ["tcp"] if e == "balia/fig3" else algs)])

    series = pd.DataFrame([{"experiment": e, "run_algorithm": a, "seed": 1, "time_s": t, "entity": "subflow",
                            "id": i, "metric": "cwnd", "value": 10.0 + t}
                           for e, runs in (("balia/table5", [(a, "mp/1") for a in algs]),
                                           ("balia/fig3", [("balia", "mp/0"), ("balia", "mp/1"), ("tcp", "mp/0")]))
                           for a, i in runs for t in (0.0, 1.0, 2.0)])
    ks = types.SimpleNamespace(summary=summary(3)) if kernel else None
    return types.SimpleNamespace(out=tmp_path, experiments=exps, seeds=[1], summary=summary(30),
                                 comparison=pd.DataFrame(columns=["table"]), tables={"series": series},
                                 kernel=ks, options=types.SimpleNamespace(time_scale=1.0))


@pytest.mark.parametrize("kernel", [True, False])
def test_every_balia_caption_says_what_ran_where(tmp_path, kernel):
    """Table V's and Fig. 3's bar figures draw the kernel's bars, so their captions carry the
    kernel sentence; their first-seed traces are the simulator's, and say so, in a report with
    kernel runs. Without kernel runs neither sentence appears."""
    captions = {n: c for n, c, _ in draw_all(_balia_outcome(tmp_path, kernel))}
    assert sorted(captions) == ["balia_fig3", "balia_fig3_cv", "balia_fig4_table5", "balia_table5_recovery_s",
                                "balia_table5_sptcp_mbps"]
    bars = {"balia_fig3_cv", "balia_table5_recovery_s", "balia_table5_sptcp_mbps"}
    for name, cap in captions.items():
        assert ("Where the Linux kernel ran" in cap) is (kernel and name in bars), name
        assert ("Simulator only" in cap) is (kernel and name not in bars), name
