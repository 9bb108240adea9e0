"""Running a scenario over its seeds, in this process or in a pool of worker processes."""

from __future__ import annotations

import multiprocessing
import operator
import queue as queue_mod
import time
from collections.abc import Callable, Iterable
from typing import Any

from pathpool import _core
from pathpool.errors import ScenarioError
from pathpool.procpool import check_jobs, default_jobs, imap_unordered
from pathpool.sim import _worker
from pathpool.sim.results import Results
from pathpool.sim.scenario import DEFAULTS, Scenario, ScenarioLike, load_scenario

__all__ = ["default_jobs", "parse_seeds", "run"]

ProgressArg = bool | Callable[[float], Any]

_U64_MAX = 2**64 - 1
#: Most seeds one run may take (the simulator's limit for a scenario's `seeds`).
MAX_SEEDS: int = DEFAULTS["max_seeds"]


def parse_seeds(text: str, max_seeds: int | None = MAX_SEEDS) -> list[int]:
    """Parse a seed list like ``"1,2,5-8"`` (ranges inclusive).

    Parameters
    ----------
    text : str
    max_seeds : int or None
        Refuse a list longer than this (the scenario files' limit, 100000, by default), counted
        before any range is expanded; None: no limit.

    Raises
    ------
    ValueError
        With a message naming the bad item, or the count and the limit.

    Examples
    --------
    >>> parse_seeds("1,2,5-8")
    [1, 2, 5, 6, 7, 8]
    """
    items: list[tuple[int, int]] = []
    total = 0
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        lo, sep, hi = item.partition("-")
        try:
            a, b = (int(lo), int(hi)) if sep else (int(item), int(item))
            if b < a:
                raise ValueError
        except ValueError:
            raise ValueError(f"bad seed {item!r}; expected integers or ranges like 1,2,5-8") from None
        items.append((a, b))
        total += b - a + 1
    if max_seeds is not None and total > max_seeds:
        raise ValueError(f"{total} seeds given; at most {max_seeds} (a run per seed)")
    seeds: list[int] = []
    for a, b in items:
        seeds.extend(range(a, b + 1))
    return seeds


def _seed_arg(seeds: Iterable[int] | str) -> Iterable[int]:
    """``run(seeds=...)``: seeds, or a seed list as the CLI writes it (``"1-5"``); an int is refused.

    An int is refused, not guessed: ``seeds=5`` reads as "five seeds" to some and as "seed 5" to
    others (numpy's ``seed=5``), and either guess runs something else than half the users meant.
    """
    if isinstance(seeds, str):
        try:
            return parse_seeds(seeds)
        except ValueError as e:
            raise ValueError(f"seeds={seeds!r}: {e}") from None
    if isinstance(seeds, int) or (hasattr(seeds, "__index__") and not hasattr(seeds, "__iter__")):
        n = operator.index(seeds)
        raise TypeError(f"seeds={n!r}: seeds is a list of seeds, not a count or one seed; "
                        f"give seeds=[{n}] for seed {n}, or seeds=range(1, {n + 1}) for {n} runs")
    return seeds


def _check_seeds(seeds: Iterable[int], origin: str) -> tuple[int, ...]:
    out: list[int] = []
    seen: set[int] = set()  # a list's `in` would make 10^5 seeds take minutes
    for item in seeds:
        try:
            s = operator.index(item)  # int, numpy integer; not float or str
        except TypeError:
            s = None
        if s is None or isinstance(item, bool) or not 0 <= s <= _U64_MAX:
            raise ScenarioError(
                f"seed {item!r} is not allowed", origin=origin, field="seeds", allowed="integers 0 to 2^64-1"
            )
        if s in seen:
            raise ScenarioError(f"seed {s} is listed twice", origin=origin, field="seeds", allowed="distinct integers")
        seen.add(int(s))
        out.append(int(s))
    if not out:
        raise ScenarioError("no seeds to run", origin=origin, field="seeds", allowed="at least one integer")
    return tuple(out)


class _Progress:
    """Overall progress over seeds, shown as a rich bar or handed to a callable."""

    def __init__(self, how: ProgressArg, scenario: Scenario, n: int) -> None:
        self.fractions = [0.0] * n
        self.callback: Callable[[float], Any] | None = None
        self.bar = None
        if callable(how):
            self.callback = how
        elif how:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self.bar = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                TaskProgressColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            seeds = f"{n} seed{'s' if n != 1 else ''}"
            self.task = self.bar.add_task(f"{scenario.name} ({seeds})", total=1.0)
            self.bar.start()

    @property
    def active(self) -> bool:
        return self.callback is not None or self.bar is not None

    def update(self, index: int, fraction: float) -> None:
        self.fractions[index] = min(max(float(fraction), 0.0), 1.0)
        overall = sum(self.fractions) / len(self.fractions)
        if self.callback is not None:
            self.callback(overall)
        if self.bar is not None:
            self.bar.update(self.task, completed=overall)

    def heartbeat(self) -> None:
        """Hand the callable the overall fraction again (no news from the workers): a periodic
        consumer such as the CLI's plain lines then still reports elapsed time."""
        if self.callback is not None:
            self.callback(sum(self.fractions) / len(self.fractions))

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _run_sequential(sc: Scenario, seeds: tuple[int, ...], progress: _Progress) -> list[dict[str, Any]]:
    raws = []
    for i, seed in enumerate(seeds):
        if progress.active:
            raws.append(_core.run_scenario(sc.text, sc.origin, seed, lambda f, i=i: progress.update(i, f)))
        else:
            raws.append(_core.run_scenario(sc.text, sc.origin, seed))
    return raws


