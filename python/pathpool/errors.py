"""Exceptions raised by pathpool.

They live in pure Python (the compiled core looks them up when it raises) so that they carry
docstrings, pickle across worker processes, and can be caught without touching ``_core``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PathpoolError", "ScenarioError", "SimulationError"]


class PathpoolError(Exception):
    """Base class of every error pathpool raises on purpose."""


class ScenarioError(PathpoolError, ValueError):
    """A scenario is invalid: bad TOML, an unknown or missing field, or a value out of range.

    ``str(err)`` is ``FILE:LINE:COL: FIELD: MESSAGE (allowed: ...)``, the form editors and
    terminals turn into a link to the offending spot.

    Attributes
    ----------
    origin : str
        File the scenario came from (``"<dict>"`` for a scenario given as a dict).
    line, column : int or None
        1-based position of the offending value, when known.
    field : str or None
        Dotted path of the offending field, e.g. ``"links.l1.rate"``.
    message : str
        What is wrong.
    allowed : str or None
        The values that would be accepted, in words.
    """

    def __init__(
        self,
        message: str,
        *,
        origin: str = "<scenario>",
        line: int | None = None,
        column: int | None = None,
        field: str | None = None,
        allowed: str | None = None,
        text: str | None = None,
    ) -> None:
        self.origin = origin
        self.line = line
        self.column = column
        self.field = field
        self.message = message
        self.allowed = allowed
        self._text = text if text is not None else self._format()
        super().__init__(self._text)

    def _format(self) -> str:
        where = self.origin
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        out = f"{where}: "
        if self.field:
            out += f"{self.field}: "
        out += self.message
        if self.allowed:
            out += f" (allowed: {self.allowed})"
        return out

    def __str__(self) -> str:
        return self._text

    def __reduce__(self) -> tuple[Any, ...]:
        return (_scenario_error_from_dict, (self._as_dict(),))

    def _as_dict(self) -> dict[str, Any]:
        return {
            "text": self._text,
            "origin": self.origin,
            "line": self.line,
            "column": self.column,
            "field": self.field,
            "message": self.message,
            "allowed": self.allowed,
        }


class SimulationError(PathpoolError, RuntimeError):
    """The simulator failed while running a valid scenario (including an internal Rust panic,
    which is caught at the boundary and reported here instead of aborting Python)."""


def _scenario_error_from_dict(d: dict[str, Any]) -> ScenarioError:
    """Build a :class:`ScenarioError` from the dict the Rust core (or unpickling) hands over."""
    d = dict(d)
    message = d.pop("message")
    line = d.get("line")
    column = d.get("column")
    # The core reports 0 for "no position"; keep None as the single Python spelling of that.
    d["line"] = line if line else None
    d["column"] = column if column else None
    d["field"] = d.get("field") or None
    return ScenarioError(message, **d)
