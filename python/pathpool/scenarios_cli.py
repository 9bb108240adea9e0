"""``pathpool scenarios list|copy|schema``: the scenarios shipped inside the package, and the format."""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["register"]


def _list(args: argparse.Namespace) -> int:
    from pathpool.data import list_scenarios, scenarios_dir

    names = list_scenarios()
    if args.json:
        sys.stdout.write(json.dumps({"root": str(scenarios_dir()), "scenarios": names}, indent=2) + "\n")
        return 0
    for name in names:
        sys.stdout.write(name + "\n")
    return 0


def _copy(args: argparse.Namespace) -> int:
    from pathpool.cliutil import fail
    from pathpool.data import copy_scenario

    try:
        written = copy_scenario(args.name, args.dest)
    except KeyError as e:
        return fail(f"pathpool scenarios copy: {e.args[0]}")
    except OSError as e:
        return fail(f"pathpool scenarios copy: {e}")
    for p in written:
        sys.stdout.write(f"{p}\n")
    return 0


def _schema(args: argparse.Namespace) -> int:
    from pathpool.sim.reference import render_blocks, scenario_schema

    schema = scenario_schema()
    if args.json:
        sys.stdout.write(json.dumps(schema, indent=2, ensure_ascii=False) + "\n")
        return 0
    blocks = render_blocks(schema)
    for t in schema["tables"]:
        key = t["name"] or "top"
        sys.stdout.write(f"## {t['written']}: {t['doc']}\n\n{blocks[key]}\n")
        if key == "flows":
            sys.stdout.write(f"## rate flows only\n\n{blocks['flows.rate']}\n")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``pathpool scenarios list`` and ``pathpool scenarios copy NAME DIR``."""
    p = subparsers.add_parser("scenarios")
    sub = p.add_subparsers(dest="scenarios_command", metavar="list|copy|schema", required=True)
    q = sub.add_parser("list", help="print the name of every shipped scenario (FOLDER/STEM)")
    q.add_argument("--json", action="store_true", help="names and the folder they live in, as JSON")
    q.set_defaults(func=_list)
    q = sub.add_parser("copy", help="copy a shipped scenario, or a whole folder of them, to edit it",
                       description="Copy NAME (FOLDER/STEM, e.g. examples/two_paths, or a folder such as "
                       "rsf2020) into DIR; existing files are never overwritten.")
    q.add_argument("name", metavar="NAME", help="scenario (examples/two_paths) or folder (rsf2020)")
    q.add_argument("dest", metavar="DIR", help="target directory (created if needed)")
    q.set_defaults(func=_copy)
    q = sub.add_parser("schema", help="every table and field of a scenario file: type, units, default, allowed values",
                       description="The scenario format as the simulator's validator defines it "
                       "(Markdown tables, or the whole schema as JSON).")
    q.add_argument("--json", action="store_true", help="the schema as JSON (tables, fields, units)")
    q.set_defaults(func=_schema)
