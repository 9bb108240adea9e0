"""``pathpool plot RESULTS_DIR``: the time series and per-flow bars of any results directory.

A results directory is a complete result set: ``pathpool run -o DIR``, ``pathpool sweep -o DIR``,
``pathpool ratecontrol packetsim`` (its ``sim/``), ``reproduce``'s ``results/``. Its
``manifest.json`` is checked first, as :func:`pathpool.read_results` does: a set with a file
missing, changed or from another run is refused in one line. Columns that are neither the
simulator's nor ``seed`` (a sweep's axes, reproduce's tags) are *keys*: the bars get one group
per key combination, and the time series show one run, chosen with ``--seed`` and ``--where
KEY=VALUE`` (default: the first). A folder with more groups than fit one readable figure (a
whole ``reproduce``) is refused with the values to narrow it down with ``--where``.

Writes ``timeseries.png/.pdf`` (cwnd, srtt, link queue, goodput per flow and per subflow; the
title names the scenario, the seed and the keys) and ``flows.png/.pdf`` (goodput per flow and
per subflow: mean over seeds, error bars of one standard deviation). Each flow keeps one colour
in every panel of both figures (its subflows: that colour, one line style or hatch each);
legends sit beside the panels, never over the data. By default the figures go to
``RESULTS_DIR/plots/``, which a result folder may hold: the next run into it replaces the
figures with the results they showed.
"""

from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FIGURES", "MAX_BARS", "is_plots_folder", "plot_results", "read_table", "register"]

# Columns of the simulator's own tables; anything else in a table is a key (sweep axis, tag).
_SERIES_COLUMNS = {"seed", "time_s", "entity", "id", "metric", "value"}
#: Bars per panel at most: more are not readable at page width (narrow with --where).
MAX_BARS = 40
_PANELS = (  # (entity, metric, y label, scale)
    ("subflow", "cwnd", "cwnd (segments)", 1.0),
    ("subflow", "srtt_s", "srtt (ms)", 1e3),
    ("link", "queue_bytes", "queue (kB)", 1e-3),
    ("flow", "goodput_bps", "goodput (Mbit/s)", 1e-6),
    ("subflow", "goodput_bps", "subflow goodput\n(Mbit/s)", 1e-6),
)
#: Line styles of a flow's subflows (and of links), in order.
_STYLES = ("-", "--", ":", "-.")
_HATCHES = ("", "//", "..", "xx", "\\\\")

#: Figure stems ``pathpool plot`` writes (``.png`` and ``.pdf`` each).
FIGURES = ("timeseries", "flows")


def is_plots_folder(p: Path) -> bool:
    """True if ``p`` is a folder of nothing but figures ``pathpool plot`` writes (and hidden
    temporaries): a result folder may hold it and replace it with the results it shows."""
    if not p.is_dir() or p.is_symlink():
        return False
    for f in p.iterdir():
        if f.name.startswith("."):
            continue
        stem, _, fmt = f.name.rpartition(".")
        if fmt not in ("png", "pdf") or not f.is_file() or stem not in FIGURES:
            return False
    return True


def read_table(directory: Path, name: str) -> pd.DataFrame | None:
    """``name.parquet`` (or ``name.csv``) of a results directory; ``None`` if neither exists."""
    import pandas as pd

    for suffix, reader in ((".parquet", pd.read_parquet), (".csv", pd.read_csv)):
        p = directory / f"{name}{suffix}"
        if p.is_file():
            return reader(p)
    return None


def _keys(df: pd.DataFrame, own: set[str]) -> list[str]:
    return [c for c in df.columns if c not in own and c != "seed"]


def _select(df: pd.DataFrame, where: dict[str, str]) -> pd.DataFrame:
    # A key missing from one table (flow in the series) restricts the others only.
    for col, val in where.items():
        if col in df.columns:
            df = df[df[col].astype(str) == val]
    return df


def _save(fig: Any, stem: Path) -> list[Path]:
    from pathpool.atomic import atomic_path

    written = []
    for fmt in ("png", "pdf"):
        target = stem.with_suffix(f".{fmt}")
        atomic_path(target, lambda tmp, fmt=fmt: fig.savefig(tmp, format=fmt, dpi=120, bbox_inches="tight",
                                                               metadata={"CreationDate": None} if fmt == "pdf" else None))
        written.append(target)
    return written


