"""`pip install pathpool` brings what the main job (`pathpool reproduce`) needs and no more: the
Dask cluster backend is the `dask` extra, the documentation's tools the `docs` extra; without the
extra, --dask says in one line what to install."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _names(reqs: list[str]) -> set[str]:
    import re

    return {re.split(r"[\[<>=!~ ;]", r, maxsplit=1)[0].lower() for r in reqs}


def test_dask_and_the_docs_are_extras():
    p = _project()
    core = _names(p["dependencies"])
    assert "dask" not in core and "distributed" not in core
    assert {"dask"} <= _names(p["optional-dependencies"]["dask"])
    assert {"mkdocs", "nbclient", "ipykernel"} <= _names(p["optional-dependencies"]["docs"])
    # The main job's own needs stay in the core.
    assert {"numpy", "scipy", "pandas", "pyarrow", "matplotlib", "rich", "highspy", "markdown"} <= core


def test_reproduce_dask_without_the_extra_says_what_to_install(cli, monkeypatch, tmp_path):
    from pathpool.reproduce import runner

    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    monkeypatch.setattr(runner, "reproduce", lambda *a, **k: (_ for _ in ()).throw(AssertionError("ran")))
    r = cli("reproduce", "rsf", "-n", "1", "--dask", "local", "-o", tmp_path / "rep")
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert "pathpool[dask]" in r.err


def test_the_tutorial_imports_only_what_the_package_installs():
    import ast
    import json
    from importlib.metadata import packages_distributions

    dists = packages_distributions()
    core = _names(_project()["dependencies"])
    nb = json.loads((ROOT / "docs" / "tutorial.ipynb").read_text())
    outside = []
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        for node in ast.walk(ast.parse("".join(cell["source"]))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top == "pathpool":
                    continue
                if not {d.lower() for d in dists.get(top, [])} & core:
                    outside.append(name)
    assert not outside, outside
