"""Experiment definitions: scenario files with a ``[reproduce]`` table, expanded into sweep jobs.

Each published experiment is one TOML file under ``scenarios/rsf2020``, ``scenarios/balia2016`` or
``scenarios/khalili``. The file is a plain simulator scenario plus a top-level ``[reproduce]``
table, which belongs to Python: the simulator's validator takes it out and hands it back untyped
(``pathpool.sim.scenario.EXTENSIONS``), so the base scenario is checked, with located errors,
when the experiment is loaded. ``[reproduce]`` says which algorithms to run, on which flows, with which
parameters, which metric to compute, which published CSV to compare with, and optionally one
swept parameter::

    [reproduce]
    paper = "rsf"                      # rsf | balia | khalili
    experiment = "fig4"
    metric = "download"                # see pathpool.reproduce.metrics
    algorithms = ["lia", "rsf-db"]     # "tcp" = the flows become single-path Reno on their first path
    flows = ["conn"]                   # flows whose algorithm is swept
    [reproduce.params]
    rsf-db = { d = 0.1 }
    [reproduce.sweep]
    name = "path2_mbps"
    values = [10, 20]
    set = ["links.1.rate"]             # dotted paths into the scenario, list indices as numbers
    format = "{}Mbps"

Readings the papers leave open are options (:class:`Options`), one flag away on the command line.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pathpool.sim.scenario import DEFAULTS, load_scenario, quantity
from pathpool.sweep import Job

__all__ = [
    "PAPERS",
    "Experiment",
    "Options",
    "build_jobs",
    "load_experiment",
    "load_experiments",
    "parse_bytes",
    "parse_rate",
    "parse_seconds",
    "scenario_root",
]

#: Paper key -> scenario folder.
PAPERS: dict[str, str] = {"rsf": "rsf2020", "balia": "balia2016", "khalili": "khalili"}

#: The pseudo-algorithm meaning "these flows are single-path TCP (Reno) on their first path".
SINGLE_PATH = "tcp"


def scenario_root() -> Path:
    """The shipped ``scenarios/`` folder (package data, the repository's ``scenarios/``)."""
    from pathpool.data import scenarios_dir

    return scenarios_dir()


#: ``--ack-reading`` values and what each means (the report prints the chosen one).
ACK_READINGS: dict[str, str] = {
    "quickack": "an ACK per segment",
    "linux": "delayed ACKs, every flow counts acknowledged segments",
    "seeds": "delayed ACKs, multipath one step per ACK (v0.95), TCP per segment on Linux 4.9 (RSF) and per ACK on "
             "Linux 3.11 (Balia, Khalili), RSF per ACK",
    "seeds-rsf-bytes": "as seeds, RSF per acknowledged segment",
}

#: ``--recovery-reading`` values and what each means (the report prints the chosen one).
RECOVERY_READINGS: dict[str, str] = {
    "rfc6675": "RFC 6675 SACK recovery, DupThresh 3, no tail loss probe",
    "linux": "Linux's RACK-TLP loss detection and PRR (Linux >= 4.18 defaults)",
}

#: Algorithms the RSF paper introduced; the ``seeds`` readings count them separately.
_RSF_ALGORITHMS = ("rsf-db", "rsf-lb")


@dataclasses.dataclass(frozen=True)
class Options:
    """Readings of parameters the papers leave out, and scaling for quick runs.

    Attributes
    ----------
    delay_reading : {"rtt", "one-way"}
        RSF test bed: NetEm's delay on the data direction only (RTT ~= delay, default) or in
        both directions (RTT = 2 x delay).
    buffer_reading : {"netem", "bdp"}
        RSF test bed: NetEm's default 1000-packet queue (default) or one bandwidth-delay product.
    balia_reading : {"two-link", "single-bottleneck"}
        Balia Tables III/V: two 2 Mbps links (default) or the paper's Fig. 1 test network, one
        bottleneck of their summed capacity that every path crosses.
    khalili_reading : {"capped", "uncapped"}
        Khalili's scenario: type-1 users behind a shared 10 Mbps access (default; the slides'
        numbers need it) or with link 1 and link 2 only.
    ack_reading : {"quickack", "linux", "seeds", "seeds-rsf-bytes"}
        How receivers acknowledge and how windows count what an ACK covers (see
        :data:`ACK_READINGS`). ``quickack`` (default): an ACK per segment, so counting does not
        matter. ``linux``: delayed ACKs (Linux's default), every flow grows per acknowledged
        segment (Linux >= 4.0 ``tcp_cong_avoid_ai(tp, w, acked)``, RFC 6356). ``seeds``: delayed
        ACKs, multipath algorithms one step per ACK as the seeds' out-of-tree MPTCP kernels
        (v0.88-v0.95 ``mptcp_ccc_cong_avoid``); single-path TCP per acknowledged segment in the
        RSF test bed (Linux 4.9) and one step per ACK in Balia's and Khalili's (Linux 3.11,
        before the stretch-ACK counting of Linux 4.0); RSF-DB/LB per ACK.
        ``seeds-rsf-bytes``: as ``seeds`` but RSF-DB/LB per acknowledged segment (the paper
        does not say how they counted).
    recovery_reading : {"rfc6675", "linux"}
        Loss recovery of every window-based flow (the scenario field ``recovery``, see
        :data:`RECOVERY_READINGS`). ``rfc6675`` (default): the scenario files' own setting,
        RFC 6675 SACK recovery. ``linux``: RACK-TLP and PRR as Linux >= 4.18 runs them.
    time_scale : float
        Multiplies durations, start/stop times and measurement windows (tests use < 1).
    size_scale : float
        Multiplies file sizes (tests use < 1).
    """

    delay_reading: str = "rtt"
    buffer_reading: str = "netem"
    balia_reading: str = "two-link"
    khalili_reading: str = "capped"
    ack_reading: str = "quickack"
    recovery_reading: str = "rfc6675"
    time_scale: float = 1.0
    size_scale: float = 1.0

    def __post_init__(self) -> None:
        allowed = {
            "delay_reading": ("rtt", "one-way"),
            "buffer_reading": ("netem", "bdp"),
            "balia_reading": ("two-link", "single-bottleneck"),
            "khalili_reading": ("capped", "uncapped"),
            "ack_reading": tuple(ACK_READINGS),
            "recovery_reading": tuple(RECOVERY_READINGS),
        }
        for name, values in allowed.items():
            if getattr(self, name) not in values:
                raise ValueError(f"{name} = {getattr(self, name)!r} is not allowed (allowed: {', '.join(values)})")
        if not (self.time_scale > 0 and self.size_scale > 0):
            raise ValueError("time_scale and size_scale must be > 0")


# --- units: the simulator's own rules, through the bindings (crates/pathpool-sim/src/units.rs) ---


def parse_seconds(value: Any) -> float:
    """``"150ms"`` -> 0.15; a plain number is seconds."""
    return quantity("time", value)


def parse_bytes(value: Any) -> float:
    """``"4MB"`` -> 4e6 (decimal prefixes; KiB/MiB binary); a plain number is bytes."""
    return quantity("size", value)


def parse_rate(value: Any) -> float:
    """``"10Mbps"`` -> 1e7 bits/s; a plain number is bits/s."""
    return quantity("rate", value)


def _set_path(d: Any, dotted: str, value: Any) -> None:
    keys = dotted.split(".")
    cur = d
    for k in keys[:-1]:
        cur = cur[int(k)] if isinstance(cur, list) else cur[k]
    last = keys[-1]
    if isinstance(cur, list):
        cur[int(last)] = value
    else:
        cur[last] = value


# --- experiments --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Experiment:
    """One published experiment: a base scenario and its ``[reproduce]`` table.

    Attributes
    ----------
    key : str
        ``"<paper>/<experiment>"``, e.g. ``"rsf/fig4"``.
    path : Path
        The scenario file.
    base : dict
        The scenario without ``[reproduce]`` (what the simulator accepts).
    spec : dict
        The ``[reproduce]`` table.
    """

    key: str
    path: Path
    base: dict
    spec: dict

    @property
    def paper(self) -> str:
        return self.spec["paper"]

    @property
    def name(self) -> str:
        return self.spec["experiment"]

    @property
    def title(self) -> str:
        return self.spec.get("title", self.name)

    @property
    def metric(self) -> str:
        return self.spec["metric"]

    @property
    def algorithms(self) -> list[str]:
        return list(self.spec["algorithms"])

    @property
    def sweep(self) -> dict | None:
        return self.spec.get("sweep")

    def xs(self) -> list[float]:
        """Swept values (``[nan]`` when nothing is swept)."""
        return [float(v) for v in self.sweep["values"]] if self.sweep else [math.nan]

    def scenario(self, algorithm: str, x: float = math.nan, options: Options = Options()) -> dict:
        """The simulator scenario for one algorithm and one swept value, readings applied."""
        sc = copy.deepcopy(self.base)
        flows = set(self.spec.get("flows", []))
        params = self.spec.get("params", {})
        for fl in sc["flows"]:
            if fl["name"] not in flows:
                continue
            if algorithm == SINGLE_PATH:
                fl["kind"] = "tcp"
                fl["path"] = fl.pop("paths")[0] if "paths" in fl else fl["path"]
                fl["algorithm"] = "reno"
                fl.pop("scheduler", None)
                fl.pop("params", None)
            else:
                fl["algorithm"] = algorithm
                if algorithm in params:
                    fl["params"] = dict(params[algorithm])
                else:
                    fl.pop("params", None)
        if self.sweep and not math.isnan(x):
            v = int(x) if float(x).is_integer() else x
            text = self.sweep.get("format", "{}").format(v)
            for target in self.sweep["set"]:
                _set_path(sc, target, text)
        _apply_readings(sc, self.paper, options)
        return sc

    def tags(self, algorithm: str, x: float) -> dict:
        return {"experiment": self.key, "run_algorithm": algorithm, "x": float(x)}

    def jobs(self, seeds: Sequence[int], options: Options = Options()) -> list[Job]:
        """Every (algorithm, swept value, seed) job, in that nesting order."""
        out = []
        for alg in self.algorithms:
            for x in self.xs():
                sc = self.scenario(alg, x, options)
                out.extend(Job(sc, int(s), self.tags(alg, x)) for s in seeds)
        return out


def _apply_readings(sc: dict, paper: str, o: Options) -> None:
    links = {ln["name"]: ln for ln in sc["links"]}
    if paper == "rsf":
        if o.delay_reading == "one-way":
            for p in sc["paths"]:
                p.pop("ack_delay", None)  # the simulator's default: the forward delay again
        if o.buffer_reading == "bdp":
            rtt_factor = 2.0 if o.delay_reading == "one-way" else 1.0
            for ln in sc["links"]:
                bdp = parse_rate(ln["rate"]) * parse_seconds(ln.get("delay", 0)) * rtt_factor / (1500 * 8)
                ln["buffer"] = max(10, math.ceil(bdp))
    if paper == "balia" and o.balia_reading == "single-bottleneck" and len(sc["links"]) == 2:
        first = sc["links"][0]
        if all(len(p["links"]) == 1 for p in sc["paths"]):
            total = sum(parse_rate(ln["rate"]) for ln in sc["links"])
            first["rate"] = f"{total / 1e6:g}Mbps"
            for p in sc["paths"]:
                p["links"] = [first["name"]]
            sc["links"] = [first]
    if paper == "khalili" and o.khalili_reading == "uncapped" and "access" in links:
        sc["links"] = [ln for ln in sc["links"] if ln["name"] != "access"]
        for p in sc["paths"]:
            p["links"] = [n for n in p["links"] if n != "access"]
    _apply_ack_reading(sc, paper, o.ack_reading)
    if o.recovery_reading != "rfc6675":
        for fl in sc["flows"]:
            if fl.get("kind") != "rate":
                fl["recovery"] = o.recovery_reading
    if o.time_scale != 1.0:
        sc["duration"] = parse_seconds(sc["duration"]) * o.time_scale
        for fl in sc["flows"]:
            for k in ("start", "stop"):
                if k in fl:
                    fl[k] = parse_seconds(fl[k]) * o.time_scale
    if o.size_scale != 1.0:
        for fl in sc["flows"]:
            if "size" in fl:
                fl["size"] = max(DEFAULTS["mss"], int(parse_bytes(fl["size"]) * o.size_scale))


def _counting(flow: dict, paper: str, reading: str) -> str:
    """``bytes`` or ``acks`` for one flow under a ``seeds*`` reading (see :class:`Options`)."""
    algorithm = flow.get("algorithm", "reno")
    if flow.get("kind", "tcp") == "tcp" and algorithm in ("reno", "cubic"):
        # Regular TCP: Linux 4.9 (RSF's v0.93 test bed) counts segments; Linux 3.11 (Balia's
        # v0.88) still took one step per ACK.
        return "bytes" if paper == "rsf" else "acks"
    if algorithm in _RSF_ALGORITHMS:
        return "bytes" if reading == "seeds-rsf-bytes" else "acks"
    return "acks"


def _apply_ack_reading(sc: dict, paper: str, reading: str) -> None:
    if reading == "quickack":
        return  # the scenario files' own setting: the simulator's default, an ACK per segment
    for fl in sc["flows"]:
        if fl.get("kind") == "rate":
            continue
        fl["delayed_ack"] = True
        fl["counting"] = "bytes" if reading == "linux" else _counting(fl, paper, reading)


def load_experiment(path: str | Path) -> Experiment:
    """Read one scenario file with a ``[reproduce]`` table.

    Raises
    ------
    ValueError
        If the file has no ``[reproduce]`` table or it lacks a required field (named).
    """
    path = Path(path)
    sc = load_scenario(path)
    spec = sc.extensions.get("reproduce")
    if spec is None:
        raise ValueError(f"{path}: no [reproduce] table")
    # The document the readings and sweeps edit, in the file's own key order (so the scenario
    # text of each job, and the results' scenario.toml, do not depend on how Rust renders
    # TOML); each job is validated again, whole, before it runs.
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    data.pop("reproduce")
    for field in ("paper", "experiment", "metric", "algorithms"):
        if field not in spec:
            raise ValueError(f"{path}: reproduce.{field} is required")
    if spec["paper"] not in PAPERS:
        raise ValueError(f"{path}: reproduce.paper = {spec['paper']!r} (allowed: {', '.join(PAPERS)})")
    return Experiment(key=f"{spec['paper']}/{spec['experiment']}", path=path, base=data, spec=spec)


def load_experiments(papers: Iterable[str], root: str | Path | None = None) -> list[Experiment]:
    """Every experiment of the given papers (``rsf``, ``balia``, ``khalili``), in file-name order."""
    root = Path(root) if root is not None else scenario_root()
    out = []
    for paper in papers:
        if paper not in PAPERS:
            raise ValueError(f"unknown paper {paper!r} (allowed: {', '.join(PAPERS)}, all)")
        for f in sorted((root / PAPERS[paper]).glob("*.toml")):
            out.append(load_experiment(f))
    return out


def build_jobs(experiments: Sequence[Experiment], seeds: Sequence[int], options: Options = Options()) -> list[Job]:
    """All jobs of all experiments, in experiment order."""
    jobs: list[Job] = []
    for e in experiments:
        jobs.extend(e.jobs(seeds, options))
    return jobs
