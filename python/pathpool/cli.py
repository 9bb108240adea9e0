"""The ``pathpool`` command.

Every subcommand is listed once, in :data:`COMMANDS`, with the module that defines it and its
one-line help. ``pathpool --help`` prints that table without importing any of them (so it costs
about as much as ``import pathpool``); ``pathpool CMD ...`` imports only CMD's module, which adds
its parser through ``register(subparsers)``. The modules import nothing of each other's CLI, so
the registry has no cycles.

Conventions every subcommand follows: ``-o/--out DIR`` for where it writes, ``--json`` for
machine-readable output where a table is printed, exit 0 on success, 1 when a run failed, 2 for
bad input or an unusable environment, always as one line on stderr. A closed stdout pipe
(``pathpool ratecontrol rates --json | head``) ends the command quietly.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Any, NoReturn

__all__ = ["COMMANDS", "Parser", "build_parser", "main"]

#: command -> (module that registers it, one-line help), in the order ``pathpool --help`` lists them.
COMMANDS: dict[str, tuple[str, str]] = {
    "run": ("pathpool.sim.cli", "run a scenario for each seed and write tidy results"),
    "validate": ("pathpool.sim.cli", "check scenario files without running them"),
    "algorithms": ("pathpool.sim.cli", "list congestion-control algorithms, parameters and sources"),
    "bench": ("pathpool.sim.cli", "measure simulated data packets per CPU-second"),
    "scenarios": ("pathpool.scenarios_cli", "list or copy the scenarios shipped with pathpool"),
    "sweep": ("pathpool.sweep_cli", "run a parameter grid over a scenario and write one tidy table"),
    "plot": ("pathpool.plot", "plot time series and per-flow bars of a results directory"),
    "analyze": ("pathpool.analysis.cli", "fluid model, conditions C0-C5, friendliness, RSF game"),
    "reproduce": (
        "pathpool.reproduce.cli",
        "run the papers' published experiments and write a report beside their numbers",
    ),
    "ratecontrol": (
        "pathpool.ratecontrol.cli",
        "TCP-friendly rate control for non-TCP multipath flows (Pluntke & Rio 2011)",
    ),
    "compare": (
        "pathpool.compare_cli",
        "simulator vs Linux kernel on one scenario (side-by-side table + plot)",
    ),
    "kernel": ("pathpool.kernel.cli", "the BPF congestion controls: load, check, status, unit, unload (root)"),
    "testbed": ("pathpool.kernel.cli", "namespace test bed with emulated paths (root)"),
}

EXIT_BAD_INPUT = 2


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line on stderr (``PROG: error: ...``), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _Subcommands:
    """What a module's ``register`` receives: ``add_parser`` with the registry's help filled in.

    A module names only commands listed in :data:`COMMANDS` (a test checks both ways), and its
    parsers are :class:`Parser` so their errors are one line too.
    """

    def __init__(self, action: argparse._SubParsersAction) -> None:
        self._action = action

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        if name not in COMMANDS:
            raise KeyError(f"{name!r} is not in pathpool.cli.COMMANDS; add it there")
        kwargs.setdefault("help", COMMANDS[name][1])
        kwargs.setdefault("description", kwargs["help"])
        return self._action.add_parser(name, **kwargs)


def _version() -> str:
    from pathpool import __version__

    return f"pathpool {__version__}"


def build_parser(command: str | None = None) -> Parser:
    """The ``pathpool`` parser, with the full parser of ``command``'s module only.

    Parameters
    ----------
    command : str, optional
        The subcommand about to run; ``None`` builds the listing only (no module imported).
    """
    parser = Parser(
        prog="pathpool",
        description="Multipath congestion control: simulator, analysis, rate control, kernel. "
        "`pathpool COMMAND --help` describes each command.",
    )
    parser.add_argument("-V", "--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    wanted = COMMANDS[command][0] if command in COMMANDS else None
    registered = False
    for name, (module, text) in COMMANDS.items():
        if module != wanted:
            sub.add_parser(name, help=text, description=text)
        elif not registered:
            importlib.import_module(module).register(_Subcommands(sub))
            registered = True
    return parser


def _command_of(argv: list[str]) -> str | None:
    # The first word that is not an option; the top level has no option that takes a value.
    return next((a for a in argv if not a.startswith("-")), None)


def main(argv: list[str] | None = None) -> int:
    """Run ``pathpool ARGS``; returns the exit status.

    Examples
    --------
    >>> main(["validate", "examples/two_paths"])  # doctest: +SKIP
    ok examples/two_paths: two_paths, 30 s, seeds 1,2,3
    0
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command_of(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    from pathpool.errors import run_command

    try:
        return run_command(lambda: args.func(args))
    except BrokenPipeError:
        # The reader went away (`| head`): nothing more to say, and Python must not complain
        # again when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141


def entry() -> int:
    """The ``pathpool`` command: :func:`main`, and after a stop by SIGINT or SIGTERM the process
    ends at once with its exit status (130, 143), its output flushed: the interpreter's shutdown
    (module finalizers, the libraries' exit hooks) is skipped, so that a second Ctrl-C landing in it
    cannot end the process by the signal after the command had already stopped with its line."""
    from pathpool.errors import EXIT_SIGINT, EXIT_SIGTERM

    code = main()
    if code in (EXIT_SIGINT, EXIT_SIGTERM):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    return code


if __name__ == "__main__":
    sys.exit(entry())
