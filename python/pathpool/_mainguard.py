"""Is pathpool being called from a script's top level without ``if __name__ == "__main__":``?

Worker processes are started with ``spawn``, which re-runs the main script in every worker. A
script that calls :func:`pathpool.run` at its top level without the guard would then start
workers from workers; Python refuses that and the pool dies with an unhelpful message. The
runners ask :func:`unguarded_main_call` first and run in this process instead, with a warning
that says how to get the cores back.
"""

from __future__ import annotations

import ast
import functools
import sys

__all__ = ["safe_workers", "unguarded_main_call"]


@functools.lru_cache(maxsize=8)
def _guard_spans(path: str) -> tuple[tuple[int, int], ...]:
    """Line spans of the top-level ``if __name__ == "__main__":`` blocks of a script."""
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return ()
    spans = []
    for node in tree.body:
        if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
            continue
        parts = [node.test.left, *node.test.comparators]
        names = {p.id for p in parts if isinstance(p, ast.Name)}
        consts = {p.value for p in parts if isinstance(p, ast.Constant)}
        if names == {"__name__"} and consts == {"__main__"}:
            spans.append((node.lineno, node.end_lineno or node.lineno))
    return tuple(spans)


def unguarded_main_call() -> str | None:
    """``"FILE:LINE"`` of the top-level statement of ``__main__`` that led here, if it is outside
    an ``if __name__ == "__main__":`` block and spawned workers would re-run it; else ``None``.

    Interactive sessions, ``python -c`` and notebooks have no main file to re-run: ``None``.

    Examples
    --------
    >>> unguarded_main_call() is None  # doctest: +SKIP
    True
    """
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or not path:
        return None
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals is vars(main) and frame.f_code.co_name == "<module>":
            line = frame.f_lineno
            if any(lo <= line <= hi for lo, hi in _guard_spans(path)):
                return None
            return f"{path}:{line}"
        frame = frame.f_back
    return None


def safe_workers(n: int) -> int:
    """``n`` worker processes, or 1 with a RuntimeWarning when spawned workers would re-run an
    unguarded script (see the module docstring)."""
    where = unguarded_main_call()
    if where is None:
        return n
    import warnings

    # stacklevel: past this function and the runner, to the user's call
    warnings.warn(
        f"pathpool.run is called at {where}, outside `if __name__ == \"__main__\":`; worker processes "
        f"would re-run the script, so the runs go one after another in this process. Put the call "
        f"under that guard to use {n} processes.",
        RuntimeWarning,
        stacklevel=3,
    )
    return 1
