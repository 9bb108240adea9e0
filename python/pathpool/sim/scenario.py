"""Scenario loading and validation.

The format, its units, ranges and defaults are the simulator's (``crates/pathpool-sim/SCENARIOS.md``)
and exist once, in Rust. :func:`load_scenario` hands the text to the Rust validator and gets back
the whole validated scenario (:attr:`Scenario.spec`): units resolved to SI numbers, defaults
filled, ``count`` expanded. Python code reads that, never the TOML.

Two things in a scenario file belong to Python, not to the simulator, and are registered here:
the top-level tables in :data:`EXTENSIONS` (``[reproduce]``, read by :mod:`pathpool.reproduce`),
which the validator hands back untyped in :attr:`Scenario.extensions`, and the rate-flow
controller labels in :data:`RATE_CONTROLLERS` (:mod:`pathpool.ratecontrol.packetsim`).
"""

from __future__ import annotations

import datetime
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import tomli_w

from pathpool import _core
from pathpool.errors import ScenarioError

__all__ = [
    "DEFAULTS", "EXTENSIONS", "RATE_CONTROLLERS", "Scenario", "ScenarioLike", "flow_entries", "load_scenario", "override",
    "quantity",
]

DICT_ORIGIN = "<dict>"

#: Top-level tables of a scenario file that Python owns; the simulator never sees them.
EXTENSIONS: tuple[str, ...] = ("reproduce",)

#: Labels a rate flow's ``controller`` may carry: the controllers of
#: :mod:`pathpool.ratecontrol.packetsim` (``fixed`` = keep the initial rates).
RATE_CONTROLLERS: tuple[str, ...] = ("fixed", "mptcp", "optimised")

#: The simulator's defaults for omitted fields, SI units (``mss``, ``rcv_buffer_bytes``,
#: ``buffer_packets``, ``send_jitter_s``, ``deadline_s``, ``feedback_interval_s``) and count limits
#: (``max_seeds``, ``max_flows``).
DEFAULTS: dict[str, Any] = dict(_core.defaults())


def _validate(text: str, origin: str, overrides: Sequence[str] = (), allow_large: bool = True) -> dict[str, Any]:
    return _core.validate_scenario(
        text, origin, overrides=list(overrides), extensions=list(EXTENSIONS),
        rate_controllers=list(RATE_CONTROLLERS), allow_large=allow_large,
    )


@dataclass(frozen=True)
class Scenario:
    """A validated scenario.

    Attributes
    ----------
    name : str
        The scenario's ``name`` (a safe slug: it names output directories).
    origin : str
        Where it came from: the file path as given, or ``"<dict>"``.
    seeds : tuple of int
        The seeds the scenario asks for.
    duration_s : float
        Simulated duration, seconds.
    text : str
        The TOML text a run uses, byte for byte: the file's own text, or, after overrides
        (or with a ``[reproduce]`` table taken out), the merged document.
    spec : dict
        The whole validated scenario in SI units, defaults filled: ``name``, ``description``,
        ``duration_s``, ``seeds``, ``metrics_interval_s``; ``links`` (``name``, ``rate_bps``,
        ``delay_s``, ``buffer_packets`` or ``buffer_bytes`` (the other None), ``loss``,
        ``gilbert`` (``p``, ``r``, ``loss_good``, ``loss_bad``) or None, ``reorder``
        (``probability``, ``extra_delay_s``) or None); ``paths`` (``name``, ``links``,
        ``ack_links`` or None, ``ack_delay_s`` or None: the default return delay is filled in);
        ``flows``, ``count`` expanded (``name``, ``index`` of its ``[[flows]]`` entry, ``kind``,
        ``paths`` (names), ``algorithm``, ``params``, ``scheduler``, ``app``, ``size_bytes``,
        ``start_s``, ``stop_s``, ``start_jitter_s``, ``send_jitter_s``, ``mss``,
        ``option_bytes`` (0 on rate flows), ``rcv_buffer_bytes``, ``receive_window`` (``"fixed"`` or ``"linux"``), ``delayed_ack`` (``False``, ``True`` or ``"linux"``), ``recovery`` (``"rfc6675"`` or ``"linux"``), ``rate`` (``rates_pps``, ``block_length``,
        ``source_per_block``, ``deadline_s``, ``feedback_interval_s``, ``controller``) or None).
    extensions : dict
        The file's Python-owned tables (:data:`EXTENSIONS`), as tomllib would read them.
    estimate : dict
        Upper-bound cost of one seed, what the limits compare (``SCENARIOS.md``, "Limits"):
        ``events``, ``memory_bytes``, ``series_rows``.

    Examples
    --------
    >>> import pathpool
    >>> from pathpool.data import scenario_path
    >>> sc = pathpool.load_scenario(scenario_path("examples/two_paths"))
    >>> sc.name, sc.seeds
    ('two_paths', (1, 2))
    >>> [(f["name"], f["kind"], f["paths"]) for f in sc.spec["flows"]]
    [('mptcp', 'mptcp', ['a', 'b']), ('tcp', 'tcp', ['a'])]
    >>> sc.estimate["events"] > 0
    True
    """

    name: str
    origin: str
    seeds: tuple[int, ...]
    duration_s: float
    text: str = field(repr=False)
    info: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)

    @cached_property
    def _info(self) -> Mapping[str, Any]:
        return self.info if self.info is not None else _validate(self.text, self.origin)

    @cached_property
    def spec(self) -> dict[str, Any]:
        return self._info["spec"]

    @cached_property
    def extensions(self) -> dict[str, Any]:
        return self._info["extensions"]

    @cached_property
    def estimate(self) -> dict[str, float]:
        return self._info["estimate"]


