"""The documentation: the tutorial notebook runs, and the site builds with --strict."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest


def test_tutorial_notebook_runs(repo_root, tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(repo_root / "docs" / "tutorial.ipynb", as_version=4)
    nbclient.NotebookClient(nb, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    # the last cell shows the plot
    assert any("image/png" in o.get("data", {}) for o in nb.cells[-1].outputs)


def test_site_builds_strict(repo_root, tmp_path):
    mkdocs = shutil.which("mkdocs", path=str(repo_root / ".venv" / "bin")) or shutil.which("mkdocs")
    if mkdocs is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[dev]')")
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
                       cwd=repo_root, capture_output=True, text=True, timeout=600, check=False)
    assert r.returncode == 0, r.stderr[-4000:]
    for page in ("index.html", "cli/index.html", "scenarios/index.html", "api/index.html", "tutorial/index.html"):
        assert (tmp_path / "site" / page).is_file(), page
    cli = (tmp_path / "site" / "cli" / "index.html").read_text()
    assert "pathpool sweep" in cli and "--set" in cli
    import pathpool

    scen = (tmp_path / "site" / "scenarios" / "index.html").read_text()
    for a in pathpool.algorithms():  # the generated table has every registry entry
        assert f"<td><code>{a['name']}</code></td>" in scen
    for f in pathpool.scenario_schema()["fields"]:  # and every field of the validator's schema
        assert f"<td><code>{f['name']}</code></td>" in scen, f["name"]
