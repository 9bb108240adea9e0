"""The ``pathpool`` command.

Each area of pathpool contributes its own subcommands through a ``register(subparsers)`` function
in its module; this file only assembles them.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Modules that add subcommands, in the order `pathpool --help` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "pathpool.kernel.cli",
    "pathpool.ratecontrol.cli",
    "pathpool.sim.cli",
    "pathpool.analysis.cli",
    "pathpool.reproduce.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pathpool",
        description="Multipath congestion control: simulator, analysis, rate control, kernel.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    from pathpool.errors import run_command

    return run_command(lambda: args.func(args))


if __name__ == "__main__":
    sys.exit(main())
