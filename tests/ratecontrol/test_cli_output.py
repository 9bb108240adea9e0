"""What `pathpool ratecontrol` writes on stdout, in a separate process (the LP solver writes
from C, past Python's sys.stdout): under --json the document alone; tables that keep every digit
in 80 columns; path specs whose times carry their unit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"


def pathpool(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{PYTHON_DIR}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
           "COLUMNS": str(columns)}
    env.pop("FORCE_COLOR", None)
    return subprocess.run([sys.executable, "-c", "import sys; from pathpool.cli import main; sys.exit(main())",
                           *args], check=False, capture_output=True, text=True, env=env, timeout=300)


def test_rates_json_is_json_alone():
    r = pathpool("ratecontrol", "rates", "--path", "0.1,20ms", "--path", "2%,100ms", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert len(d["optimised"]) == 2


def test_stream_json_is_json_alone(tmp_path):
    r = pathpool("ratecontrol", "stream", "-o", str(tmp_path / "s"), "--duration", "20", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d == json.loads((tmp_path / "s" / "summary.json").read_text())


@pytest.mark.parametrize("spec", ["0.1,20", "0.1,20ms,5"])
def test_path_times_need_a_unit(spec):
    r = pathpool("ratecontrol", "rates", "--path", spec)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert "--path" in r.stderr and "ms" in r.stderr and "unit" in r.stderr


def test_rates_table_keeps_every_digit_in_80_columns():
    paths = ["0.00040125,123.456ms", "0.0123456,250ms", "0.2,1.5s"]
    r = pathpool("ratecontrol", "rates", *[a for p in paths for a in ("--path", p)])
    assert r.returncode == 0, r.stderr
    assert max(len(line) for line in r.stdout.splitlines()) <= 80
    assert "…" not in r.stdout
    d = json.loads(pathpool("ratecontrol", "rates", *[a for p in paths for a in ("--path", p)], "--json").stdout)
    for x in d["optimised"]:
        assert f"{x:.1f}" in r.stdout
    assert "0.00040125" in r.stdout and "123.456" in r.stdout
