"""Atomic output: every file is written to a temporary name in its directory, then renamed."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable


def _atomic(path: Path, write: Callable[[str], None]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def write_json(path: Path, obj: Any) -> Path:
    """Write ``obj`` as indented JSON, atomically."""

    def w(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2, sort_keys=False)
            f.write("\n")

    return _atomic(path, w)


def write_csv(path: Path, df) -> Path:
    """Write a pandas DataFrame as CSV (no index), atomically."""
    return _atomic(path, lambda tmp: df.to_csv(tmp, index=False))


def save_figure(path: Path, fig) -> Path:
    """Save a matplotlib figure (format from the suffix), atomically."""
    fmt = Path(path).suffix.lstrip(".")
    return _atomic(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=120, bbox_inches="tight"))
