"""Bad scenarios: ScenarioError names file, line, column, field and allowed values; the CLI
prints that one line and exits 2."""

from __future__ import annotations

import pickle
from pathlib import Path

import pathpool
import pytest
import tomli_w
from pathpool import ScenarioError


def _line_of(text: str, needle: str) -> int:
    """1-based line of the only occurrence of ``needle``."""
    lines = [i + 1 for i, line in enumerate(text.splitlines()) if needle in line]
    assert len(lines) == 1, (needle, lines)
    return lines[0]


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "bad.toml"
    p.write_text(text, encoding="utf-8")
    return p


@pytest.fixture
def good(tiny_dict) -> str:
    return tomli_w.dumps(tiny_dict)


# (description, edit of the good text, the token on the offending line, field, part of allowed)
MISTAKES = [
    ("unknown algorithm", ('algorithm = "lia"', 'algorithm = "lai"'), '"lai"', "flows[0].algorithm", "lia"),
    ("misspelt field", ('delay = "30ms"', 'dealy = "30ms"'), "dealy", "links[1].dealy", "delay"),
    ("bad rate unit", ('rate = "5Mbps"', 'rate = "5 furlongs"'), "furlongs", "links[1].rate", "Mbps"),
    ("unknown link in a path", ('links = [\n    "lb",\n]', 'links = [\n    "lc",\n]'), '"lc"', "paths[1].links[0]", "la, lb"),
    ("probability out of range", ('loss = "0.5%"', "loss = 1.5"), "loss = 1.5", "links[1].loss", "[0, 1]"),
    ("unknown flow kind", ('kind = "tcp"', 'kind = "udp"'), '"udp"', "flows[1].kind", "tcp, mptcp"),
]


@pytest.mark.parametrize("what, edit, token, field, allowed", MISTAKES, ids=[m[0] for m in MISTAKES])
def test_mistake_is_located(tmp_path, good, what, edit, token, field, allowed):
    old, new = edit
    assert good.count(old) == 1, f"fixture text changed: {old!r} not found once"
    text = good.replace(old, new)
    path = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as info:
        pathpool.load_scenario(path)
    e = info.value
    assert e.origin == str(path)
    assert e.line == _line_of(text, token)
    assert e.column is not None and e.column >= 1
    assert e.field == field
    assert e.allowed is not None and allowed in e.allowed
    assert str(e).startswith(f"{path}:{e.line}:{e.column}: {field}: ")
    assert str(e).endswith(f"(allowed: {e.allowed})")


def test_toml_syntax_error_has_line(tmp_path, good):
    text = good.replace('name = "tiny"', 'name = "tiny')
    path = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as info:
        pathpool.load_scenario(path)
    assert info.value.line == _line_of(text, 'name = "tiny')


def test_missing_file():
    with pytest.raises(ScenarioError) as info:
        pathpool.load_scenario("/nonexistent/scenario.toml")
    assert info.value.origin == "/nonexistent/scenario.toml"
    assert info.value.line is None
    assert "no such file" in str(info.value)


def test_dict_errors_name_dict_origin_and_field(tiny_dict):
    tiny_dict["flows"][1]["algorithm"] = "nope"
    with pytest.raises(ScenarioError) as info:
        pathpool.run(tiny_dict)
    assert info.value.origin == "<dict>"
    assert info.value.field == "flows[1].algorithm"
    assert "lia" in info.value.allowed


def test_bad_seed_lists_are_rejected(tiny_dict):
    with pytest.raises(ScenarioError, match="listed twice"):
        pathpool.run(tiny_dict, seeds=[3, 3])
    with pytest.raises(ScenarioError, match="not allowed"):
        pathpool.run(tiny_dict, seeds=[-1])
    with pytest.raises(ScenarioError, match="no seeds"):
        pathpool.run(tiny_dict, seeds=[])
    with pytest.raises(ScenarioError, match="not allowed"):
        pathpool.run(tiny_dict, seeds=[1.5])


def test_scenario_error_pickles(tmp_path, good):
    path = _write(tmp_path, good.replace('algorithm = "lia"', 'algorithm = "lai"'))
    with pytest.raises(ScenarioError) as info:
        pathpool.load_scenario(path)
    back = pickle.loads(pickle.dumps(info.value))
    assert str(back) == str(info.value)
    assert (back.origin, back.line, back.column, back.field, back.allowed) == (
        info.value.origin, info.value.line, info.value.column, info.value.field, info.value.allowed,
    )


def test_cli_run_bad_scenario_exits_2_with_located_message(tmp_path, good, cli):
    text = good.replace('algorithm = "lia"', 'algorithm = "lai"')
    path = _write(tmp_path, text)
    r = cli("run", path, "-o", tmp_path / "out")
    assert r.code == 2
    line = _line_of(text, '"lai"')
    assert r.err.startswith(f"{path}:{line}:")
    assert "flows[0].algorithm: unknown algorithm" in r.err
    assert r.err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_cli_validate_reports_each_file(tmp_path, good, tiny_path, cli):
    bad = _write(tmp_path, good.replace('kind = "tcp"', 'kind = "udp"'))
    r = cli("validate", tiny_path, bad)
    assert r.code == 2
    assert f"ok {tiny_path}: tiny" in r.out
    assert r.err.startswith(f"{bad}:")
    assert cli("validate", tiny_path).code == 0


def test_installed_command_prints_no_traceback(tmp_path, good, cli_subprocess):
    path = _write(tmp_path, good.replace('rate = "5Mbps"', 'rate = "5 furlongs"'))
    r = cli_subprocess("run", path, "-o", tmp_path / "out")
    assert r.code == 2
    assert "Traceback" not in r.err
    assert r.err.startswith(f"{path}:")
    assert "links[1].rate" in r.err


def test_cli_missing_file_exits_2(tmp_path, cli):
    missing = tmp_path / "nope.toml"
    r = cli("run", missing, "-o", tmp_path / "out")
    assert (r.code, r.err) == (2, f"{missing}: no such file\n")


def test_scenario_without_flows_names_the_field(tmp_path, good):
    text = good[: good.index("[[flows]]")]
    path = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as info:
        pathpool.load_scenario(path)
    assert info.value.field == "flows"


def test_seed_list_syntax():
    from pathpool.sim.runner import parse_seeds

    assert parse_seeds("1,2,5-8") == [1, 2, 5, 6, 7, 8]
    assert parse_seeds(" 3 ") == [3]
    for bad in ("1,x", "5-2", "1-", "-3"):
        with pytest.raises(ValueError, match="bad seed"):
            parse_seeds(bad)


def test_cli_rejects_bad_seed_list(tiny_path, tmp_path, cli):
    r = cli("run", tiny_path, "-o", tmp_path / "out", "--seeds", "1,two")
    assert r.code == 2
    assert "bad seed 'two'" in r.err
