"""`pathpool analyze` tables piped into 80 columns keep every digit of every number."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

PYTHON_DIR = Path(__file__).resolve().parents[2] / "python"


def _pathpool(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{PYTHON_DIR}{os.pathsep}{os.environ.get('PYTHONPATH', '')}", "COLUMNS": "80"}
    return subprocess.run([sys.executable, "-c", "import sys; from pathpool.cli import main; sys.exit(main())", *args],
                          check=False, capture_output=True, text=True, env=env, timeout=600)


def _cells(df: pd.DataFrame) -> list[str]:
    return [f"{v:.4g}" if isinstance(v, float) else str(v) for v in df.to_numpy().ravel()]


def test_equilibrium_table_in_80_columns(tmp_path):
    r = _pathpool("analyze", "equilibrium", "-o", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "…" not in r.stdout
    df = pd.read_csv(tmp_path / "equilibrium_fig2_balia.csv")
    table = r.stdout.replace("│", " ").split()
    missing = [c for c in _cells(df) if c not in table]
    assert not missing, (missing, r.stdout)


def test_conditions_table_in_80_columns(tmp_path):
    r = _pathpool("analyze", "conditions", "--points", "5", "-o", str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "…" not in r.stdout, r.stdout
