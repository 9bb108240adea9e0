"""What every ``--help`` says to someone with only the installed package: shipped scenario
names, never a checkout's paths; papers by authors and year, never by an internal label."""

from __future__ import annotations

import argparse
import re

import pytest
from pathpool.cli import COMMANDS, build_parser

CHECKOUT_PATH = re.compile(r"(?<![\w/])(scenarios|python|crates|docs)/[\w./-]+")
LABEL = re.compile(r"\bseed 00\d")


def _helps(parser: argparse.ArgumentParser, name: str):
    yield name, parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, p in action.choices.items():
                yield from _helps(p, f"{name} {sub}")


@pytest.mark.parametrize("command", list(COMMANDS))
def test_help_names_shipped_scenarios_and_papers(command, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100000")  # argparse wraps inside words
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    bad = []
    for name, text in _helps(sub.choices[command], command):
        bad += [f"{name}: {m.group(0)!r}" for m in CHECKOUT_PATH.finditer(text)]
        bad += [f"{name}: {m.group(0)!r}" for m in LABEL.finditer(text)]
    assert not bad, bad
