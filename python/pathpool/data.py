"""Files shipped inside the package: the scenarios and the published numbers.

The scenario folder is the repository's ``scenarios/``; in the package it is ``pathpool/scenarios``
(a link to ``../../scenarios`` in the source tree, real files in a wheel), read through
:mod:`importlib.resources` so that the same code works from a checkout, an editable install and
an installed wheel, whatever the working directory.
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

__all__ = ["copy_scenario", "list_scenarios", "scenario_path", "scenarios_dir", "suggest_scenario"]


def scenarios_dir() -> Path:
    """The folder of shipped scenarios (``rsf2020/``, ``examples/``, ...).

    Returns
    -------
    pathlib.Path

    Examples
    --------
    >>> (scenarios_dir() / "examples" / "two_paths.toml").is_file()
    True
    """
    # A wheel or a checkout installs pathpool as plain files, so the Traversable is a real path;
    # a zip import would not be, and is refused with a clear message rather than half-working.
    root = resources.files("pathpool") / "scenarios"
    path = Path(str(root))
    if not path.is_dir():
        raise FileNotFoundError(
            f"{path}: the shipped scenarios are missing; reinstall pathpool from a wheel or a checkout"
        )
    return path


def list_scenarios() -> list[str]:
    """Names of the shipped scenarios, ``FOLDER/STEM`` (e.g. ``examples/two_paths``), sorted.

    Examples
    --------
    >>> "examples/two_paths" in list_scenarios()
    True
    """
    root = scenarios_dir()
    return sorted(p.relative_to(root).with_suffix("").as_posix() for p in root.rglob("*.toml"))


def scenario_path(name: str) -> Path:
    """The file of a shipped scenario, by name (``examples/two_paths``, ``.toml`` optional).

    Raises
    ------
    KeyError
        No shipped scenario has that name; the message lists the names.

    Examples
    --------
    >>> scenario_path("examples/two_paths").name
    'two_paths.toml'
    """
    stem = name.removesuffix(".toml")
    path = scenarios_dir() / f"{stem}.toml"
    if stem not in list_scenarios():
        raise KeyError(f"no shipped scenario {name!r} (allowed: {', '.join(list_scenarios())})")
    return path


def suggest_scenario(name: str) -> str | None:
    """The shipped scenario a misspelt or repository-relative name most likely means, or None.

    ``scenarios/examples/two_paths.toml`` (a checkout's path) means ``examples/two_paths``;
    otherwise the closest name by :func:`difflib.get_close_matches`.

    Examples
    --------
    >>> suggest_scenario("exmaples/two_path"), suggest_scenario("scenarios/examples/two_paths.toml")
    ('examples/two_paths', 'examples/two_paths')
    >>> suggest_scenario("no/such/thing") is None
    True
    """
    import difflib

    names = list_scenarios()
    stem = name.replace("\\", "/").removesuffix(".toml")
    for prefix in ("./", "scenarios/", "python/pathpool/scenarios/"):
        stem = stem.removeprefix(prefix)
    if stem in names:
        return stem
    close = difflib.get_close_matches(stem, names, n=1, cutoff=0.75)
    return close[0] if close else None


def copy_scenario(name: str, dest: str | Path) -> list[Path]:
    """Copy a shipped scenario, or a whole folder of them (``rsf2020``), into ``dest``.

    A folder keeps its other files (``published.csv``); existing files are never overwritten.

    Parameters
    ----------
    name : str
        ``FOLDER/STEM`` of one scenario, or ``FOLDER``.
    dest : path
        Target directory, created if needed.

    Returns
    -------
    list of pathlib.Path
        The files written.

    Raises
    ------
    KeyError
        Unknown name (the message lists the allowed ones).
    FileExistsError
        A target file exists already.

    Examples
    --------
    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> [p.name for p in copy_scenario("examples/two_paths", d)]
    ['two_paths.toml']
    """
    root = scenarios_dir()
    dest = Path(dest)
    folder = root / name.strip("/")
    if name.strip("/") and folder.is_dir() and folder.parent == root:
        sources = sorted(p for p in folder.rglob("*") if p.is_file())
        targets = [dest / folder.name / p.relative_to(folder) for p in sources]
    else:
        sources = [scenario_path(name)]
        targets = [dest / sources[0].name]
    for t in targets:
        if t.exists():
            raise FileExistsError(f"{t}: exists already; copy into another directory")
    for s, t in zip(sources, targets):
        t.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(s, t)
    return targets
