"""`pathpool.run(..., jobs=None)` from a script without `if __name__ == "__main__":` works (in one
process, with a warning saying how to use the cores) instead of dying in its workers."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """\
import pathpool
res = pathpool.run({path!r}, seeds=[1, 2], jobs=2)
print(res.flows["goodput_bps"].tolist())
"""
GUARDED = """\
import pathpool
if __name__ == "__main__":
    res = pathpool.run({path!r}, seeds=[1, 2], jobs=2)
    print(res.flows["goodput_bps"].tolist())
"""


def _script(tmp_path, text, repo_root):
    p = tmp_path / "script.py"
    p.write_text(text.format(path=str(repo_root / "scenarios/examples/two_paths.toml")))
    return subprocess.run([sys.executable, "-W", "always::RuntimeWarning", str(p)], capture_output=True,
                          text=True, cwd=tmp_path, timeout=300, check=False)


def test_unguarded_script_runs_in_one_process_with_a_warning(tmp_path, repo_root):
    bare = _script(tmp_path, SCRIPT, repo_root)
    assert bare.returncode == 0, bare.stderr
    assert "outside `if __name__ == \"__main__\":`" in bare.stderr and "script.py:2" in bare.stderr
    guarded = _script(tmp_path, GUARDED, repo_root)
    assert guarded.returncode == 0, guarded.stderr
    assert "RuntimeWarning" not in guarded.stderr
    assert bare.stdout == guarded.stdout  # same numbers, one process or two