def flow_colours(flows: Any) -> dict[str, Any]:
    """One colour per flow name, in order of first appearance (matplotlib's ``tab10``, then
    ``tab20``): the same flow has the same colour in every panel of every figure.

    Examples
    --------
    >>> c = flow_colours(["mptcp", "tcp", "mptcp"])
    >>> list(c), c["mptcp"] != c["tcp"]
    (['mptcp', 'tcp'], True)
    """
    import matplotlib as mpl

    names = list(dict.fromkeys(str(f) for f in flows))
    cmap = mpl.colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {n: cmap(i % cmap.N) for i, n in enumerate(names)}


def _legend_beside(ax: Any, **kwargs: Any) -> None:
    # Outside the axes, to the right: a legend inside covers lines whatever corner it takes.
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, fontsize=7, frameon=False, **kwargs)


def _style_of(entity: str, ident: str, colours: dict[str, Any], links: list[str]) -> dict[str, Any]:
    """Colour and line style of one series: a flow's colour for the flow and its subflows
    (``FLOW/K``: style K), dark grey with a style each for links."""
    if entity == "link":
        k = links.index(ident) if ident in links else 0
        return {"color": "0.25", "linestyle": _STYLES[k % len(_STYLES)]}
    flow, _, sub = ident.rpartition("/") if entity == "subflow" else (ident, "", "0")
    k = int(sub) if sub.isdigit() else 0
    return {"color": colours.get(flow, "0.5"), "linestyle": _STYLES[k % len(_STYLES)]}


def _one_run(series: pd.DataFrame, seed: int | None, where: dict[str, str]) -> tuple[pd.DataFrame, int, dict]:
    """The time series of the run to draw: the first left by ``seed`` and ``where``."""
    keys = _keys(series, _SERIES_COLUMNS)
    s = _select(series, where)
    if seed is not None:
        s = s[s["seed"] == seed]
    if s.empty:
        seeds = ", ".join(str(v) for v in sorted(series["seed"].unique())[:20])
        raise ValueError(f"no time series left after --seed/--where (seeds with series: {seeds})")
    first = s.iloc[0]
    run_seed = int(first["seed"])
    chosen = {k: first[k] for k in keys}
    s = s[s["seed"] == run_seed]
    for k, v in chosen.items():
        s = s[s[k] == v]
    return s, run_seed, chosen


def _timeseries(run: tuple[pd.DataFrame, int, dict], out: Path, colours: dict[str, Any], name: str) -> list[Path]:
    import matplotlib.pyplot as plt

    s, run_seed, chosen = run
    links = sorted(s.loc[s["entity"] == "link", "id"].unique())
    fig, axes = plt.subplots(len(_PANELS), 1, figsize=(8, 2.0 * len(_PANELS)), sharex=True)
    for ax, (entity, metric, label, scale) in zip(axes, _PANELS, strict=True):
        part = s[(s["entity"] == entity) & (s["metric"] == metric)]
        for ident, g in part.groupby("id", sort=True):
            ax.plot(g["time_s"], g["value"] * scale, lw=1.0, label=str(ident),
                    **_style_of(entity, str(ident), colours, links))
        ax.set_ylabel(label, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3, lw=0.5)
        if len(part):
            _legend_beside(ax)
        else:
            ax.text(0.5, 0.5, f"no {metric} series", transform=ax.transAxes, ha="center", va="center")
    axes[-1].set_xlabel("time (s)")
    # Keys already in the name (constant over the selection) are not repeated; a long title
    # wraps rather than running off the page.
    title = f"{name}: seed {run_seed}" + "".join(f", {k}={_label(v)}" for k, v in chosen.items()
                                                 if _label(v) != "-" and f"{k}={_label(v)}" not in name
                                                 and _label(v) != name)
    title = textwrap.fill(title, 90)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    files = _save(fig, out / "timeseries")
    plt.close(fig)
    return files


_OWN_FLOW = {"flow", "kind", "algorithm", "n_subflows", "start_s", "end_s", "delivered_bytes", "goodput_bps",
             "throughput_bps", "sent_packets", "retransmitted_packets", "lost_packets", "rto_count",
             "completion_time_s", "received_packets", "dropped_packets", "in_flight_packets", "ack_packets",
             "duplicate_segments", "reinjected_segments", "integrity_errors"}


