"""cliutil.print_table: every cell whole at any width; headers fold instead."""

from __future__ import annotations

import io

from pathpool.cliutil import _folded_lines, print_table
from rich.console import Console
from rich.table import Table


def _render(table: Table, width: int) -> str:
    buf = io.StringIO()
    print_table(table, Console(file=buf, width=width, highlight=False, color_system=None))
    return buf.getvalue()


def _table(n_cols: int) -> tuple[Table, list[str]]:
    t = Table(title="t")
    cells = [f"{0.000401234567 * (k + 1):.9f}" for k in range(n_cols)]
    for k in range(n_cols):
        t.add_column(f"goodput_bps_mean_of_flow_{k}", justify="right")
    t.add_row(*cells)
    return t, cells


def test_cells_are_whole_and_headers_fold_within_the_width():
    t, cells = _table(5)
    out = _render(t, 80)
    assert max(map(len, out.splitlines())) <= 80
    assert "…" not in out
    for c in cells:
        assert c in out


def test_a_table_wider_than_the_terminal_is_printed_whole():
    t, cells = _table(9)  # 9 x 11 characters of cells alone: more than 80 columns
    out = _render(t, 80)
    assert max(map(len, out.splitlines())) > 80
    for c in cells:
        assert c in out


def test_folded_lines():
    assert _folded_lines(["MPTCP", "LIA", "cap"], 7) == 2
    assert _folded_lines(["points"], 2) == 3
    assert _folded_lines([], 3) == 1


def test_numeric_command_tables_keep_every_digit_through_a_narrow_pipe(tmp_path):
    """`pathpool bench` (and the kernel's status, load, bench and run tables, which print the
    same way) never cut a number, however narrow the terminal."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": "40"}
    r = subprocess.run([sys.executable, "-m", "pathpool.cli", "bench", "examples/two_paths"], capture_output=True,
                       text=True, env=env, cwd=tmp_path, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    assert "…" not in r.stdout
    assert any(ch.isdigit() for ch in r.stdout)
