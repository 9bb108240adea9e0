"""Atomic writing for every pathpool output: a reader, or a crash, never sees half a file or
half a set of files.

Each file is written to a temporary file in its destination directory, flushed to disk, then
renamed over the final name with :func:`os.replace`, which POSIX makes atomic within one file
system. On any error the temporary file is removed and the final name is left untouched (an older
complete file of that name survives).

A set of files that belong together (a result directory) is written by :func:`atomic_directory`
into a fresh hidden sibling directory and swapped in whole with Linux's ``renameat2(...,
RENAME_EXCHANGE)``, so the name shows the old complete set or the new complete set at every
instant. :func:`directory_lock` keeps two writers of one directory apart: the second is refused.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from pathpool.errors import OutputError

__all__ = [
    "atomic_directory",
    "atomic_path",
    "atomic_save_figure",
    "atomic_write",
    "atomic_write_bytes",
    "atomic_write_csv",
    "atomic_write_json",
    "atomic_write_text",
    "check_replaceable",
    "clean_stale",
    "directory_lock",
    "ensure_directory",
    "only",
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


def atomic_write_csv(path: str | os.PathLike[str], df: Any, *, mkdir: bool = True) -> Path:
    """Atomically write a pandas DataFrame as CSV (no index, ``\n`` line ends)."""
    return atomic_path(path, lambda tmp: df.to_csv(tmp, index=False), mkdir=mkdir)


def atomic_save_figure(path: str | os.PathLike[str], fig: Any, *, mkdir: bool = True, **savefig: Any) -> Path:
    """Atomically save a matplotlib figure; the format comes from the suffix of ``path``.

    Examples
    --------
    >>> atomic_save_figure("out/fig.svg", fig, dpi=120)  # doctest: +SKIP
    PosixPath('out/fig.svg')
    """
    fmt = Path(path).suffix.lstrip(".")
    return atomic_path(path, lambda tmp: fig.savefig(tmp, format=fmt, **savefig), mkdir=mkdir)


# -- directories ---------------------------------------------------------------------------------

# Locks this process holds, by absolute directory name: lets a command take the lock before a
# long run and the writer inside it find it already taken (flock would refuse a second open file
# description even in the same process).
_held: set[Path] = set()

_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100


def _sibling(path: Path, kind: str) -> str:
    return f".{path.name}.{kind}"


def _lock_name(path: Path) -> Path:
    return path.parent / _sibling(path, "lock")


@contextlib.contextmanager
def directory_lock(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold the write lock of directory ``path`` (taken at once, or refused).

    The lock is ``flock`` on a hidden sibling file ``.NAME.lock``, kept after use (removing a lock
    file races with the next writer opening it); the kernel drops the lock when its holder dies,
    however it dies. Re-entrant within one process.

    Parameters
    ----------
    path : path-like
        The directory to be written (it need not exist yet; its parent is created).

    Yields
    ------
    pathlib.Path
        ``path`` as an absolute path.

    Raises
    ------
    OutputError
        Another process holds the lock, or the parent cannot be created or written.

    Examples
    --------
    >>> with directory_lock("results/run1"):  # doctest: +SKIP
    ...     pass  # a second writer of results/run1 is refused meanwhile
    """
    path = Path(os.path.abspath(path))
    if path in _held:
        yield path
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(_lock_name(path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError as e:
        raise OutputError(f"{path}: cannot write here: {e.strerror or e}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputError(f"{path}: another process is writing this directory; wait for it or choose another") from None
        _held.add(path)
        try:
            yield path
        finally:
            _held.discard(path)
    finally:
        os.close(fd)  # releases the flock


def _exchange(a: Path, b: Path) -> bool:
    """Swap two names atomically (Linux 3.15+); False where the system or file system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    rc = renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def clean_stale(path: str | os.PathLike[str]) -> list[Path]:
    """Remove temporaries that killed writers of directory ``path`` left beside it.

    Only safe while holding :func:`directory_lock` of ``path`` (then no live writer owns them).

    Returns
    -------
    list of pathlib.Path
        What was removed.
    """
    path = Path(os.path.abspath(path))
    gone = []
    for kind in ("new-", "old-"):
        for p in path.parent.glob(_sibling(path, kind) + "*"):
            shutil.rmtree(p, ignore_errors=True)
            gone.append(p)
    return gone


@contextlib.contextmanager
def atomic_directory(
    path: str | os.PathLike[str], replaceable: Callable[[Path], bool] = lambda p: not any(p.iterdir())
) -> Iterator[Path]:
    """Build a directory in a hidden sibling and put it at ``path`` in one step.

    The body fills the yielded temporary directory; when it returns, the directory replaces
    ``path`` atomically (an existing ``path`` is swapped out and removed). If the body raises, or
    the process dies, ``path`` is untouched; temporaries of killed writers are removed by the next
    writer. Writers of one ``path`` are serialised by :func:`directory_lock` (the second refused).

    Parameters
    ----------
    path : path-like
        Final directory.
    replaceable : callable
        Called with an existing ``path``: True if it may be replaced. Default: only if empty, so
        a directory of someone's other files is never deleted.

    Yields
    ------
    pathlib.Path
        The temporary directory to fill.

    Raises
    ------
    OutputError
        ``path`` is a file, a directory ``replaceable`` refuses, not writable, or locked.

    Examples
    --------
    >>> with atomic_directory("out") as tmp:  # doctest: +SKIP
    ...     (tmp / "a.txt").write_text("a")
    ...     (tmp / "b.txt").write_text("b")  # readers see both files or neither
    """
    with directory_lock(path) as final:
        check_replaceable(final, replaceable)
        clean_stale(final)
        try:
            tmp = Path(tempfile.mkdtemp(prefix=_sibling(final, "new-"), dir=final.parent))
        except OSError as e:
            raise OutputError(f"{final}: cannot write here: {e.strerror or e}") from None
        try:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes 0700; results are shared like files
            yield tmp
            for f in tmp.iterdir():
                if f.is_file():  # a subdirectory (a cache moved in) brings its own, already durable
                    with open(f, "rb") as fh:
                        os.fsync(fh.fileno())
            _fsync_dir(tmp)
            if final.exists() and _exchange(tmp, final):
                _fsync_dir(final.parent)
                shutil.rmtree(tmp, ignore_errors=True)  # the old set, now under the temporary name
                return
            if final.exists():
                # No atomic exchange here: move the old set aside first. A kill between the two
                # renames leaves no set at `path` (never a mixed one); the old set is then removed
                # by the next writer as a stale temporary.
                old = Path(tempfile.mkdtemp(prefix=_sibling(final, "old-"), dir=final.parent))
                os.rename(final, old / "set")
                os.rename(tmp, final)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.rename(tmp, final)
            _fsync_dir(final.parent)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def ensure_directory(path: str | os.PathLike[str]) -> Path:
    """Create directory ``path`` (and parents) if missing, and check that it can be written.

    For commands that write many files under one folder: call it before the work, so that a bad
    ``--out`` fails at once with one line instead of after the work with a traceback.

    Raises
    ------
    OutputError
        ``path`` or an ancestor is a file, or it cannot be created or written.

    Examples
    --------
    >>> ensure_directory("report")  # doctest: +SKIP
    PosixPath('report')
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{path}: exists and is not a directory; choose a directory name")
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".pathpool-write-check.", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise OutputError(f"{path}: cannot write here: {e.strerror or e}") from None
    return path


def only(ours: Callable[[Path], bool]) -> Callable[[Path], bool]:
    """A ``replaceable`` test for :func:`atomic_directory`: a directory whose every entry is
    ``ours`` (hidden temporaries and locks always are). A refusal then names the first entry
    that is not.

    Examples
    --------
    >>> replaceable = only(lambda p: p.suffix == ".csv")
    >>> replaceable(Path("results/run1"))  # doctest: +SKIP
    True
    """
    def replaceable(directory: Path) -> bool:
        return _foreign(directory, ours) is None

    replaceable.ours = ours  # type: ignore[attr-defined]
    return replaceable


def _foreign(directory: Path, ours: Callable[[Path], bool]) -> Path | None:
    for p in sorted(directory.iterdir()):
        if not p.name.startswith(".") and not ours(p):
            return p
    return None


def check_replaceable(path: str | os.PathLike[str], replaceable: Callable[[Path], bool]) -> None:
    """Raise :class:`OutputError` unless ``path`` is absent or a directory ``replaceable`` accepts
    (naming the entry it refuses, for a test made by :func:`only`)."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise OutputError(f"{path}: exists and is not a directory; choose a directory name")
    if path.is_dir() and not replaceable(path):
        ours = getattr(replaceable, "ours", None)
        entry = _foreign(path, ours) if ours is not None else None
        named = f" ({entry.name}{'/' if entry.is_dir() else ''} is not part of one)" if entry else ""
        raise OutputError(
            f"{path}: exists and holds other files than a pathpool result set{named}; "
            "choose a new or empty directory (it would be replaced whole)"
        )
    parent = path.parent
    ancestor = next((p for p in (parent, *parent.parents) if p.exists()), parent)
    if not ancestor.is_dir():
        raise OutputError(f"{path}: cannot write here: {ancestor} is a file, not a directory")
    if parent.exists() and not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{path}: cannot write here: {parent} is not writable")