def _too_many(stats: pd.DataFrame, keys: list[str], where: dict[str, str], d: Path) -> ValueError:
    """The refusal of a figure with more bars than are readable: which key to narrow, and its values."""
    varying = [k for k in keys if stats[k].nunique(dropna=False) > 1] or keys
    key = varying[0]
    values = [str(v) for v in stats[key].drop_duplicates()]
    shown = ", ".join(values[:12]) + (f", ... ({len(values)} in all)" if len(values) > 12 else "")
    report = d.parent / "figures"
    pointer = f"; the report's figures are in {report}" if (d.name == "results" and report.is_dir()) else \
        "; or see the report's figures"
    return ValueError(f"{d}: {len(stats)} bars in one panel, more than {MAX_BARS} are not readable: choose with "
                      f"--where {key}=VALUE (allowed: {shown}){pointer}")


def _label(v: Any) -> str:
    import pandas as pd

    if isinstance(v, float):
        return "-" if pd.isna(v) else f"{v:g}"
    return str(v)


def constant_keys(flows: pd.DataFrame, where: dict[str, str]) -> dict[str, str]:
    """Key columns with one value in the selection (they go in the figures' titles)."""
    sel = _select(flows, where)
    return {k: _label(sel[k].iloc[0]) for k in _keys(sel, _OWN_FLOW) if len(sel) and sel[k].nunique(dropna=False) == 1}


def _bar_stats(flows: pd.DataFrame, subflows: pd.DataFrame | None, where: dict[str, str],
               d: Path) -> tuple[list[tuple[str, list[str], pd.DataFrame]], int]:
    """Per panel (flow, subflow): its key columns and the mean, sd and count of goodput per bar;
    and the number of seeds. Raises ValueError when nothing or too much is left."""
    keys = _keys(flows, _OWN_FLOW)
    selected = _select(flows, where)
    if selected.empty:
        col, val = next(iter(where.items()))
        values = ", ".join(sorted(map(str, flows[col].dropna().unique()))) if col in flows.columns else "-"
        raise ValueError(f"--where {col}={val}: no flow rows left (allowed values of {col}: {values})")
    panels = [("flow", selected, ["flow"])]
    if subflows is not None and len(subflows):
        panels.append(("subflow", _select(subflows, where), ["flow", "subflow", "path"]))
    # Keys with one value in the selection label the figure, not every bar; the others become
    # text labels (NaN as "-"), so that groups compare equal and read well.
    varying = [k for k in keys if selected[k].nunique(dropna=False) > 1]
    stats_of = []
    for what, df, ident in panels:
        group_keys = [k for k in varying if k in df.columns]
        df = df.assign(**{k: df[k].map(_label) for k in group_keys})
        group = group_keys + [c for c in ident if c in df.columns]
        stats = df.groupby(group, sort=False, dropna=False)["goodput_bps"].agg(["mean", "std", "count"]).reset_index()
        if len(stats) > MAX_BARS:
            raise _too_many(stats, group_keys or group, where, d)
        stats_of.append((what, group_keys, stats))
    return stats_of, int(selected["seed"].nunique()) if "seed" in selected.columns else 1


