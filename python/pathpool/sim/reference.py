"""The scenario reference, generated from the simulator's own schema.

The Rust validator describes every table and field of a scenario file in
``crates/pathpool-sim/src/config/schema.rs`` (type, units, default, allowed values, one line on
what it does) and takes its error texts from there. :func:`scenario_schema` returns that
description; :func:`update_reference` rewrites the generated blocks of ``SCENARIOS.md``
(between ``<!-- schema:NAME -->`` and ``<!-- /schema:NAME -->``) from it, so the field tables
there and on the documentation site (which includes that file) are never copied by hand.

Regenerate after changing the schema::

    python -m pathpool.sim.reference --write crates/pathpool-sim/SCENARIOS.md

``--check`` exits 1 when the file is stale (the test suite does the same).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

__all__ = ["render_blocks", "scenario_schema", "update_reference"]

_BLOCK = re.compile(r"(<!-- schema:(\S+) -->\n)(.*?)(<!-- /schema:\2 -->)", re.DOTALL)


def scenario_schema() -> dict[str, list[dict[str, Any]]]:
    """The scenario format as the validator defines it.

    Returns
    -------
    dict
        ``tables``: ``name`` (``""`` is the top level; ``links.gilbert`` is the ``gilbert``
        table inside a link), ``written`` (how the file writes it), ``doc``. ``fields``, in file
        order: ``table``, ``name``, ``type`` (``time``, ``rate``, ``size``, ``probability``,
        ``buffer``, ``string``, ``integer``, ``boolean``, ``table`` or a list of these),
        ``required``, ``default`` (as written in a file), ``allowed`` (the validator's own
        words), ``kinds`` (the flow kinds a ``flows`` field applies to), ``doc``, and ``accept``
        / ``refuse``: TOML values at and just past the bounds, which the validator's tests
        check. ``units``: for each quantity ``type``, the unit ``suffixes`` and what a ``plain``
        number means.

    Examples
    --------
    >>> import pathpool
    >>> schema = pathpool.scenario_schema()
    >>> rate = next(f for f in schema["fields"] if (f["table"], f["name"]) == ("links", "rate"))
    >>> rate["type"], rate["required"]
    ('rate', 'yes')
    >>> rate["allowed"]
    'a rate from 1 bit/s to 1 Tbit/s, e.g. "10Mbps", "1Gbps", or bits/s as a number; enough to send one packet in the run'
    """
    from pathpool import _core

    return dict(_core.scenario_schema())


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    # Defaults in words ("end of run") stay prose; values as written in a file are code.
    return f"`{text}`" if text and " " not in text else text


def _table(fields: list[dict[str, Any]], kinds: bool) -> str:
    head = ["field", "type", "required", "default", "allowed", "meaning"]
    if kinds:
        head.insert(5, "flows")
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for f in fields:
        cells = [_code(f["name"]), f["type"], f["required"], _code(f["default"]), f["allowed"], f["doc"]]
        if kinds:
            cells.insert(5, f["kinds"])
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(rows) + "\n"


def render_blocks(schema: dict[str, list[dict[str, Any]]] | None = None) -> dict[str, str]:
    """The generated Markdown blocks of ``SCENARIOS.md``, by block name.

    ``units``: the unit suffixes of each quantity type; ``ranges``: every bounded field with its
    allowed values; one field table per scenario table (``top``, ``metrics``, ``links``,
    ``links.gilbert``, ``links.reorder``, ``paths``), and for ``[[flows]]`` one table of the fields
    window flows take (``flows``) and one of the rate-flow-only fields (``flows.rate``).

    Parameters
    ----------
    schema : dict, optional
        As :func:`scenario_schema` returns it (the default).

    Returns
    -------
    dict of str to str

    Examples
    --------
    >>> from pathpool.sim.reference import render_blocks
    >>> blocks = render_blocks()
    >>> print(blocks["metrics"].splitlines()[2].split(" | ")[:4])
    ['| `interval`', 'time', 'no', '`0`']
    """
    schema = schema or scenario_schema()
    fields = schema["fields"]
    out = {
        "units": "\n".join(
            ["| type | units (exact, case included) | plain number means |", "|---|---|---|"]
            + [f"| {u['type']} | {', '.join(f'`{s}`' for s in u['suffixes'])} | {u['plain']} |"
               for u in schema["units"]]) + "\n",
        "ranges": "\n".join(
            ["| field | allowed |", "|---|---|"]
            + [f"| `{(f['table'] + '.' if f['table'] else '') + f['name']}` | {_cell(f['allowed'])} |"
               for f in fields if f["refuse"]]) + "\n",
    }
    for t in schema["tables"]:
        name = t["name"]
        mine = [f for f in fields if f["table"] == name]
        if name == "flows":
            out["flows"] = _table([f for f in mine if f["kinds"] != "rate"], kinds=True)
            out["flows.rate"] = _table([f for f in mine if f["kinds"] == "rate"], kinds=False)
        else:
            out[name or "top"] = _table(mine, kinds=False)
    return out


def update_reference(text: str, schema: dict[str, list[dict[str, Any]]] | None = None) -> str:
    """Replace every ``<!-- schema:NAME -->`` block of ``text`` with its generated content.

    Parameters
    ----------
    text : str
        A Markdown document (``SCENARIOS.md``) with marked blocks.
    schema : dict, optional
        As :func:`scenario_schema` returns it (the default).

    Returns
    -------
    str
        ``text`` with the blocks regenerated; the hand-written prose between them unchanged.

    Raises
    ------
    KeyError
        For a block name :func:`render_blocks` does not make.

    Examples
    --------
    >>> from pathpool.sim.reference import update_reference
    >>> doc = "Intro.\\n<!-- schema:paths -->\\nold\\n<!-- /schema:paths -->\\n"
    >>> print(update_reference(doc).splitlines()[4])
    | `name` | string | yes |  | a name unique among paths | path name, referred to by flows |
    """
    blocks = render_blocks(schema)
    return _BLOCK.sub(lambda m: m.group(1) + blocks[m.group(2)] + m.group(4), text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pathpool.sim.reference",
                                description="Regenerate the schema blocks of SCENARIOS.md.")
    p.add_argument("path", type=Path, help="the Markdown file (crates/pathpool-sim/SCENARIOS.md)")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true", help="rewrite the file in place")
    g.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = p.parse_args(argv)
    old = args.path.read_text(encoding="utf-8")
    new = update_reference(old)
    if args.check:
        if new != old:
            sys.stderr.write(f"{args.path} is stale: run python -m pathpool.sim.reference --write {args.path}\n")
            return 1
        return 0
    if new != old:
        args.path.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
