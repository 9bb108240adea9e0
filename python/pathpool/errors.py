"""Exceptions raised by pathpool.

They live in pure Python (the compiled core looks them up when it raises) so that they carry
docstrings, pickle across worker processes, and can be caught without touching ``_core``.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
    "ClusterError",
    "OutputError",
    "PathpoolError",
    "ResultSetError",
    "ScenarioError",
    "SimulationError",
    "Terminated",
    "fail",
    "run_command",
    "signals_deferred",
    "stop_on_signals",
]

#: Exit codes of every ``pathpool`` command: 0 success, 1 the work itself failed, 2 bad input
#: (scenario, arguments, an output place that cannot be used), 128 + signal number when stopped
#: by Ctrl-C (SIGINT) or SIGTERM, as shells report a process killed by that signal.
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


def fail(message: str, code: int = EXIT_BAD_INPUT) -> int:
    """Print ``message`` as one line on stderr and return ``code`` (for ``return fail(...)``).

    A plain write, not rich: the message must reach the terminal verbatim (brackets included).

    Examples
    --------
    >>> fail("x.toml: duration: must be > 0", EXIT_BAD_INPUT)  # doctest: +SKIP
    2
    """
    sys.stderr.write(" ".join(str(message).split("\n")).rstrip() + "\n")
    return code


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

    Examples
    --------
    >>> import pathpool
    >>> from pathpool.data import scenario_path
    >>> try:
    ...     pathpool.load_scenario(scenario_path("examples/two_paths"), ["links.0.delay=2000s"])
    ... except pathpool.ScenarioError as e:
    ...     print(e.field, "|", e.allowed)
    links[0].delay | a time from 0 to 1000 s, e.g. "20ms"
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


class OutputError(PathpoolError):
    """An output place cannot be used: it is a file, not writable, not a pathpool result set, or
    another process is writing it right now. Nothing was written."""


class ResultSetError(PathpoolError, ValueError):
    """A result directory is not one complete, consistent result set (missing, changed or mixed
    files, or written by an interrupted or older run)."""


class ClusterError(PathpoolError):
    """A Dask scheduler could not be reached or used."""


class Terminated(BaseException):
    """Raised by pathpool's SIGTERM handler, so that SIGTERM unwinds like Ctrl-C's
    ``KeyboardInterrupt`` (``finally`` blocks run, worker processes are stopped) instead of
    killing the process where it stands. A ``BaseException`` for the same reason as
    ``KeyboardInterrupt``: ``except Exception`` must not swallow it."""


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


def _raise_terminated(signum: int, frame: Any) -> None:
    raise Terminated(signum)


@contextlib.contextmanager
def stop_on_signals() -> Iterator[None]:
    """Make SIGTERM raise :class:`Terminated` in the main thread (as SIGINT raises
    ``KeyboardInterrupt``) while the block runs; the previous handler is restored after.

    The simulator looks for pending signals about every 50 ms, and pathpool's process pool kills
    its workers when either exception passes through it, so both signals stop everything within
    a fraction of a second. Outside the main thread this does nothing (Python runs signal
    handlers there only).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _ignore_stop_signals() -> None:
    # Everything is stopped and the exit code is decided; a second Ctrl-C (a terminal sends one
    # to the whole group, impatient users send more) must not turn it into a traceback or a
    # death by signal while the interpreter shuts down.
    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGINT, signal.SIGTERM):
            signal.signal(s, signal.SIG_IGN)


@contextlib.contextmanager
def signals_deferred() -> Iterator[list[int]]:
    """Hold SIGINT/SIGTERM back while the block runs; one that came meanwhile is raised as
    usual (``KeyboardInterrupt``, :class:`Terminated`) when it ends, unless an exception is
    already on its way out (then the process is stopping anyway). Yields the list of signals
    received.

    For short steps that must not be cut in half: reaping worker processes, and importing
    compiled extensions (an interrupt inside one's initialisation can surface as an
    ``ImportError``, "initialization failed", with a traceback; or, when the extension runs
    Python code through the C API, make the interpreter end by SIGINT after the command had
    already stopped cleanly with its one line). Outside the main thread nothing is changed.
    """
    got: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield got
        return
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = {s: signal.signal(s, lambda signum, frame: got.append(signum)) for s in signals}
    unwinding = False
    try:
        yield got
    except BaseException:
        unwinding = True
        raise
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
        if got and not unwinding:
            signal.raise_signal(got[0])


def run_command(command: Callable[[], int | None], name: str = "pathpool") -> int:
    """Run a CLI command and turn how it ended into one exit code and at most one stderr line.

    0 or the command's own code; :data:`EXIT_BAD_INPUT` for a :class:`ScenarioError`,
    :class:`OutputError`, :class:`ResultSetError` or :class:`ClusterError` that the command did
    not handle itself; :data:`EXIT_FAILED` for a :class:`SimulationError`; :data:`EXIT_SIGINT` on
    Ctrl-C and :data:`EXIT_SIGTERM` on SIGTERM, without a traceback (once stopped by a signal,
    further SIGINT/SIGTERM are ignored until the process exits).

    Examples
    --------
    >>> run_command(lambda: 0)
    0
    """
    try:
        with stop_on_signals():
            return int(command() or 0)
    except KeyboardInterrupt:
        _ignore_stop_signals()
        return fail(f"{name}: interrupted (SIGINT); stopped", EXIT_SIGINT)
    except Terminated:
        _ignore_stop_signals()
        return fail(f"{name}: terminated (SIGTERM); stopped", EXIT_SIGTERM)
    except (ScenarioError, OutputError, ResultSetError, ClusterError) as e:
        return fail(str(e), EXIT_BAD_INPUT)
    except SimulationError as e:
        return fail(f"simulation failed: {e}", EXIT_FAILED)
