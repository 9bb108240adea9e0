"""``pathpool plot RESULTS_DIR``: the time series and per-flow bars of any results directory.

A results directory is anything that holds the simulator's tidy tables: ``pathpool run -o DIR``,
``pathpool sweep -o DIR``, ``pathpool ratecontrol packetsim`` (its ``sim/``), ``reproduce``'s
``results/``. Each table is read from Parquet, or CSV when there is no Parquet. Columns that are
neither the simulator's nor ``seed`` (a sweep's axes, reproduce's tags) are *keys*: the bars get
one group per key combination, and the time series show one run, chosen with ``--seed`` and
``--where KEY=VALUE`` (default: the first).

Writes ``timeseries.png/.pdf`` (cwnd, srtt, link queue, goodput per flow and per subflow) and
``flows.png/.pdf`` (goodput per flow and per subflow, mean over seeds with the standard deviation
as error bar).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["plot_results", "read_table", "register"]

# Columns of the simulator's own tables; anything else in a table is a key (sweep axis, tag).
_SERIES_COLUMNS = {"seed", "time_s", "entity", "id", "metric", "value"}
#: Bars per panel at most; a reproduce directory has hundreds of groups (use --where).
MAX_BARS = 80
_PANELS = (  # (entity, metric, y label, scale)
    ("subflow", "cwnd", "cwnd (segments)", 1.0),
    ("subflow", "srtt_s", "srtt (ms)", 1e3),
    ("link", "queue_bytes", "queue (kB)", 1e-3),
    ("flow", "goodput_bps", "goodput (Mbit/s)", 1e-6),
    ("subflow", "goodput_bps", "subflow goodput\n(Mbit/s)", 1e-6),
)


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


def _timeseries(series: pd.DataFrame, seed: int | None, where: dict[str, str], out: Path) -> list[Path]:
    import matplotlib.pyplot as plt

    keys = _keys(series, _SERIES_COLUMNS)
    s = _select(series, where)
    if seed is not None:
        s = s[s["seed"] == seed]
    if s.empty:
        raise ValueError("no time series left after --seed/--where (allowed: values present in series)")
    first = s.iloc[0]
    run_seed = int(first["seed"])
    chosen = {k: first[k] for k in keys}
    s = s[s["seed"] == run_seed]
    for k, v in chosen.items():
        s = s[s[k] == v]
    fig, axes = plt.subplots(len(_PANELS), 1, figsize=(8, 2.2 * len(_PANELS)), sharex=True)
    for ax, (entity, metric, label, scale) in zip(axes, _PANELS):
        part = s[(s["entity"] == entity) & (s["metric"] == metric)]
        for ident, g in part.groupby("id", sort=True):
            ax.plot(g["time_s"], g["value"] * scale, lw=1.0, label=str(ident))
        ax.set_ylabel(label)
        if len(part):
            ax.legend(fontsize=7, loc="upper right", ncol=3)
        else:
            ax.text(0.5, 0.5, f"no {metric} series", transform=ax.transAxes, ha="center", va="center")
    axes[-1].set_xlabel("time (s)")
    title = f"seed {run_seed}" + "".join(f", {k}={v}" for k, v in chosen.items())
    fig.suptitle(title)
    files = _save(fig, out / "timeseries")
    plt.close(fig)
    return files


def _bars(flows: pd.DataFrame, subflows: pd.DataFrame | None, where: dict[str, str], out: Path) -> list[Path]:
    import matplotlib.pyplot as plt
    import numpy as np

    own_flow = {"flow", "kind", "algorithm", "n_subflows", "start_s", "end_s", "delivered_bytes", "goodput_bps",
                "throughput_bps", "sent_packets", "retransmitted_packets", "lost_packets", "rto_count",
                "completion_time_s", "received_packets", "dropped_packets", "in_flight_packets", "ack_packets",
                "duplicate_segments", "reinjected_segments", "integrity_errors"}
    keys = _keys(flows, own_flow)
    selected = _select(flows, where)
    if selected.empty:
        col, val = next(iter(where.items()))
        values = ", ".join(sorted(map(str, flows[col].dropna().unique()))) if col in flows.columns else "-"
        raise ValueError(f"--where {col}={val}: no flow rows left (allowed values of {col}: {values})")
    panels = [("flow", selected, ["flow"])]
    if subflows is not None and len(subflows):
        panels.append(("subflow", _select(subflows, where), ["flow", "subflow", "path"]))
    stats_of = []
    for what, df, ident in panels:
        group = [k for k in keys if k in df.columns] + [c for c in ident if c in df.columns]
        stats = df.groupby(group, sort=False, dropna=False)["goodput_bps"].agg(["mean", "std", "count"]).reset_index()
        stats_of.append((what, group, stats))
    widest = min(max(len(st) for _, _, st in stats_of), MAX_BARS)
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(6.0, 0.25 * widest + 2), 4.5 * len(panels)), squeeze=False)
    for ax, (what, group, stats) in zip(axes[:, 0], stats_of):
        shown = stats.head(MAX_BARS)
        labels = ["/".join(str(v) for v in row) for row in shown[group].itertuples(index=False)]
        x = np.arange(len(shown))
        ax.bar(x, shown["mean"] / 1e6, yerr=shown["std"].fillna(0.0) / 1e6, capsize=2)
        ax.set_xticks(x, labels, rotation=90 if len(labels) > 4 else 0, fontsize=6 if len(labels) > 20 else 8)
        ax.set_ylabel("goodput (Mbit/s)\nmean +- sd over seeds")
        more = f"; first {MAX_BARS} of {len(stats)}, narrow with --where" if len(stats) > MAX_BARS else ""
        ax.set_title(f"per {what} ({'/'.join(group)}){more}", fontsize=9)
    fig.tight_layout()
    files = _save(fig, out / "flows")
    plt.close(fig)
    return files


def plot_results(directory: str | Path, out: str | Path | None = None, *, seed: int | None = None,
                 where: dict[str, str] | None = None) -> list[Path]:
    """Draw the time series and per-flow bars of a results directory, as PNG and PDF.

    Parameters
    ----------
    directory : path
        Holds ``flows`` (required), ``subflows`` and ``series`` tables (Parquet or CSV).
    out : path, optional
        Where the figures go (default ``DIRECTORY/plots``).
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
    ValueError
        ``where`` names an unknown column, or nothing is left to plot.

    Examples
    --------
    >>> import pathpool
    >>> pathpool.run("scenarios/examples/two_paths.toml", seeds=[1]).write("out/ex")  # doctest: +SKIP
    >>> [p.name for p in plot_results("out/ex")]  # doctest: +SKIP
    ['timeseries.png', 'timeseries.pdf', 'flows.png', 'flows.pdf']
    """
    import matplotlib

    matplotlib.use("Agg")
    d = Path(directory)
    flows = read_table(d, "flows")
    if flows is None:
        raise FileNotFoundError(f"{d}: no flows.parquet or flows.csv; not a pathpool results directory")
    out = Path(out) if out is not None else d / "plots"
    out.mkdir(parents=True, exist_ok=True)
    where = where or {}
    files = []
    series = read_table(d, "series")
    known = set(flows.columns) | (set(series.columns) if series is not None else set())
    for col, val in where.items():
        if col not in known:
            raise ValueError(f"--where {col}={val}: no column {col!r} (allowed: {', '.join(sorted(known))})")
    if series is not None and len(series):
        files += _timeseries(series, seed, where, out)
    files += _bars(flows, read_table(d, "subflows"), where, out)
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
    add_out(p, None, "where the figures go (default: RESULTS_DIR/plots)")
    p.add_argument("--seed", type=int, default=None, help="the run whose time series are drawn (default: the first)")
    p.add_argument("--where", type=_where, action="append", default=[], metavar="KEY=VALUE",
                   help="keep only rows with this key value (a sweep axis, a tag); repeatable")
    p.set_defaults(func=_cmd_plot)
