"""Atomic file writing for simulator results (see :mod:`pathpool.atomic`, which it re-exports)."""

from pathpool.atomic import atomic_write, atomic_write_bytes, atomic_write_text

__all__ = ["atomic_write", "atomic_write_bytes", "atomic_write_text"]
