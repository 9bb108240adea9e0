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


# --- the bad-input corpus: one small file per mistake, tests/bad_scenarios/ ----------------------

CORPUS = Path(__file__).resolve().parents[1] / "bad_scenarios"
CORPUS_FILES = sorted(CORPUS.glob("*.toml"))


def _expected(path: Path) -> list[str]:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("# expect: "), f"{path.name}: first line must be '# expect: ...'"
    return [part.strip() for part in first.removeprefix("# expect: ").split("|")]


def test_corpus_is_there():
    assert len(CORPUS_FILES) >= 30


@pytest.mark.parametrize("path", CORPUS_FILES, ids=[p.stem for p in CORPUS_FILES])
def test_bad_input_corpus(path):
    with pytest.raises(ScenarioError) as info:
        pathpool.load_scenario(path)
    text = str(info.value)
    assert "\n" not in text
    for part in _expected(path):
        assert part in text, f"{path.name}: {part!r} not in {text!r}"


def test_cli_refuses_corpus_file_with_exit_2(cli):
    r = cli("validate", str(CORPUS / "name_dotdot.toml"))
    assert r.code == 2
    assert "name_dotdot.toml:2:8: name: " in r.err and "Traceback" not in r.err


@pytest.mark.parametrize(
    "value, kind",
    [(None, "NoneType"), (b"10Mbps", "bytes"), ({1, 2}, "set"), (object(), "object")],
    ids=["none", "bytes", "set", "object"],
)
def test_dict_values_that_are_not_toml_name_the_field(tiny_dict, value, kind):
    tiny_dict["links"][1]["rate"] = value
    with pytest.raises(ScenarioError) as info:
        pathpool.load_scenario(tiny_dict)
    e = info.value
    assert e.field == "links[1].rate"
    assert kind in e.message


def test_dict_huge_integer_gives_a_located_error_not_serde(tiny_dict):
    tiny_dict["duration"] = 10**30
    with pytest.raises(ScenarioError) as info:
        pathpool.load_scenario(tiny_dict)
    e = info.value
    assert e.field == "duration"
    assert "serde" not in str(e) and "untagged" not in str(e)


def test_large_runs_can_be_allowed():
    path = CORPUS / "events_too_many.toml"
    sc = pathpool.load_scenario(path, allow_large=True)
    assert sc.duration_s == 1e6


# --- overrides (--set) -------------------------------------------------------------------------


def test_overrides_apply_before_validation(tiny_path, tmp_path):
    sc = pathpool.load_scenario(tiny_path, overrides=["links.lb.rate=20Mbps", "duration=3", "flows.0.start=1s"])
    links = {ln["name"]: ln for ln in sc.spec["links"]}
    assert links["lb"]["rate_bps"] == 20e6
    assert sc.duration_s == 3.0
    assert sc.spec["flows"][0]["start_s"] == 1.0
    # The text a run uses is the overridden one, and validates to the same scenario.
    again = pathpool.load_scenario(_as_file(tmp_path, sc.text))
    assert again.spec["links"] == sc.spec["links"] and again.duration_s == 3.0


def _as_file(d: Path, text: str) -> Path:
    p = d / "rendered.toml"
    p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.parametrize(
    "override, field, part",
    [
        ("links.lb.rate=20MBps", "links[1].rate", "unknown rate unit"),
        ("links.nope.rate=20Mbps", "links", "no element \"nope\""),
        ("duration", "", "FIELD=VALUE"),
        ("flows.0.kind=udp", "flows[0].kind", "unknown flow kind"),
        ("duration=1e30s", "duration", "longer than the largest allowed"),
        ("~links.la.loss", "links[0].loss", 'no "loss" in links[0] to remove'),
        ("~links.zz", "links", 'no element "zz"'),
        ("~nope", "nope", 'no "nope" in the scenario to remove'),
        ("~links.lb.loss=1", "links.lb.loss", "a deletion takes no value"),
    ],
)
def test_override_errors_name_the_override(tiny_path, override, field, part):
    with pytest.raises(ScenarioError) as info:
        pathpool.load_scenario(tiny_path, overrides=[override])
    e = info.value
    assert e.origin == f"{tiny_path}: --set {override}"
    assert e.line is None and (e.field or "") == field and part in e.message
    assert str(e).startswith(f"{tiny_path}: --set {override}: ")


def test_deletions_remove_fields_and_elements(tiny_path):
    sc = pathpool.load_scenario(
        tiny_path, overrides=["~links.lb.loss", "~flows.tcp", "~metrics", "~paths.b", "~links.1",
                              'flows.mp.paths=["a"]']
    )
    assert [ln["name"] for ln in sc.spec["links"]] == ["la"]
    assert [p["name"] for p in sc.spec["paths"]] == ["a"]
    assert [f["name"] for f in sc.spec["flows"]] == ["mp"]
    assert sc.spec["metrics_interval_s"] == 0  # the default: no time series
    loss = pathpool.load_scenario(tiny_path, overrides=["~links.lb.loss"]).spec["links"][1]["loss"]
    assert loss == 0.0
    assert sc.text.splitlines()[0] == (f"# {tiny_path} --set ~links.lb.loss --set ~flows.tcp --set ~metrics "
                                       '--set ~paths.b --set ~links.1 --set flows.mp.paths=["a"]')


def test_cli_run_bad_deletion_exits_2_with_one_line(tiny_path, tmp_path, cli):
    r = cli("run", tiny_path, "--set", "~links.la.los", "-o", tmp_path / "out")
    assert r.code == 2
    assert r.err == (f"{tiny_path}: --set ~links.la.los: links[0].los: no \"los\" in links[0] to remove "
                     "(allowed: a field the scenario writes: buffer, delay, name, rate)\n")
    assert not (tmp_path / "out").exists()


