"""Scenario loading and validation (the format itself is the simulator's: see
``crates/pathpool-sim/SCENARIOS.md``)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from pathpool import _core
from pathpool.errors import ScenarioError

__all__ = ["Scenario", "ScenarioLike", "load_scenario"]

DICT_ORIGIN = "<dict>"


@dataclass(frozen=True)
class Scenario:
    """A validated scenario.

    Attributes
    ----------
    name : str
        The scenario's ``name``.
    origin : str
        Where it came from: the file path as given, or ``"<dict>"``.
    seeds : tuple of int
        The seeds the scenario asks for.
    duration_s : float
        Simulated duration, seconds.
    text : str
        The TOML text that was validated (and that a run will use, byte for byte).
    """

    name: str
    origin: str
    seeds: tuple[int, ...]
    duration_s: float
    text: str = field(repr=False)


ScenarioLike = str | os.PathLike | Mapping[str, Any] | Scenario


def _read(path: str | os.PathLike[str]) -> tuple[str, str]:
    origin = os.fspath(path)
    try:
        return Path(path).read_text(encoding="utf-8"), origin
    except FileNotFoundError:
        raise ScenarioError("no such file", origin=origin) from None
    except IsADirectoryError:
        raise ScenarioError("is a directory, not a scenario file", origin=origin) from None
    except UnicodeDecodeError as e:
        raise ScenarioError(f"not UTF-8 text ({e.reason} at byte {e.start})", origin=origin) from None
    except OSError as e:
        raise ScenarioError(f"cannot read: {e.strerror}", origin=origin) from None


def _source(scenario: ScenarioLike) -> tuple[str, str]:
    """(TOML text, origin) of anything :func:`load_scenario` accepts."""
    if isinstance(scenario, Scenario):
        return scenario.text, scenario.origin
    if isinstance(scenario, Mapping):
        try:
            return tomli_w.dumps(dict(scenario)), DICT_ORIGIN
        except (TypeError, ValueError) as e:
            raise ScenarioError(f"cannot be written as TOML: {e}", origin=DICT_ORIGIN) from None
    if isinstance(scenario, (str, os.PathLike)):
        return _read(scenario)
    raise TypeError(f"a scenario is a path, a dict or a pathpool.Scenario, not {type(scenario).__name__}")


def load_scenario(scenario: ScenarioLike) -> Scenario:
    """Read and validate a scenario without running it.

    Parameters
    ----------
    scenario : str, os.PathLike, dict or Scenario
        A TOML file, or the same structure as a dict (serialised with ``tomli_w``; errors then
        name the origin ``"<dict>"`` and the dotted field).

    Returns
    -------
    Scenario

    Raises
    ------
    ScenarioError
        With ``origin``, ``line``, ``column``, ``field``, ``message`` and ``allowed`` set.
    """
    if isinstance(scenario, Scenario):
        return scenario
    text, origin = _source(scenario)
    info = _core.validate_scenario(text, origin)
    return Scenario(
        name=info["name"],
        origin=origin,
        seeds=tuple(int(s) for s in info["seeds"]),
        duration_s=float(info["duration_s"]),
        text=text,
    )