def _bars(panels: tuple[list[tuple[str, list[str], pd.DataFrame]], int], out: Path, colours: dict[str, Any],
          name: str) -> list[Path]:
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    stats_of, seeds = panels
    widest = max(len(st) for _, _, st in stats_of)
    fig, axes = plt.subplots(len(stats_of), 1, figsize=(max(6.5, 0.28 * widest + 3), 3.4 * len(stats_of)),
                             squeeze=False)
    for ax, (what, group_keys, stats) in zip(axes[:, 0], stats_of, strict=True):
        # Grouped bars: one group per key combination, in each group one bar per flow (subflow),
        # coloured as the flow is everywhere else.
        combos = list(dict.fromkeys(tuple(r) for r in stats[group_keys].itertuples(index=False))) if group_keys \
            else [()]
        members = list(dict.fromkeys(tuple(r) for r in stats.drop(columns=[*group_keys, "mean", "std", "count"])
                                     .itertuples(index=False)))
        width = 0.8 / max(1, len(members))
        ticks, labels = [], []
        for gi, combo in enumerate(combos):
            rows = stats
            for k, v in zip(group_keys, combo, strict=True):
                rows = rows[rows[k] == v]
            for mi, member in enumerate(members):
                row = rows[[tuple(r) == member for r in rows.drop(columns=[*group_keys, "mean", "std", "count"])
                            .itertuples(index=False)]]
                if row.empty:
                    continue
                x = gi + (mi - (len(members) - 1) / 2) * width
                flow = str(member[0])
                sub = int(member[1]) if what == "subflow" and len(member) > 1 and str(member[1]).isdigit() else 0
                ax.bar(x, row["mean"].iloc[0] / 1e6, width * 0.92, color=colours.get(flow, "0.5"),
                       hatch=_HATCHES[sub % len(_HATCHES)] if what == "subflow" else "", edgecolor="white", lw=0.5)
                if row["count"].iloc[0] > 1:
                    ax.errorbar(x, row["mean"].iloc[0] / 1e6, yerr=row["std"].iloc[0] / 1e6, fmt="none",
                                ecolor="black", elinewidth=0.8, capsize=2)
                if not group_keys:
                    ticks.append(x)
                    labels.append("/".join(str(v) for v in member))
            if group_keys:
                ticks.append(gi)
                labels.append("\n".join(str(v) for v in combo))
        if group_keys:
            # the values stacked under each group, in the order the label names their keys
            ax.set_xlabel("\n".join(group_keys) if len(group_keys) > 1 else group_keys[0], fontsize=8)
        # Upright while the labels fit side by side (about 7 characters per bar group at this
        # width), turned otherwise.
        longest = max((max(len(line) for line in t.split("\n")) for t in labels), default=0)
        rotate = longest * len(labels) > 7 * max(len(combos), 1) * max(1, len(members)) + 40
        ax.set_xticks(ticks, labels, rotation=30 if rotate else 0, ha="right" if rotate else "center",
                      fontsize=6 if len(labels) > 20 else 7)
        ax.set_ylabel("goodput (Mbit/s)", fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(axis="y", alpha=0.3, lw=0.5)
        ax.set_title(f"{name}: goodput per {what}", fontsize=9)
        handles = [Patch(color=colours[f], label=f) for f in dict.fromkeys(str(m[0]) for m in members) if f in colours]
        if what == "subflow":
            subs = sorted({int(m[1]) for m in members if len(m) > 1 and str(m[1]).isdigit()})
            handles += [Patch(facecolor="0.7", hatch=_HATCHES[k % len(_HATCHES)], edgecolor="white",
                              label=f"subflow {k}") for k in subs]
        _legend_beside(ax, handles=handles)
    note = f"bars: mean over {seeds} seed{'s' if seeds != 1 else ''}" + (
        "; error bars: one standard deviation" if seeds > 1 else "")
    fig.text(0.01, 0.0, note, fontsize=7, ha="left", va="top")
    fig.tight_layout()
    files = _save(fig, out / "flows")
    plt.close(fig)
    return files


def _name_of(d: Path, flows: pd.DataFrame) -> str:
    """What the figures' titles call the results: the scenario (a run, a sweep's base), or
    the experiment(s) of a reproduce folder."""
    try:
        summary = json.loads((d / "summary.json").read_text(encoding="utf-8"))
        if isinstance(summary, dict) and summary.get("scenario"):
            return str(summary["scenario"])
    except (OSError, ValueError):
        pass
    try:
        grid = json.loads((d / "grid.json").read_text(encoding="utf-8"))
        return f"sweep of {Path(str(grid['scenario'])).stem}"
    except (OSError, ValueError, KeyError, TypeError):
        pass
    if "experiment" in flows.columns and flows["experiment"].nunique() == 1:
        return str(flows["experiment"].iloc[0])
    return d.name


def plot_results(directory: str | Path, out: str | Path | None = None, *, seed: int | None = None,
                 where: dict[str, str] | None = None) -> list[Path]:
    """Draw the time series and per-flow bars of a results directory, as PNG and PDF.

    Parameters
    ----------
    directory : path
        A complete result set (its ``manifest.json`` is checked) holding ``flows`` and
        optionally ``subflows`` and ``series`` tables.
    out : path, optional
        Where the figures go (default ``DIRECTORY/plots``, which the next run into
        ``DIRECTORY`` replaces along with the results).
    seed : int, optional
        The run whose time series are drawn (default: the first).
    where : dict of str to str, optional
        Key column -> value, restricting both figures (e.g. a sweep axis).

    Returns
    -------
    list of pathlib.Path
        The files written.

    Raises
    ------
    FileNotFoundError
        ``directory`` has no flows table.
    pathpool.errors.ResultSetError
        ``directory`` is not one complete result set (manifest missing, a file changed, missing
        or from another run).
    ValueError
        ``where`` names an unknown column, nothing is left to plot, or more bars than are
        readable are left (the message names the key and values to choose with ``where``).

    Examples
    --------
    >>> import pathpool
    >>> pathpool.run("scenarios/examples/two_paths.toml", seeds=[1]).write("out/ex")  # doctest: +SKIP
    >>> [p.name for p in plot_results("out/ex")]  # doctest: +SKIP
    ['timeseries.png', 'timeseries.pdf', 'flows.png', 'flows.pdf']
    """
    import matplotlib

    from pathpool.manifest import check_table_set

    matplotlib.use("Agg")
    d = Path(directory)
    if d.is_dir() and read_table(d, "flows") is None and not (d / "manifest.json").exists():
        raise FileNotFoundError(f"{d}: no flows.parquet or flows.csv; not a pathpool results directory")
    check_table_set(d)
    flows = read_table(d, "flows")
    if flows is None:
        raise FileNotFoundError(f"{d}: no flows.parquet or flows.csv; not a pathpool results directory")
    where = where or {}
    series = read_table(d, "series")
    known = set(flows.columns) | (set(series.columns) if series is not None else set())
    for col, val in where.items():
        if col not in known:
            raise ValueError(f"--where {col}={val}: no column {col!r} (allowed: {', '.join(sorted(known))})")
    subflows = read_table(d, "subflows")
    colours = flow_colours(flows["flow"]) if "flow" in flows.columns else {}
    name = _name_of(d, _select(flows, where))
    fixed = {k: v for k, v in constant_keys(flows, where).items() if v != name and v != "-"}
    if fixed:
        name += " (" + ", ".join(f"{k}={v}" for k, v in fixed.items()) + ")"
    # Everything is checked before the folder is made: a refused plot leaves nothing behind.
    bars = _bar_stats(flows, subflows, where, d)
    run = None
    if series is not None and len(series):
        try:
            run = _one_run(series, seed, where)
            drawn = {(e, m) for e, m, _, _ in _PANELS}
            if not any(pair in drawn for pair in zip(run[0]["entity"], run[0]["metric"], strict=True)):
                run = None  # this run sampled nothing the panels show: no empty figure
        except ValueError:
            # Only some runs record time series (reproduce's trace runs): bars alone for a
            # selection without any, unless a seed was asked for.
            if seed is not None or not any(k in series.columns for k in where):
                raise
    out = Path(out) if out is not None else d / "plots"
    out.mkdir(parents=True, exist_ok=True)
    files = []
    if run is not None:
        files += _timeseries(run, out, colours, name)
    files += _bars(bars, out, colours, name)
    return files


def _where(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"{text!r}: expected KEY=VALUE")
    k, v = text.split("=", 1)
    return k.strip(), v.strip()


def _cmd_plot(args: argparse.Namespace) -> int:
    from pathpool.cliutil import fail

    try:
        files = plot_results(args.results, args.output, seed=args.seed, where=dict(args.where))
    except (FileNotFoundError, ValueError) as e:
        return fail(f"pathpool plot: {e}")
    for f in files:
        print(f)
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``pathpool plot``."""
    from pathpool.cliutil import add_out

    p = subparsers.add_parser("plot", description=__doc__.split("\n\n")[1].replace("\n", " "))
    p.add_argument("results", metavar="RESULTS_DIR", help="a results directory (run, sweep, reproduce results/)")
    add_out(p, None, "where the figures go (default: RESULTS_DIR/plots, which the next run into RESULTS_DIR "
            "replaces with its results)")
    p.add_argument("--seed", type=int, default=None, help="the run whose time series are drawn (default: the first)")
    p.add_argument("--where", type=_where, action="append", default=[], metavar="KEY=VALUE",
                   help="keep only rows with this key value (a sweep axis, a tag); repeatable")
    p.set_defaults(func=_cmd_plot)
