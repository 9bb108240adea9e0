"""One convention for seeds on every command: ``--seeds`` is a list of random seeds
(``1,2,5-8``); a number of repetitions is ``-n/--repetitions``. The older forms still work,
saying once what to write instead."""

from __future__ import annotations

import pytest
from pathpool.cli import build_parser


def _recorded(monkeypatch):
    from pathpool.reproduce import runner

    calls = []

    def fake(papers, **kw):
        calls.append(kw)
        raise ValueError("stopped by the test")

    monkeypatch.setattr(runner, "reproduce", fake)
    return calls


@pytest.mark.parametrize(("args", "n", "deprecated"), [
    (["-n", "3"], 3, False), (["--repetitions", "4"], 4, False), (["--seeds", "1-5"], 5, False),
    (["--seeds", "1,2,3"], 3, False), (["--seeds", "6"], 6, True), ([], 10, False),
])
def test_reproduce_repetitions(cli, monkeypatch, tmp_path, args, n, deprecated):
    calls = _recorded(monkeypatch)
    r = cli("reproduce", "rsf", *args, "-o", tmp_path / "rep")
    assert calls and calls[0]["seeds"] == n, (r.err, calls)
    assert ("deprecated" in r.err) == deprecated, r.err
    if deprecated:
        assert "-n 6" in r.err


@pytest.mark.parametrize("bad", ["2,5", "0-3", "3-4"])
def test_reproduce_seeds_must_be_one_to_n(cli, monkeypatch, tmp_path, bad):
    calls = _recorded(monkeypatch)
    r = cli("reproduce", "rsf", "--seeds", bad, "-o", tmp_path / "rep")
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert "--seeds" in r.err and "-n" in r.err and not calls


@pytest.mark.parametrize(("args", "seeds"), [
    (["--seeds", "1-3"], [1, 2, 3]), (["--seeds", "2,5"], [2, 5]), (["--seeds", "4", "7"], [4, 7]), ([], [1, 2, 3]),
])
def test_crossval_seeds_is_a_list(args, seeds):
    from pathpool.analysis.cli import _flat_seeds

    ns = build_parser("analyze").parse_args(["analyze", "crossval", *args])
    assert _flat_seeds(ns.seeds) == seeds


def test_help_uses_one_meaning(monkeypatch):
    monkeypatch.setenv("COLUMNS", "100000")
    for command, sub in (("run", None), ("reproduce", None), ("analyze", "crossval"), ("compare", None)):
        parser = build_parser(command)
        argv = [command, sub] if sub else [command]
        p = parser
        for word in argv:
            p = next(a for a in p._actions if a.__class__.__name__ == "_SubParsersAction").choices[word]
        help_text = p.format_help()
        if "--seeds" in help_text:
            at = help_text.index("\n  --seeds")
            line = help_text[at:help_text.find("\n  -", at + 1)]
            assert "1,2,5-8" in line or "1-5" in line or "e.g." in line, line