def test_error_outside_overrides_keeps_its_file_line(tmp_path, good):
    text = good.replace('algorithm = "lia"', 'algorithm = "lai"')
    path = _write(tmp_path, text)
    with pytest.raises(ScenarioError) as info:
        pathpool.load_scenario(path, overrides=["duration=5"])
    assert info.value.line == _line_of(text, '"lai"') and info.value.origin == str(path)


# --- the validated scenario handed over by Rust -------------------------------------------------


def test_spec_has_si_units_and_defaults(tiny_path):
    sc = pathpool.load_scenario(tiny_path)
    spec = sc.spec
    assert spec["name"] == sc.name and spec["duration_s"] == sc.duration_s
    for ln in spec["links"]:
        assert isinstance(ln["rate_bps"], int) and isinstance(ln["delay_s"], float)
        assert (ln["buffer_packets"] is None) != (ln["buffer_bytes"] is None)
    f = spec["flows"][0]
    defaults = pathpool.sim.scenario.DEFAULTS
    assert f["mss"] == defaults["mss"] == 1448
    assert f["rcv_buffer_bytes"] == defaults["rcv_buffer_bytes"]
    assert f["send_jitter_s"] == defaults["send_jitter_s"] == 0.0005
    assert [x["index"] for x in spec["flows"]] == list(range(len(spec["flows"])))


def test_reproduce_table_is_passed_through_untyped(tmp_path):
    from pathpool.reproduce.experiments import scenario_root

    path = scenario_root() / "rsf2020" / "fig4_bandwidth.toml"
    sc = pathpool.load_scenario(path)
    assert sc.extensions["reproduce"]["paper"] == "rsf"
    assert "[reproduce]" not in sc.text and "reproduce" not in pathpool.load_scenario(_as_file(tmp_path, sc.text)).extensions


def test_huge_seed_ranges_are_refused_before_expansion():
    from pathpool.sim.runner import MAX_SEEDS, parse_seeds

    with pytest.raises(ValueError, match=f"100000000 seeds given; at most {MAX_SEEDS}"):
        parse_seeds("1-100000000")
    assert len(parse_seeds("1-200000", max_seeds=None)) == 200000
    assert parse_seeds("3,1-2") == [3, 1, 2]


def test_many_distinct_seeds_are_accepted_and_one_repeat_refused(tiny_dict):
    from pathpool.sim.runner import _check_seeds

    seeds = list(range(100000))
    assert _check_seeds(seeds, "<x>") == tuple(seeds)
    with pytest.raises(ScenarioError, match="seed 99998 is listed twice"):
        _check_seeds([*seeds[:-1], 99998], "<x>")


def test_large_runs_are_refused_by_the_cli_unless_allowed(cli):
    path = CORPUS / "events_too_many.toml"
    r = cli("validate", path)
    assert r.code == 2 and "--allow-large" in r.err and len(r.err.strip().splitlines()) == 1
    r = cli("validate", "--allow-large", path)
    assert r.code == 0 and r.out.startswith("ok ")


# --- flows.option_bytes -------------------------------------------------------------------------

OPTION_BYTES_ALLOWED = "bytes in 0..=28 (TCP option space beyond the timestamps), at most mss - 64"


@pytest.mark.parametrize("override, field, message, allowed", [
    ("flows[0].option_bytes=29", "flows[0].option_bytes", "size 29 is out of range", OPTION_BYTES_ALLOWED),
    ("flows.mp.option_bytes=-1", "flows[0].option_bytes", "size -1 is out of range", OPTION_BYTES_ALLOWED),
    ("flows[0].option_bytes=24ms", "flows[0].option_bytes", "unknown size unit", OPTION_BYTES_ALLOWED),
    ("flows[1].option_bytes=24", "flows[1].option_bytes", 'does not apply to kind = "rate"', None),
])
def test_cli_option_bytes_errors_are_one_line_naming_file_field_and_range(tiny_dict, tmp_path, cli,
                                                                            override, field, message, allowed):
    # flows[1] made a rate flow, on which option bytes have no meaning (it sends no TCP segments).
    tiny_dict["flows"][1] = {"name": "r", "kind": "rate", "paths": ["a"], "rates": [100]}
    path = tmp_path / "ob.toml"
    path.write_text(tomli_w.dumps(tiny_dict), encoding="utf-8")
    r = cli("run", path, "--set", override, "-o", tmp_path / "out")
    assert r.code == 2
    assert r.err.startswith(f"{path}: --set {override}: {field}: "), r.err
    assert message in r.err and r.err.count("\n") == 1, r.err
    if allowed:
        assert r.err.endswith(f"(allowed: {allowed})\n"), r.err
    assert not (tmp_path / "out").exists()


def test_option_bytes_in_the_spec_and_by_override(tiny_path, tmp_path):
    plain = pathpool.load_scenario(tiny_path)
    assert [f["option_bytes"] for f in plain.spec["flows"]] == [0, 0]
    sc = pathpool.load_scenario(tiny_path, overrides=["flows[0].option_bytes=24", "flows.tcp.option_bytes=12B"])
    assert [f["option_bytes"] for f in sc.spec["flows"]] == [24, 12]
    assert sc.text.splitlines()[0] == (f"# {tiny_path} --set flows[0].option_bytes=24 "
                                       "--set flows.tcp.option_bytes=12B")
    # The rendered document holds the values: validated again, it gives them.
    again = tmp_path / "again.toml"
    again.write_text(sc.text, encoding="utf-8")
    assert [f["option_bytes"] for f in pathpool.load_scenario(again).spec["flows"]] == [24, 12]
