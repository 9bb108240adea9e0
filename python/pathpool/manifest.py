"""``manifest.json`` of a table set (a sweep's output, ``reproduce``'s ``results/``): every file
with its size and SHA-256, so that a reader can tell a complete set from a damaged or mixed one.

A run's result set has a manifest of its own format (:mod:`pathpool.sim.results`); this one
lists whatever files the set holds. Both are checked by :func:`check_table_set`.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pathpool.errors import ResultSetError

__all__ = ["TABLE_SET_FORMAT", "check_table_set", "sha256_file", "write_manifest"]

#: Format tag of a table set's ``manifest.json``.
TABLE_SET_FORMAT = "pathpool table set 1"


def sha256_file(path: Path) -> str:
    """The SHA-256 of a file's bytes, as hex (read in 1 MiB blocks)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_manifest(directory: str | Path, kind: str) -> Path:
    """Write ``directory/manifest.json`` listing every file there (not subfolders, not hidden
    files). Call it last, in the temporary directory of an atomic write, so the manifest and
    the files it lists appear together."""
    d = Path(directory)
    files = {p.name: {"bytes": p.stat().st_size, "sha256": sha256_file(p)} for p in sorted(d.iterdir())
             if p.is_file() and not p.name.startswith(".") and p.name != "manifest.json"}
    target = d / "manifest.json"
    target.write_text(json.dumps({"format": TABLE_SET_FORMAT, "kind": kind, "files": files}, indent=2) + "\n")
    return target


def check_table_set(directory: str | Path) -> dict[str, Any]:
    """The manifest of result directory ``directory`` (a run's result set or a table set) after
    checking that every file it lists is there, unchanged.

    Raises
    ------
    pathpool.errors.ResultSetError
        No such directory, no manifest, or a file missing, changed or from another run (one
        line naming it).
    """
    from pathpool.sim.results import MANIFEST_FORMAT, _check_set

    d = Path(directory)
    where = f"{d}: not one complete pathpool result set"
    if not d.is_dir():
        raise ResultSetError(f"{d}: no such result directory")
    try:
        manifest = json.loads((d / "manifest.json").read_bytes())
    except FileNotFoundError:
        raise ResultSetError(f"{where}: manifest.json is missing (an interrupted run, or one written by an older "
                             "pathpool: run it again)") from None
    except (OSError, ValueError) as e:
        raise ResultSetError(f"{where}: manifest.json cannot be read ({e})") from None
    fmt = manifest.get("format") if isinstance(manifest, dict) else None
    if fmt == MANIFEST_FORMAT:
        return _check_set(d)[0]
    if fmt != TABLE_SET_FORMAT or not isinstance(manifest.get("files"), dict):
        raise ResultSetError(f"{where}: manifest.json is of no format this pathpool reads")
    for name, meta in manifest["files"].items():
        p = d / name
        if not p.is_file():
            raise ResultSetError(f"{where}: {name} is missing")
        if p.stat().st_size != meta.get("bytes") or sha256_file(p) != meta.get("sha256"):
            raise ResultSetError(f"{where}: {name} is not the file manifest.json lists (changed or from another run)")
    return manifest