ScenarioLike = str | os.PathLike | Mapping[str, Any] | Scenario


def _read(path: str | os.PathLike[str]) -> tuple[str, str]:
    origin = os.fspath(path)
    try:
        return Path(path).read_text(encoding="utf-8"), origin
    except FileNotFoundError:
        # Not a file here: a shipped scenario's name (`examples/two_paths`), as on the command line.
        from pathpool.data import list_scenarios, scenario_path, suggest_scenario

        if isinstance(path, str) and path.removesuffix(".toml") in list_scenarios():
            shipped = scenario_path(path)
            return shipped.read_text(encoding="utf-8"), str(shipped)
        guess = suggest_scenario(origin)
        if guess:
            message = f"no such file; did you mean the shipped scenario '{guess}'?"
        elif os.path.isabs(origin):
            message = "no such file"
        else:
            message = "no such file, nor a shipped scenario (`pathpool scenarios list` names them)"
        raise ScenarioError(message, origin=origin) from None
    except IsADirectoryError:
        raise ScenarioError("is a directory, not a scenario file", origin=origin) from None
    except UnicodeDecodeError as e:
        raise ScenarioError(f"not UTF-8 text ({e.reason} at byte {e.start})", origin=origin) from None
    except OSError as e:
        raise ScenarioError(f"cannot read: {e.strerror}", origin=origin) from None


_TOML_SCALARS = (str, bool, int, float, datetime.date, datetime.time)


