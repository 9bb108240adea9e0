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
    "print_table",
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


def dask_missing(command: str) -> str | None:
    """The one-line error for ``--dask`` without the ``dask`` extra installed, or None when it is."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        return f"{command}: --dask needs Dask, an extra: pip install 'pathpool[dask]'"
    return None


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


def _folded_lines(words: list[str], width: int) -> int:
    """Lines a header of these words takes at this width, words wrapped, longer ones folded."""
    lines, used = 0, 0
    for n in map(len, words):
        if used and used + 1 + n <= width:
            used += 1 + n
            continue
        pieces = -(-n // width)
        lines += pieces
        used = n - (pieces - 1) * width
    return max(lines, 1)


def print_table(table: Any, console: Any = None) -> None:
    """Print a rich table so that no cell is ever cut: headers fold, cells keep every character.

    Rich fits a table to the terminal (80 columns when piped) by cutting cells ("0.00040..."),
    which silently loses digits. Here every column is at least as wide as its widest cell; what is
    left of the width goes to the headers, which fold over several lines when short of room. A
    table whose cells alone are wider than the terminal is printed wider (the terminal wraps it;
    a pipe keeps it whole) rather than cut.
    """
    from rich.console import Console
    from rich.measure import Measurement
    from rich.text import Text

    console = console if console is not None else Console(highlight=False)
    options = console.options
    cols = table.columns
    cell_w, head_w = [], []
    for c in cols:
        cells = [Measurement.get(console, options, x).maximum for x in c.cells]
        cell_w.append(max(cells, default=1))
        head_w.append(Measurement.get(console, options, c.header).maximum if c.header else 0)
    pad_left, pad_right = table.padding[3], table.padding[1]
    overhead = len(cols) * (pad_left + pad_right) + (len(cols) + 1 if table.box else 0)
    room = console.width - overhead
    widths = list(cell_w)
    # The room left goes one column at a time to the header that folds over the most lines, so
    # that the header row is as low as it can be (not one header folded into single letters).
    words = [str(getattr(c.header, "plain", c.header)).split() for c in cols]
    spare = room - sum(widths)
    while spare > 0:
        short = [i for i in range(len(cols)) if widths[i] < head_w[i]]
        if not short:
            break
        i = max(short, key=lambda i: (_folded_lines(words[i], widths[i]), -widths[i]))
        widths[i] += 1
        spare -= 1
    for c, w in zip(cols, widths):
        if isinstance(c.header, str):
            c.header = Text.from_markup(c.header)
        if isinstance(c.header, Text):
            # The header's own settings win over the column's no_wrap, which is for the cells.
            c.header.overflow, c.header.no_wrap = "fold", False
        c.width, c.min_width, c.no_wrap, c.overflow = w, w, True, "fold"
    need = sum(widths) + overhead
    if need > console.width:
        console = Console(file=console.file, width=need, highlight=False,
                          force_terminal=console.is_terminal, color_system=console.color_system)
    console.print(table)
