"""mkdocs hook: pages whose content has one source elsewhere are filled in at build time.

``{{ include PATH }}`` inserts a repository file (SCENARIOS.md, whose field tables are generated
anew from the validator's schema, ``pathpool.scenario_schema()``; the kernel README), with its
relative links turned into plain paths (they point into the repository, not the site);
``{{ cli_reference }}`` renders every ``pathpool`` command's ``--help`` from the argparse parsers;
``{{ notebook PATH }}`` renders a notebook's markdown and code cells; ``{{ algorithms }}`` and
``{{ scenario_defaults }}`` render the simulator's algorithm registry and validator defaults as the
compiled core reports them (``pathpool.algorithms()``, ``pathpool.sim.scenario.DEFAULTS``).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_LINK = re.compile(r"\[([^\]]+)\]\((?!https?:|mailto:|#)([^)]+)\)")


def _include(rel: str) -> str:
    text = (ROOT / rel).read_text(encoding="utf-8")
    if rel.endswith("SCENARIOS.md"):
        # Its field tables are generated from the validator's schema: render them fresh.
        from pathpool.sim.reference import update_reference

        text = update_reference(text)
    return _LINK.sub(lambda m: _link(rel, m.group(1), m.group(2)), text)


def _link(rel: str, label: str, target: str) -> str:
    """A relative link of an included file: into the site when it points at a page of docs/ (the
    including pages sit at docs/'s top), else a plain repository path."""
    path, _, anchor = target.partition("#")
    docs = ROOT / "docs"
    resolved = ((ROOT / rel).parent / path).resolve()
    if resolved.suffix == ".md" and resolved.is_relative_to(docs) and resolved.is_file():
        return f"[{label}]({resolved.relative_to(docs).as_posix()}{'#' + anchor if anchor else ''})"
    return f"{label} (`{target}`)"


def _cli_reference() -> str:
    from pathpool.cli import COMMANDS, build_parser

    parts = []
    for name in COMMANDS:
        top = build_parser(name)
        sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
        stack = [(f"pathpool {name}", sub.choices[name])]
        while stack:
            title, p = stack.pop(0)
            p.prog = title
            depth = title.count(" ") + 1
            parts.append(f"{'#' * depth} `{title}`\n\n```text\n{p.format_help().rstrip()}\n```\n")
            for a in p._actions:
                if isinstance(a, argparse._SubParsersAction):
                    stack.extend((f"{title} {n}", c) for n, c in a.choices.items())
    return "\n".join(parts)


def _notebook(rel: str) -> str:
    nb = json.loads((ROOT / rel).read_text(encoding="utf-8"))
    out = []
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        out.append(src if cell["cell_type"] == "markdown" else f"```python\n{src}\n```")
    return "\n\n".join(out)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _algorithms() -> str:
    import pathpool

    rows = ["| `algorithm` | coupled | parameters (default; allowed) | per ACK / per loss | source |",
            "|---|---|---|---|---|"]
    for a in pathpool.algorithms():
        params = "<br>".join(f"`{p['name']}` ({_cell(p['default'])}; {_cell(p['allowed'])})" for p in a["params"])
        rows.append(f"| `{a['name']}` | {'yes' if a['coupled'] else 'no'} | {params or '-'} | "
                    f"{_cell(a['formula'])} | {_cell(a['source'])} |")
    return "\n".join(rows) + "\n"


def _scenario_defaults() -> str:
    from pathpool.sim.scenario import DEFAULTS

    rows = ["| name | value |", "|---|---|"] + [f"| `{k}` | `{v}` |" for k, v in DEFAULTS.items()]
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown: str, **_kw) -> str:
    if "{{ algorithms }}" in markdown:
        markdown = markdown.replace("{{ algorithms }}", _algorithms())
    if "{{ scenario_defaults }}" in markdown:
        markdown = markdown.replace("{{ scenario_defaults }}", _scenario_defaults())
    markdown = re.sub(r"\{\{ include (\S+) \}\}", lambda m: _include(m.group(1)), markdown)
    markdown = re.sub(r"\{\{ notebook (\S+) \}\}", lambda m: _notebook(m.group(1)), markdown)
    return markdown.replace("{{ cli_reference }}", _cli_reference())
