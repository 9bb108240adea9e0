"""Written results: byte-for-byte determinism (also across --jobs) and atomic writing."""

from __future__ import annotations

from pathlib import Path

import pathpool
import pytest
from pathpool import atomic as pio
from pathpool.sim import results as results_mod
from pathpool.sim.results import RESULT_FILES

# timing.json holds wall-clock times; it is the one file that is not deterministic.
DETERMINISTIC = [f for f in RESULT_FILES if f != "timing.json"]


def _bytes(d: Path) -> dict[str, bytes]:
    return {name: (d / name).read_bytes() for name in DETERMINISTIC}


def test_same_scenario_and_seed_give_identical_files(tmp_path, tiny_dict):
    a = pathpool.run(tiny_dict).write(tmp_path / "a")
    b = pathpool.run(tiny_dict).write(tmp_path / "b")
    assert [p.name for p in a] == list(RESULT_FILES) == [p.name for p in b]
    assert _bytes(tmp_path / "a") == _bytes(tmp_path / "b")
    # and the comparison is not vacuous: another seed changes the tables
    c = tmp_path / "c"
    pathpool.run(tiny_dict, seeds=[3, 4]).write(c)
    assert (c / "flows.csv").read_bytes() != (tmp_path / "a" / "flows.csv").read_bytes()


def test_cli_output_does_not_depend_on_jobs(tmp_path, tiny_path, cli):
    r1 = cli("run", tiny_path, "-o", tmp_path / "j1", "--jobs", "1", "--seeds", "1,2,3", "-q")
    r2 = cli("run", tiny_path, "-o", tmp_path / "j2", "--jobs", "2", "--seeds", "1,2,3", "-q")
    assert (r1.code, r2.code) == (0, 0), (r1.err, r2.err)
    assert _bytes(tmp_path / "j1") == _bytes(tmp_path / "j2")
    flows = pathpool.read_results(tmp_path / "j2").flows
    assert list(flows["seed"].unique()) == [1, 2, 3]


def test_cli_run_prints_summary_and_writes_everything(tmp_path, tiny_path, cli):
    r = cli("run", tiny_path, "-o", tmp_path / "out", "--seeds", "5", "-j", "1")
    assert r.code == 0, r.err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(RESULT_FILES)
    assert "tiny" in r.out and "mp" in r.out and "Jain index" in r.out


def _crash_after_partial_write(real):
    def writer(table, where, *args, **kwargs):
        where.write(b"PAR1 half a file")
        raise OSError("disk full (simulated)")

    return writer


def test_crash_mid_write_leaves_no_partial_file(tmp_path, tiny_dict, monkeypatch):
    res = pathpool.run(tiny_dict, seeds=[1])
    monkeypatch.setattr(results_mod.pq, "write_table", _crash_after_partial_write(results_mod.pq.write_table))
    with pytest.raises(OSError, match="simulated"):
        res.write(tmp_path)
    assert list(tmp_path.iterdir()) == []  # neither the final name nor a temp file


def test_crash_mid_rewrite_keeps_the_old_file(tmp_path, tiny_dict, monkeypatch):
    res = pathpool.run(tiny_dict, seeds=[1])
    res.write(tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    monkeypatch.setattr(results_mod.pq, "write_table", _crash_after_partial_write(results_mod.pq.write_table))
    with pytest.raises(OSError):
        pathpool.run(tiny_dict, seeds=[2]).write(tmp_path)
    after = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert after == before


def test_atomic_write_replaces_whole_or_not_at_all(tmp_path):
    target = tmp_path / "f.txt"
    pio.atomic_write_text(target, "old\n")

    def boom(fh):
        fh.write(b"new but incomp")
        raise RuntimeError("crash")

    with pytest.raises(RuntimeError):
        pio.atomic_write(target, boom)
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]
    pio.atomic_write_text(target, "new\n")
    assert target.read_text() == "new\n"
    assert target.stat().st_mode & 0o777 != 0o600  # not mkstemp's private mode