def _check_toml_values(value: Any, where: str) -> None:
    """Refuse what TOML cannot hold, naming the field (``links[1].rate``) as the files do."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ScenarioError(f"key {k!r} ({type(k).__name__}) is not a string", origin=DICT_ORIGIN,
                                    field=where, allowed="string keys")
            _check_toml_values(v, f"{where}.{k}" if where else k)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _check_toml_values(v, f"{where}[{i}]")
    elif isinstance(value, bool):
        return
    elif isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise ScenarioError(f"integer {value:.3e} does not fit TOML's 64-bit integers", origin=DICT_ORIGIN,
                                field=where, allowed="integers within +-2^63, or a float or a string with a unit")
    elif isinstance(value, float):
        return
    elif not isinstance(value, _TOML_SCALARS):
        raise ScenarioError(f"a {type(value).__name__} value cannot be written as TOML", origin=DICT_ORIGIN,
                            field=where, allowed="str, int, float, bool, list or dict")


def _source(scenario: ScenarioLike) -> tuple[str, str]:
    """(TOML text, origin) of anything :func:`load_scenario` accepts."""
    if isinstance(scenario, Scenario):
        return scenario.text, scenario.origin
    if isinstance(scenario, Mapping):
        _check_toml_values(scenario, "")
        try:
            return tomli_w.dumps(dict(scenario)), DICT_ORIGIN
        except (TypeError, ValueError) as e:
            raise ScenarioError(f"cannot be written as TOML: {e}", origin=DICT_ORIGIN) from None
    if isinstance(scenario, (str, os.PathLike)):
        return _read(scenario)
    raise TypeError(f"a scenario is a path, a dict or a pathpool.Scenario, not {type(scenario).__name__}")


def load_scenario(
    scenario: ScenarioLike, overrides: str | Sequence[str] | None = None, *, allow_large: bool = False
) -> Scenario:
    """Read and validate a scenario without running it.

    Parameters
    ----------
    scenario : str, os.PathLike, dict or Scenario
        A TOML file; or, when no such file exists, the name of a shipped scenario
        (``"examples/two_paths"``, as ``pathpool scenarios list`` prints them; a misspelt one
        gets a suggestion); or the same structure as a dict (serialised with ``tomli_w``;
        errors then name the origin ``"<dict>"`` and the dotted field).
    overrides : str or list of str, optional
        ``FIELD=VALUE`` assignments applied to the parsed document before validation, as
        ``pathpool run --set`` does: ``links.bottleneck.rate=20Mbps`` (array elements by
        ``name`` or index), ``duration=30s``, ``flows.0.algorithm=lia``; ``~FIELD`` (Hydra's
        form) removes a key, which then takes its default, or an array element:
        ``~paths.p1.ack_delay``, ``~links.access``. An error in one names it:
        ``FILE: --set FIELD=VALUE: FIELD: MESSAGE (allowed: ...)``; removing what the
        document does not hold is one. A single string is one override.
    allow_large : bool, default False
        Skip the run-cost limits (about 10^10 simulator events or 4 GiB per seed; see
        ``SCENARIOS.md``, "Limits").

    Returns
    -------
    Scenario

    Raises
    ------
    ScenarioError
        With ``origin``, ``line``, ``column``, ``field``, ``message`` and ``allowed`` set.
    TypeError
        An override is not a string.

    Examples
    --------
    >>> sc = load_scenario("examples/two_paths", ["links.bottleneck_a.rate=20Mbps"])
    >>> sc.spec["links"][0]["rate_bps"]
    20000000
    >>> load_scenario("examples/two_paths", "duration=5s").duration_s
    5.0
    """
    overrides = _override_list(overrides)
    if isinstance(scenario, Scenario) and not overrides:
        return scenario
    text, origin = _source(scenario)
    info = _validate(text, origin, overrides, allow_large)
    return Scenario(
        name=info["name"],
        origin=origin,
        seeds=tuple(int(s) for s in info["seeds"]),
        duration_s=float(info["duration_s"]),
        text=info["text"],
        info=info,
    )


def _override_list(overrides: str | Sequence[str] | None) -> list[str]:
    """``overrides`` as a list: one string is one override (not a list of its characters)."""
    if overrides is None:
        return []
    if isinstance(overrides, str):
        return [overrides]
    out = list(overrides)
    for i, o in enumerate(out):
        if not isinstance(o, str):
            raise TypeError(f"overrides[{i}] = {o!r} is not a string; give FIELD=VALUE, e.g. 'duration=5s'")
    return out


def flow_entries(spec: dict) -> list[tuple[int, dict]]:
    """Each ``[[flows]]`` entry of a validated scenario's ``spec`` as (its index, its first
    expanded flow): ``count = n`` expands an entry into n flows, and overrides address the entry
    (``flows.INDEX.FIELD``)."""
    first: dict[int, dict] = {}
    for fl in spec["flows"]:
        first.setdefault(fl["index"], fl)
    return sorted(first.items())


def override(field: str, value: Any) -> str:
    """One ``FIELD=VALUE`` override with ``value`` written as TOML (so ``"lia"`` stays a string).

    Examples
    --------
    >>> override("links.a.rate", "20Mbps"), override("duration", 5.0), override("paths.0.links", ["a"])
    ('links.a.rate="20Mbps"', 'duration=5.0', 'paths.0.links=["a"]')
    >>> override("flows.0.params", {"d": 0.1, "alpha every ack": True})
    'flows.0.params={"d" = 0.1, "alpha every ack" = true}'
    """
    return f"{field}={_toml_value(value)}"


def _toml_value(v: Any) -> str:
    """``v`` as one line of TOML (tomli_w writes arrays over several lines, tables as sections)."""
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{_toml_value(str(k))} = {_toml_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return tomli_w.dumps({"v": v}).split("=", 1)[1].strip()


def quantity(kind: str, value: Any) -> float:
    """One quantity as written in a scenario, in SI units, by the simulator's own rules.

    Parameters
    ----------
    kind : {"time", "rate", "size", "probability"}
    value : str or number
        ``"150ms"``, ``"10Mbps"``, ``"4MiB"``, ``"2%"``: a string carries its unit (``"10"`` is a
        ValueError, as in a scenario file); a plain number is already SI.

    Returns
    -------
    float
        Seconds, bit/s, bytes or a fraction.

    Raises
    ------
    ValueError
        Naming the allowed units.

    Examples
    --------
    >>> quantity("rate", "10Mbps")
    10000000.0
    """
    x = _core.quantity(kind, value)
    if not math.isfinite(x):
        raise ValueError(f"{value!r} is not a finite {kind}")
    return x
