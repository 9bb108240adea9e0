"""Results of a run: pandas DataFrames in memory, Parquet + CSV + JSON on disk.

Files are byte-for-byte deterministic for a given scenario text, seed list and environment:
column order and Arrow types come from :mod:`pathpool.sim.schema`, rows are in seed order and
then in the simulator's (deterministic) order, Parquet files carry no pandas metadata and no
timestamps, floats are written as the shortest text that reads back to the same double. The only
non-deterministic quantity, wall-clock time, goes to ``timing.json`` and nowhere else.

A result directory is one unit: it is built in a hidden sibling directory and swapped in whole
(:func:`pathpool.atomic.atomic_directory`), so it holds the old complete set or the new complete
set, whatever kills the writer when. ``manifest.json`` lists every deterministic file with its
size and SHA-256, and ``timing.json`` names the manifest's SHA-256; :func:`read_results` checks
both and refuses a set whose files do not belong together.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pathpool.atomic import atomic_directory, only
from pathpool.errors import ResultSetError, SimulationError
from pathpool.manifest import sha256_file
from pathpool.sim.scenario import Scenario
from pathpool.sim.schema import arrow_schema, column_names

__all__ = ["RESULT_FILES", "TABLE_NAMES", "Results", "is_result_set", "jain_index", "json_value", "read_results"]

#: Tables written as both Parquet and CSV, in writing order.
TABLE_NAMES: tuple[str, ...] = ("flows", "subflows", "links", "series")

#: Every file :meth:`Results.write` produces, in writing order. All but ``timing.json`` are
#: deterministic.
RESULT_FILES: tuple[str, ...] = (
    *(f"{t}.{ext}" for t in TABLE_NAMES for ext in ("parquet", "csv")),
    "scenario.toml",
    "summary.json",
    "manifest.json",
    "timing.json",
)

#: Format tag of ``manifest.json``; a reader refuses other formats.
MANIFEST_FORMAT = "pathpool result set 1"


def _result_entry(p: Path) -> bool:
    from pathpool.plot import is_plots_folder

    return p.name in RESULT_FILES or (p.name == "plots" and is_plots_folder(p))


#: True if a directory holds nothing but result files (of any pathpool version), the figures
#: ``pathpool plot`` draws of them (``plots/``) and hidden temporaries: such a directory may be
#: replaced whole by :meth:`Results.write` (its old figures go with its old results).
is_result_set = only(_result_entry)


def jain_index(values: Sequence[float] | np.ndarray) -> float:
    """Jain's fairness index ``(sum x)^2 / (n * sum x^2)``.

    Jain, Chiu and Hawe, "A quantitative measure of fairness and discrimination for resource
    allocation in shared computer systems", DEC-TR-301, 1984, eq. (1). It is 1 when all ``n``
    values are equal and ``1/n`` when one takes everything. NaN for no values or all zeros.

    Examples
    --------
    >>> from pathpool import jain_index
    >>> jain_index([5.0, 5.0, 5.0])
    1.0
    >>> jain_index([1.0, 0.0, 0.0, 0.0])
    0.25
    >>> jain_index([1.0, 2.0])  # (1 + 2)^2 / (2 * (1 + 4))
    0.9
    """
    x = np.asarray(values, dtype=np.float64)
    sq = float(np.sum(x * x))
    if x.size == 0 or sq == 0.0:
        return math.nan
    return float(np.sum(x)) ** 2 / (x.size * sq)


def _check_columns(name: str, got: Sequence[str]) -> None:
    expected = column_names(name)
    if list(got) != expected:
        raise SimulationError(
            f"internal: the core's {name!r} columns {list(got)} do not match the documented "
            f"schema {expected} (pathpool/sim/schema.py)"
        )


def _table(name: str, columns: dict[str, list[Any]]) -> pd.DataFrame:
    _check_columns(name, list(columns))
    return pa.table(columns, schema=arrow_schema(name)).to_pandas()


def _decode(column: Any, field: pa.Field) -> pa.Array:
    """One column as ``_core`` hands it over: a list, ``(numpy dtype, bytes)``, or
    ``("dict", (u32 codes as bytes, labels))``."""
    if isinstance(column, tuple):
        kind, payload = column
        if kind == "dict":
            codes, labels = payload
            indices = pa.array(np.frombuffer(codes, dtype="<u4"))
            return pc.take(pa.array(labels, type=field.type), indices)
        return pa.array(np.frombuffer(payload, dtype=kind), type=field.type)
    return pa.array(column, type=field.type)


def _arrow_from_core(name: str, columns: dict[str, Any]) -> pa.Table:
    _check_columns(name, list(columns))
    schema = arrow_schema(name)
    return pa.Table.from_arrays([_decode(columns[f.name], f) for f in schema], schema=schema)


def json_value(v: Any) -> Any:
    """``v`` in plain JSON types (dicts, lists, int, float, str); NaN/inf (not valid JSON) become
    null.

    Examples
    --------
    >>> json_value({"a": float("nan"), "b": (1, 2.5)})
    {'a': None, 'b': [1, 2.5]}
    """
    if isinstance(v, dict):
        return {k: json_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [json_value(x) for x in v]
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        return f if math.isfinite(f) else None
    return v


def _dumps(obj: Any) -> str:
    return json.dumps(json_value(obj), indent=2, allow_nan=False) + "\n"


def _arrow(name: str, df: pd.DataFrame) -> pa.Table:
    table = pa.Table.from_pandas(df[column_names(name)], schema=arrow_schema(name), preserve_index=False)
    # pandas metadata records the pandas version; dropping it keeps files identical across
    # environments and costs nothing (the Arrow types already say everything).
    return table.replace_schema_metadata(None)


@dataclass
class Results:
    """Everything a run produced: one row per flow / subflow / link per seed.

    Attributes
    ----------
    scenario : Scenario
        The validated scenario that was run.
    seeds : tuple of int
        Seeds, in the order their rows appear.
    flows, subflows, links : pandas.DataFrame
        Tidy tables, columns as documented in :data:`pathpool.sim.schema.TABLES`.
    series : pandas.DataFrame
        Long-form time series: columns seed, time_s, entity, id, metric, value.
    stats : pandas.DataFrame
        Per seed: simulated_s, events, data_packets, wall_s.
    wall_s : float
        Wall-clock seconds of the whole :func:`pathpool.run` call.

    Examples
    --------
    >>> import pathpool
    >>> from pathpool.data import scenario_path
    >>> res = pathpool.run(scenario_path("examples/two_paths"), seeds=[1, 2])
    >>> print(res.flows[["seed", "flow", "kind", "n_subflows"]].to_string(index=False))
     seed  flow  kind  n_subflows
        1 mptcp mptcp           2
        1   tcp   tcp           1
        2 mptcp mptcp           2
        2   tcp   tcp           1
    >>> sorted(res.series["metric"].unique())
    ['cwnd', 'goodput_bps', 'in_flight', 'queue_bytes', 'send_queue_bytes', 'srtt_s']
    """

    scenario: Scenario
    seeds: tuple[int, ...]
    flows: pd.DataFrame
    subflows: pd.DataFrame
    links: pd.DataFrame
    series: pd.DataFrame
    stats: pd.DataFrame
    wall_s: float

    @classmethod
    def from_core(
        cls, scenario: Scenario, seeds: Sequence[int], raws: Sequence[dict[str, Any]], wall_s: float
    ) -> Results:
        """Assemble results from the per-seed dicts of ``_core.run_scenario``, in seed order."""
        tables = {
            name: pa.concat_tables([_arrow_from_core(name, raw[name]) for raw in raws]).combine_chunks().to_pandas()
            for name in TABLE_NAMES
        }
        stats_cols: dict[str, list[Any]] = {c: [] for c in column_names("stats")}
        for raw in raws:
            for c, column in stats_cols.items():
                column.append(raw["stats"][c])
        return cls(
            scenario=scenario,
            seeds=tuple(int(s) for s in seeds),
            stats=_table("stats", stats_cols),
            wall_s=float(wall_s),
            **tables,
        )

    # -- summary ---------------------------------------------------------------------------

    def _summary_deterministic(self) -> dict[str, Any]:
        flows = self.flows
        per_seed = []
        for seed in self.seeds:
            f = flows[flows["seed"] == seed]
            row: dict[str, Any] = {
                "seed": seed,
                "jain_index": jain_index(f["goodput_bps"].to_numpy()),
                "total_goodput_bps": float(f["goodput_bps"].sum()),
                "delivered_bytes": int(f["delivered_bytes"].sum()),
                "sent_packets": int(f["sent_packets"].sum()),
                "retransmitted_packets": int(f["retransmitted_packets"].sum()),
                "lost_packets": int(f["lost_packets"].sum()),
            }
            st = self.stats[self.stats["seed"] == seed]
            for c in column_names("stats"):
                if c not in ("seed", "wall_s"):
                    row[c] = st[c].iloc[0].item() if len(st) else None
            per_seed.append(row)
        per_flow = []
        for flow, g in flows.groupby("flow", sort=False):
            gp = g["goodput_bps"].to_numpy(dtype=np.float64)
            ct = g["completion_time_s"].to_numpy(dtype=np.float64)
            finished = ct[~np.isnan(ct)]
            per_flow.append(
                {
                    "flow": flow,
                    "kind": g["kind"].iloc[0],
                    "algorithm": g["algorithm"].iloc[0],
                    "n_subflows": int(g["n_subflows"].iloc[0]),
                    "seeds": len(g),
                    "goodput_bps_mean": float(gp.mean()),
                    "goodput_bps_std": float(gp.std(ddof=1)) if gp.size > 1 else math.nan,
                    "goodput_bps_min": float(gp.min()),
                    "goodput_bps_max": float(gp.max()),
                    "completed": int(finished.size),
                    "completion_time_s_mean": float(finished.mean()) if finished.size else math.nan,
                }
            )
        totals = {
            k: int(sum(s[k] for s in per_seed))
            for k in ("delivered_bytes", "sent_packets", "retransmitted_packets", "lost_packets", "events", "data_packets")
        }
        return {
            "scenario": self.scenario.name,
            "origin": self.scenario.origin,
            "duration_s": self.scenario.duration_s,
            "seeds": list(self.seeds),
            "per_seed": per_seed,
            "flows": per_flow,
            "totals": totals,
        }

    def _timing(self) -> dict[str, Any]:
        rows = []
        for rec in self.stats.to_dict("records"):
            wall = float(rec["wall_s"])
            rows.append(
                {
                    "seed": int(rec["seed"]),
                    "wall_s": wall,
                    "events_per_s": rec["events"] / wall if wall > 0 else math.nan,
                    "data_packets_per_s": rec["data_packets"] / wall if wall > 0 else math.nan,
                }
            )
        return {"wall_s": self.wall_s, "per_seed": rows}

    @property
    def summary(self) -> dict[str, Any]:
        """Scenario, seeds, per-seed Jain index of flow goodputs and totals, per-flow goodput
        over seeds, totals, and wall-clock time (``wall_s``, ``timing``).

        NaN (e.g. no completed download) is ``None``.
        """
        out = self._summary_deterministic()
        out["wall_s"] = self.wall_s
        out["timing"] = self._timing()
        return json_value(out)

    # -- files -----------------------------------------------------------------------------

    def write(self, directory: str | os.PathLike[str]) -> list[Path]:
        """Write every table as Parquet and CSV, plus ``scenario.toml``, ``summary.json``,
        ``manifest.json`` and ``timing.json``, as one atomic unit.

        Parameters
        ----------
        directory : path-like
            Created if missing. An existing result set there is replaced whole; a directory
            holding other files is refused (it would be deleted), as is one another process is
            writing right now.

        Returns
        -------
        list of pathlib.Path
            The files written, in :data:`RESULT_FILES` order.

        Examples
        --------
        >>> import pathpool, tempfile
        >>> from pathpool.data import scenario_path
        >>> res = pathpool.run(scenario_path("examples/two_paths"), seeds=[1])
        >>> out = tempfile.mkdtemp()
        >>> sorted(p.name for p in res.write(out))[:4]
        ['flows.csv', 'flows.parquet', 'links.csv', 'links.parquet']
        >>> pathpool.read_results(out).flows.equals(res.flows)
        True

        Raises
        ------
        pathpool.errors.OutputError
            ``directory`` is a file, holds other files, is not writable or is being written.
        """
        contents: list[tuple[str, Any]] = []
        for name in TABLE_NAMES:
            df = getattr(self, name)
            table = _arrow(name, df)
            contents.append(
                (
                    f"{name}.parquet",
                    lambda fh, t=table: pq.write_table(t, fh, compression="zstd", write_statistics=True),
                )
            )
            contents.append(
                (
                    f"{name}.csv",
                    lambda fh, d=df, n=name: d[column_names(n)].to_csv(
                        fh, index=False, lineterminator="\n", encoding="utf-8"
                    ),
                )
            )
        contents.append(("scenario.toml", lambda fh: fh.write(self.scenario.text.encode("utf-8"))))
        contents.append(("summary.json", lambda fh: fh.write(_dumps(self._summary_deterministic()).encode())))
        with atomic_directory(directory, is_result_set) as tmp:
            files: dict[str, Any] = {}
            for name, write in contents:
                with open(tmp / name, "wb") as fh:
                    write(fh)
                files[name] = {"bytes": (tmp / name).stat().st_size, "sha256": sha256_file(tmp / name)}
            manifest = _dumps({"format": MANIFEST_FORMAT, "files": files}).encode()
            (tmp / "manifest.json").write_bytes(manifest)
            timing = {**self._timing(), "manifest_sha256": hashlib.sha256(manifest).hexdigest()}
            (tmp / "timing.json").write_bytes(_dumps(timing).encode())
        return [Path(directory) / name for name in RESULT_FILES]


def _check_set(d: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The manifest and timing of result set ``d`` after checking that its files belong together."""
    where = f"{d}: not one complete pathpool result set"
    if not d.is_dir():
        raise ResultSetError(f"{d}: no such result directory")
    try:
        manifest_bytes = (d / "manifest.json").read_bytes()
        manifest = json.loads(manifest_bytes)
        timing = json.loads((d / "timing.json").read_text(encoding="utf-8"))
    except FileNotFoundError as e:
        raise ResultSetError(f"{where}: {Path(e.filename).name} is missing (an interrupted run, or one "
                             "written by an older pathpool: run it again)") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise ResultSetError(f"{where}: manifest.json or timing.json is not valid JSON ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise ResultSetError(f"{where}: manifest.json is not of format {MANIFEST_FORMAT!r}")
    expected = [f for f in RESULT_FILES if f not in ("manifest.json", "timing.json")]
    if list(manifest.get("files", {})) != expected:
        raise ResultSetError(f"{where}: manifest.json lists {list(manifest.get('files', {}))}, expected {expected}")
    for name, meta in manifest["files"].items():
        p = d / name
        if not p.is_file():
            raise ResultSetError(f"{where}: {name} is missing")
        if p.stat().st_size != meta["bytes"] or sha256_file(p) != meta["sha256"]:
            raise ResultSetError(f"{where}: {name} is not the file manifest.json lists (changed or from another run)")
    if timing.get("manifest_sha256") != hashlib.sha256(manifest_bytes).hexdigest():
        raise ResultSetError(f"{where}: timing.json belongs to another run")
    return manifest, timing


def read_results(directory: str | os.PathLike[str]) -> Results:
    """Load what :meth:`Results.write` wrote (from the Parquet files), after checking that the
    files form one complete set.

    Parameters
    ----------
    directory : path-like

    Returns
    -------
    Results

    Raises
    ------
    pathpool.errors.ResultSetError
        A file is missing, differs from what ``manifest.json`` lists, or comes from another run.

    Examples
    --------
    >>> res = read_results("results/example")  # doctest: +SKIP
    >>> res.flows.columns[:3].tolist()  # doctest: +SKIP
    ['seed', 'flow', 'kind']
    """
    d = Path(directory)
    _, timing = _check_set(d)
    summary = json.loads((d / "summary.json").read_text(encoding="utf-8"))
    scenario = Scenario(
        name=summary["scenario"],
        origin=summary["origin"],
        seeds=tuple(summary["seeds"]),
        duration_s=summary["duration_s"],
        text=(d / "scenario.toml").read_text(encoding="utf-8"),
    )
    tables = {name: pq.read_table(d / f"{name}.parquet").to_pandas() for name in TABLE_NAMES}
    wall = {row["seed"]: row["wall_s"] for row in timing["per_seed"]}
    stats = _table(
        "stats",
        {
            c: [wall.get(s["seed"]) if c == "wall_s" else s[c] for s in summary["per_seed"]]
            for c in column_names("stats")
        },
    )
    return Results(scenario=scenario, seeds=scenario.seeds, stats=stats, wall_s=timing["wall_s"], **tables)
