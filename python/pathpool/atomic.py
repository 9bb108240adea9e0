"""Atomic file writing for every pathpool output: a reader, or a crash, never sees half a file.

Each file is written to a temporary file in its destination directory, flushed to disk, then
renamed over the final name with :func:`os.replace`, which POSIX makes atomic within one file
system. On any error the temporary file is removed and the final name is left untouched (an older
complete file of that name survives).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

__all__ = [
    "atomic_path",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
]


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable; some file systems refuse to open a directory, which
    # only costs durability, never atomicity.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_path(
    path: str | os.PathLike[str], write: Callable[[str], Any], *, mkdir: bool = True
) -> Path:
    """Create or replace ``path`` atomically with what ``write(tmp)`` writes to the file ``tmp``.

    For writers that want a file name (``DataFrame.to_parquet``, ``Figure.savefig``, ...).

    Parameters
    ----------
    path : path-like
        Final file name.
    write : callable
        Called once with the name of a temporary file in the same directory (same suffix as
        ``path``, so writers that infer the format from it still work).
    mkdir : bool
        Create the parent directory if it is missing.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    path = Path(path)
    directory = path.parent
    if mkdir:
        directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=f".tmp{path.suffix}", dir=directory)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        # mkstemp creates 0600; results are meant to be shared like any other file.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(directory)
    return path


def atomic_write(
    path: str | os.PathLike[str], write: Callable[[BinaryIO], Any], *, mkdir: bool = False
) -> Path:
    """Create or replace ``path`` atomically with what ``write(fh)`` writes to a binary handle.

    Parameters
    ----------
    path : path-like
        Final file name. Its directory must exist unless ``mkdir``.
    write : callable
        Called once with a binary file handle open on a temporary file in the same directory.
    mkdir : bool
        Create the parent directory if it is missing.

    Returns
    -------
    pathlib.Path
        ``path``.
    """

    def to_file(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            write(fh)

    return atomic_path(path, to_file, mkdir=mkdir)


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, mkdir: bool = False) -> Path:
    """Atomically write ``data`` to ``path``."""
    return atomic_write(path, lambda fh: fh.write(data), mkdir=mkdir)


def atomic_write_text(path: str | os.PathLike[str], text: str, *, mkdir: bool = False) -> Path:
    """Atomically write ``text`` (UTF-8, newlines as given) to ``path``."""
    return atomic_write_bytes(path, text.encode("utf-8"), mkdir=mkdir)


def atomic_write_json(path: str | os.PathLike[str], obj: Any, *, mkdir: bool = True) -> Path:
    """Atomically write ``obj`` as indented JSON (keys in insertion order) and a final newline."""
    return atomic_write_text(path, json.dumps(obj, indent=2) + "\n", mkdir=mkdir)
