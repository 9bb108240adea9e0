"""Atomic file writing: a reader (or a crash) never sees half a file.

Every result file is written to a temporary file in the destination directory, flushed to disk,
then renamed over the final name with :func:`os.replace`, which POSIX makes atomic within one
file system. On any error the temporary file is removed and the final name is left untouched.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

__all__ = ["atomic_write", "atomic_write_bytes", "atomic_write_text"]


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable; some file systems refuse to open a directory, which
    # only costs durability, never atomicity.
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: str | os.PathLike[str], write: Callable[[BinaryIO], None]) -> Path:
    """Create or replace ``path`` atomically with what ``write(fh)`` writes to a binary handle.

    Parameters
    ----------
    path : path-like
        Final file name. Its directory must exist.
    write : callable
        Called once with a binary file handle open on a temporary file in the same directory.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    path = Path(path)
    directory = path.parent
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
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


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Atomically write ``data`` to ``path``."""
    return atomic_write(path, lambda fh: fh.write(data))


def atomic_write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Atomically write ``text`` (UTF-8, newlines as given) to ``path``."""
    return atomic_write_bytes(path, text.encode("utf-8"))
