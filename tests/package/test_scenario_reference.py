"""The scenario reference is generated from the validator's schema and is not stale."""

from __future__ import annotations

import json
import subprocess
import sys

import pathpool
from pathpool.sim.reference import render_blocks, update_reference


def test_committed_scenarios_md_is_generated_from_the_schema(repo_root):
    path = repo_root / "crates" / "pathpool-sim" / "SCENARIOS.md"
    text = path.read_text(encoding="utf-8")
    assert update_reference(text) == text, (
        "SCENARIOS.md is stale: python -m pathpool.sim.reference --write crates/pathpool-sim/SCENARIOS.md")
    # every generated block is present, so no table of the schema is left out of the file
    for name in render_blocks():
        assert f"<!-- schema:{name} -->" in text, name
    # every field of the schema appears in its table, with the validator's allowed text
    for f in pathpool.scenario_schema()["fields"]:
        assert f"| `{f['name']}` | {f['type']} |" in text, f
        assert f["allowed"].replace("|", "\\|") in text, f


def test_check_mode_fails_on_a_stale_file(tmp_path):
    stale = tmp_path / "S.md"
    stale.write_text("x\n<!-- schema:metrics -->\nold table\n<!-- /schema:metrics -->\n", encoding="utf-8")
    cmd = [sys.executable, "-m", "pathpool.sim.reference"]
    r = subprocess.run([*cmd, str(stale), "--check"], capture_output=True, text=True, check=False)
    assert r.returncode == 1 and "stale" in r.stderr
    assert subprocess.run([*cmd, str(stale), "--write"], check=False).returncode == 0
    assert "| `interval` | time |" in stale.read_text(encoding="utf-8")
    assert subprocess.run([*cmd, str(stale), "--check"], check=False).returncode == 0


def test_schema_fields_are_what_the_python_validator_accepts_at_their_bounds(repo_root):
    # The Rust tests check every bound; here one through the whole Python path, so the
    # exported schema and the validator Python calls are the same thing.
    from pathpool.errors import ScenarioError

    src = repo_root / "scenarios" / "examples" / "two_paths.toml"
    fields = {(f["table"], f["name"]): f for f in pathpool.scenario_schema()["fields"]}
    f = fields[("links", "delay")]
    for v in f["accept"]:
        pathpool.load_scenario(src, overrides=[f"links.0.delay={v}"])
    for v in f["refuse"]:
        try:
            pathpool.load_scenario(src, overrides=[f"links.0.delay={v}"])
        except ScenarioError as e:
            assert "links[0].delay" in str(e) and f"(allowed: {f['allowed']})" in str(e)
        else:
            raise AssertionError(v)


def test_cli_prints_the_schema(cli):
    r = cli("scenarios", "schema", "--json")
    assert r.code == 0 and json.loads(r.out) == pathpool.scenario_schema()
    r = cli("scenarios", "schema")
    assert r.code == 0 and "## [[links]]" in r.out and "| `rate` | rate | yes |" in r.out