def _run_pool(sc: Scenario, seeds: tuple[int, ...], jobs: int, progress: _Progress) -> list[dict[str, Any]]:
    ctx = multiprocessing.get_context("spawn")
    # Fractions from inside the workers only for the terminal bar: the queue that carries them
    # starts a resource-tracker process, one more for Ctrl-C to catch half-started. A callable
    # (the CLI's plain lines off a terminal) hears each seed's completion, which the parent sees
    # anyway.
    q = ctx.Queue() if progress.bar is not None else None
    raws: list[dict[str, Any] | None] = [None] * len(seeds)

    def drain() -> None:
        if q is None:
            progress.heartbeat()
            return
        while True:
            try:
                i, f = q.get_nowait()
            except queue_mod.Empty:
                return
            progress.update(i, f)

    tasks = [(sc.text, sc.origin, s, i) for i, s in enumerate(seeds)]
    for i, raw in imap_unordered(
        _worker.run_one, tasks, jobs, describe=lambda i: f"seed {seeds[i]} of {sc.origin}",
        initializer=_worker.init, initargs=(q,), idle=drain,
    ):
        raws[i] = raw
        progress.update(i, 1.0)
    # Rows are merged in seed-list order, whatever order the workers finished in.
    return [r for r in raws if r is not None]


def run(
    scenario: ScenarioLike,
    seeds: Iterable[int] | None = None,
    progress: ProgressArg = False,
    jobs: int | None = 1,
) -> Results:
    """Run a scenario for each seed and return the tidy results.

    Parameters
    ----------
    scenario : str, os.PathLike, dict or Scenario
        A TOML scenario file, the same structure as a dict, or a :class:`Scenario` from
        :func:`load_scenario`.
    seeds : iterable of int or str, optional
        Seeds to run, in the order their rows should appear, e.g. ``[1, 2]`` or ``range(1, 11)``,
        or as the command line writes them, ``"1,2,5-8"``. Default: the scenario's ``seeds``.
        A bare int is refused (TypeError): ``seeds=[5]`` is seed 5, ``range(1, 6)`` five runs.
    progress : bool or callable, default False
        True shows a rich progress bar on stderr; a callable is called with the overall fraction
        done (0 to 1): every so often with ``jobs=1``; with several workers as each seed
        finishes, and about every 0.1 s in between with the same value.
    jobs : int or None, default 1
        Worker processes. 1 runs in this process (the GIL is released while simulating); None
        uses one per core, capped at the number of seeds. Output does not depend on it. A
        worker whose parent dies exits by itself; an exception here (Ctrl-C included) kills
        the workers at once.

    Returns
    -------
    Results
        DataFrames ``flows``, ``subflows``, ``links``, ``series``, ``stats`` and ``summary``.

    Raises
    ------
    ScenarioError
        The scenario (or the seed list) is invalid; nothing was run.
    SimulationError
        The simulator failed (an internal panic included) or a worker process died.
    ValueError
        ``jobs`` is below 1, or a seed string cannot be read.
    TypeError
        ``seeds`` is an int.
    KeyboardInterrupt
        Ctrl-C: the run stops within about 50 ms of wall time (the simulator looks for
        pending signals between slices of simulated time), in this process and in workers.

    Examples
    --------
    A scenario file (here one shipped with the package), with a field changed:

    >>> import pathpool
    >>> from pathpool.data import scenario_path
    >>> sc = pathpool.load_scenario(scenario_path("examples/two_paths"), ["duration=5s"])
    >>> res = pathpool.run(sc, seeds=[1, 2])
    >>> bool(res.flows.groupby("flow")["goodput_bps"].mean().gt(0).all())
    True

    The same structure as a dict, several seeds in worker processes (in a script, under
    ``if __name__ == "__main__":``), with a progress callable:

    >>> doc = {"name": "one", "duration": "2s",
    ...        "links": [{"name": "l", "rate": "10Mbps", "delay": "10ms"}],
    ...        "paths": [{"name": "p", "links": ["l"]}],
    ...        "flows": [{"name": "f", "kind": "tcp", "path": "p", "algorithm": "cubic"}]}
    >>> done = []
    >>> res = pathpool.run(doc, seeds=[1, 2, 3], jobs=None, progress=done.append)  # doctest: +SKIP
    >>> res = pathpool.run(doc, seeds=[7], progress=done.append)
    >>> done[-1], res.flows.loc[0, "algorithm"]
    (1.0, 'cubic')
    """
    sc = load_scenario(scenario)
    seed_tuple = _check_seeds(sc.seeds if seeds is None else _seed_arg(seeds), sc.origin)
    n_jobs = check_jobs(jobs, len(seed_tuple))
    if n_jobs > 1:
        from pathpool._mainguard import safe_workers

        n_jobs = safe_workers(n_jobs)
    start = time.perf_counter()
    bar = _Progress(progress, sc, len(seed_tuple))
    try:
        if n_jobs == 1:
            raws = _run_sequential(sc, seed_tuple, bar)
        else:
            raws = _run_pool(sc, seed_tuple, n_jobs, bar)
    finally:
        bar.close()
    return Results.from_core(sc, seed_tuple, raws, time.perf_counter() - start)
