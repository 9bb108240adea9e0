"""``pathpool compare``: the simulator beside the Linux kernel on one scenario (see :mod:`pathpool.compare`).

The parser lives apart from :mod:`pathpool.compare` so that building it imports neither numpy
nor pandas.
"""

from __future__ import annotations

import argparse

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from pathpool.compare import command

    return command(args)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``compare`` to the ``pathpool`` command."""
    from pathpool.cliutil import add_out, positive_float, positive_int, scenario_arg, seeds_arg

    p = subparsers.add_parser(
        "compare",
        description="Run SCENARIO on the simulator and on the Linux test bed (root), or read two "
        "result directories, and write comparison.csv/.md/.png/.svg to DIR.")
    p.add_argument("scenario", metavar="SCENARIO", nargs="?", type=scenario_arg,
                   help="scenario TOML file or shipped name")
    p.add_argument("--sim", metavar="DIR", help="simulator results (instead of SCENARIO)")
    p.add_argument("--linux", metavar="DIR", help="Linux backend results (instead of SCENARIO)")
    p.add_argument("--seeds", type=seeds_arg, metavar="LIST",
                   help="simulator seeds, e.g. 1,2,5-8 (default: the scenario's)")
    p.add_argument("--as-testbed", action="store_true",
                   help="run SCENARIO on both as the test bed runs it (reading = \"linux\", the bed's receiver, "
                   "the DSS option on MPTCP subflows; pathpool.kernel.mapping.as_testbed_runs): the warnings "
                   "then name only what the simulator has no setting for")
    p.add_argument("--linux-runs", type=positive_int, default=1, metavar="N", help="test-bed runs (default 1)")
    p.add_argument("--max-duration", type=positive_float, default=10.0, metavar="S",
                   help="both backends run min(scenario duration, S) seconds (default 10)")
    add_out(p, "results/compare")
    p.set_defaults(func=_run)
