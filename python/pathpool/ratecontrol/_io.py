"""Atomic output for the rate-control commands (built on :mod:`pathpool.atomic`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pathpool.atomic import atomic_path, atomic_write_json


def write_json(path: Path, obj: Any) -> Path:
    """Write ``obj`` as indented JSON, atomically."""
    return atomic_write_json(path, obj)


def write_csv(path: Path, df) -> Path:
    """Write a pandas DataFrame as CSV (no index), atomically."""
    return atomic_path(path, lambda tmp: df.to_csv(tmp, index=False))


def save_figure(path: Path, fig) -> Path:
    """Save a matplotlib figure (format from the suffix), atomically."""
    fmt = Path(path).suffix.lstrip(".")
    return atomic_path(path, lambda tmp: fig.savefig(tmp, format=fmt, dpi=120, bbox_inches="tight"))
