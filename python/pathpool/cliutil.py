"""Argument types and output functions shared by every ``pathpool`` subcommand.

Kept free of heavy imports: every subcommand's ``register`` uses it while ``--help`` is timed.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

# One definition of the exit codes and the one-line error (exit 2 by default), in pathpool.errors.
from pathpool.errors import EXIT_BAD_INPUT, EXIT_FAILED, fail

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_FAILED",
    "add_out",
    "at_least",
    "fail",
    "finite_float",
    "jobs_arg",
    "positive_float",
    "positive_int",
    "progress",
    "scenario_arg",
    "seeds_arg",
]


def at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer ``>= low``."""

    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if v < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {v}")
        return v

    parse.__name__ = f"integer >= {low}"
    return parse


positive_int = at_least(1)


def finite_float(text: str) -> float:
    """An argparse type: a finite number."""
    import math

    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(v):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return v


def positive_float(text: str) -> float:
    """An argparse type: a finite number ``> 0``."""
    v = finite_float(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return v


def jobs_arg(text: str) -> int:
    """argparse type of ``-j/--jobs``: an integer >= 1 (leave the option out for one per core).

    Kept here, not in :mod:`pathpool.procpool`, so that ``--help`` need not import the pool.

    Examples
    --------
    >>> jobs_arg("2")
    2
    """
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n} (leave --jobs out for one per core)")
    return n


def seeds_arg(text: str) -> list[int]:
    """An argparse type: seeds as ``1,2,5-8``.

    Examples
    --------
    >>> seeds_arg("1,3-4")
    [1, 3, 4]
    """
    from pathpool.sim.runner import parse_seeds

    try:
        seeds = parse_seeds(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if not seeds:
        raise argparse.ArgumentTypeError("no seeds given")
    return seeds


def scenario_arg(text: str) -> str:
    """A scenario file, or the name of a shipped one (``examples/two_paths``) when no such file exists.

    Examples
    --------
    >>> scenario_arg("examples/two_paths").endswith("two_paths.toml")
    True
    """
    if Path(text).exists():
        return text
    from pathpool.data import scenario_path

    try:
        return str(scenario_path(text))
    except (KeyError, FileNotFoundError):
        return text  # the loader then reports the missing file, with its name


def add_out(parser: argparse.ArgumentParser, default: str | None, what: str = "output directory") -> None:
    """``-o/--out DIR`` (``--output`` still accepted), stored as ``args.output``."""
    shown = f" (default: {default})" if default else ""
    parser.add_argument("-o", "--out", dest="output", metavar="DIR", default=default, help=f"{what}{shown}")
    parser.add_argument("--output", dest="output", metavar="DIR", help=argparse.SUPPRESS)


@contextmanager
def progress(label: str, *, enabled: bool = True, every_s: float = 10.0) -> Iterator[Callable[[float, float], Any]]:
    """A ``progress(done, total)`` callback: a rich bar on a terminal, plain lines otherwise.

    When stderr is not a terminal (CI, ``2> log``, a pipe), one line ``LABEL: DONE/TOTAL (P%),
    Ns`` is written at the start, at most every ``every_s`` seconds, and at the end, so a long
    run is never silent and a log never fills with bar redraws.
    """
    if not enabled:
        yield lambda done, total: None
        return
    if sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        with Progress(TextColumn(f"[bold]{label}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task(label, total=None)
            yield lambda done, total: bar.update(task, completed=done, total=total)
        return
    # The first line comes after `every_s` (or at the end): a run that fails at once prints its
    # one error line and nothing else.
    t0 = time.monotonic()
    state: dict[str, Any] = {"last": t0, "done": None, "total": None, "final": False}

    def line(done: float, total: float) -> None:
        pct = f" ({100.0 * done / total:.0f}%)" if total else ""
        sys.stderr.write(f"{label}: {done:g}/{total:g}{pct}, {time.monotonic() - t0:.0f} s\n")
        sys.stderr.flush()

    def update(done: float, total: float) -> None:
        if state["final"] and total != state["total"]:
            state["final"] = False      # a second stage raised the total: report it too
        state["done"], state["total"] = done, total
        now = time.monotonic()
        final = bool(total) and done >= total
        if (now - state["last"] >= every_s and not state["final"]) or (final and not state["final"]):
            state["last"], state["final"] = now, final
            line(done, total)

    yield update
    if state["done"] is not None and not state["final"]:
        line(state["done"], state["total"])
