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

Every job's scenario is the validated base plus ``--set`` overrides (``FIELD=VALUE``, and
``~FIELD`` to remove a key or a link), applied and validated by the simulator
(:func:`pathpool.sim.scenario.load_scenario`); what the overrides need to know (a flow's paths,
a link's rate) is read from the validated scenario (:attr:`Scenario.spec`), never from the TOML.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pathpool.sim.scenario import (
    DEFAULTS,
    Scenario,
    flow_entries,
    load_scenario,
    override,
    quantity,
)
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
    "papers": "delayed ACKs, multipath one step per ACK (v0.95), TCP per segment on Linux 4.9 (RSF) and per ACK on "
             "Linux 3.11 (Balia, Khalili), RSF per ACK",
    "papers-rsf-bytes": "as papers, RSF per acknowledged segment",
}

#: ``--recovery-reading`` values and what each means (the report prints the chosen one).
RECOVERY_READINGS: dict[str, str] = {
    "rfc6675": "RFC 6675 SACK recovery, DupThresh 3, no tail loss probe",
    "linux": "Linux's RACK-TLP loss detection and PRR (Linux >= 4.18 defaults)",
}

#: Algorithms the RSF paper introduced; the ``papers`` readings count them separately.
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
    ack_reading : {"quickack", "linux", "papers", "papers-rsf-bytes"}
        How receivers acknowledge and how windows count what an ACK covers (see
        :data:`ACK_READINGS`). ``quickack`` (default): an ACK per segment, so counting does not
        matter. ``linux``: delayed ACKs (Linux's default), every flow grows per acknowledged
        segment (Linux >= 4.0 ``tcp_cong_avoid_ai(tp, w, acked)``, RFC 6356). ``papers``: delayed
        ACKs, multipath algorithms one step per ACK as the papers' out-of-tree MPTCP kernels
        (v0.88-v0.95 ``mptcp_ccc_cong_avoid``); single-path TCP per acknowledged segment in the
        RSF test bed (Linux 4.9) and one step per ACK in Balia's and Khalili's (Linux 3.11,
        before the stretch-ACK counting of Linux 4.0); RSF-DB/LB per ACK.
        ``papers-rsf-bytes``: as ``papers`` but RSF-DB/LB per acknowledged segment (the paper
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
    base : Scenario
        The validated scenario without ``[reproduce]`` (``base.spec``: SI units, defaults filled).
    spec : dict
        The ``[reproduce]`` table.
    """

    key: str
    path: Path
    base: Scenario
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

    def choices(self, algorithm: str, x: float = math.nan) -> list[str]:
        """The overrides that put ``algorithm`` on the swept flows and the swept value in place."""
        out: list[str] = []
        chosen = set(self.spec.get("flows", []))
        params = self.spec.get("params", {})
        for i, fl in flow_entries(self.base.spec):
            if _entry_name(self.base.spec, i) not in chosen:
                continue
            at = f"flows.{i}"
            if algorithm == SINGLE_PATH:
                out += [override(f"{at}.kind", "tcp"), override(f"{at}.algorithm", "reno")]
                if "paths" in fl["written"]:
                    out += [f"~{at}.paths", override(f"{at}.path", fl["paths"][0])]
                out += [f"~{at}.{k}" for k in ("scheduler", "params") if k in fl["written"]]
            else:
                out.append(override(f"{at}.algorithm", algorithm))
                if algorithm in params:
                    out.append(override(f"{at}.params", params[algorithm]))
                elif "params" in fl["written"]:
                    out.append(f"~{at}.params")
        if self.sweep and not math.isnan(x):
            v = int(x) if float(x).is_integer() else x
            text = self.sweep.get("format", "{}").format(v)
            out += [override(target, text) for target in self.sweep["set"]]
        return out

    def scenario(
        self, algorithm: str, x: float = math.nan, options: Options = Options(), overrides: Sequence[str] = ()
    ) -> Scenario:
        """The validated scenario for one algorithm and one swept value, readings applied, then
        ``overrides`` (``FIELD=VALUE`` or ``~FIELD``, as ``pathpool run --set``)."""
        first = self.choices(algorithm, x)
        chosen = load_scenario(self.base, first) if first else self.base
        return load_scenario(self.base, [*first, *_readings(chosen.spec, self.paper, options), *overrides])

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


def _entry_name(spec: dict, index: int) -> str:
    """The ``name`` an entry is written with (``count = n`` expands it to ``name-0`` ...)."""
    flows = [fl for fl in spec["flows"] if fl["index"] == index]
    name = flows[0]["name"]
    return name.rsplit("-", 1)[0] if len(flows) > 1 else name


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


def _readings(spec: dict, paper: str, o: Options) -> list[str]:
    """The overrides of the readings in ``o`` for a validated scenario of ``paper``."""
    out: list[str] = []
    links = spec["links"]
    if paper == "rsf":
        if o.delay_reading == "one-way":
            for i, p in enumerate(spec["paths"]):
                # ~ack_delay: the simulator's default, the forward delay again. The validated
                # scenario fills that default in, so a written ack_delay is one that differs
                # from it (an equal one written changes nothing and may stay).
                fwd = sum(_ns(ln["delay_s"]) for ln in links if ln["name"] in p["links"])
                if p["ack_delay_s"] is not None and _ns(p["ack_delay_s"]) != fwd:
                    out.append(f"~paths.{i}.ack_delay")
        if o.buffer_reading == "bdp":
            rtt_factor = 2.0 if o.delay_reading == "one-way" else 1.0
            for i, ln in enumerate(links):
                bdp = float(ln["rate_bps"]) * ln["delay_s"] * rtt_factor / (1500 * 8)
                out.append(override(f"links.{i}.buffer", max(10, math.ceil(bdp))))
    single = len(links) == 2 and all(len(p["links"]) == 1 for p in spec["paths"])
    if paper == "balia" and o.balia_reading == "single-bottleneck" and single:
        total = sum(float(ln["rate_bps"]) for ln in links)
        out.append(override("links.0.rate", f"{total / 1e6:g}Mbps"))
        out += [override(f"paths.{i}.links", [links[0]["name"]]) for i in range(len(spec["paths"]))]
        out.append("~links.1")
    if paper == "khalili" and o.khalili_reading == "uncapped" and any(ln["name"] == "access" for ln in links):
        out.append("~links.access")
        for i, p in enumerate(spec["paths"]):
            if "access" in p["links"]:
                out.append(override(f"paths.{i}.links", [n for n in p["links"] if n != "access"]))
    if o.ack_reading != "quickack":  # quickack: the files' own setting, an ACK per segment
        for i, fl in flow_entries(spec):
            if fl["kind"] != "rate":
                counting = "bytes" if o.ack_reading == "linux" else _counting(fl, paper, o.ack_reading)
                out += [override(f"flows.{i}.delayed_ack", True), override(f"flows.{i}.counting", counting)]
    if o.recovery_reading != "rfc6675":  # rfc6675: the files' own setting
        for i, fl in flow_entries(spec):
            if fl["kind"] != "rate":
                out.append(override(f"flows.{i}.recovery", o.recovery_reading))
    if o.time_scale != 1.0:
        out.append(override("duration", spec["duration_s"] * o.time_scale))
        for i, fl in flow_entries(spec):
            out += [override(f"flows.{i}.{k}", fl[f"{k}_s"] * o.time_scale) for k in ("start", "stop")
                    if k in fl["written"]]
    if o.size_scale != 1.0:
        for i, fl in flow_entries(spec):
            if "size" in fl["written"]:
                out.append(override(f"flows.{i}.size", max(DEFAULTS["mss"], int(fl["size_bytes"] * o.size_scale))))
    return out


def _counting(flow: dict, paper: str, reading: str) -> str:
    """``bytes`` or ``acks`` for one validated flow under a ``papers*`` reading (see :class:`Options`)."""
    algorithm = flow["algorithm"]
    if flow["kind"] == "tcp" and algorithm in ("reno", "cubic"):
        # Regular TCP: Linux 4.9 (RSF's v0.93 test bed) counts segments; Linux 3.11 (Balia's
        # v0.88) still took one step per ACK.
        return "bytes" if paper == "rsf" else "acks"
    if algorithm in _RSF_ALGORITHMS:
        return "bytes" if reading == "papers-rsf-bytes" else "acks"
    return "acks"


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
    for field in ("paper", "experiment", "metric", "algorithms"):
        if field not in spec:
            raise ValueError(f"{path}: reproduce.{field} is required")
    if spec["paper"] not in PAPERS:
        raise ValueError(f"{path}: reproduce.paper = {spec['paper']!r} (allowed: {', '.join(PAPERS)})")
    return Experiment(key=f"{spec['paper']}/{spec['experiment']}", path=path, base=sc, spec=spec)


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
