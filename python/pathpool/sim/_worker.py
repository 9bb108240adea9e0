"""Code that runs inside worker processes of a parallel run.

Kept free of pandas/pyarrow imports so a spawned worker starts in a few tens of milliseconds.
"""

from __future__ import annotations

from typing import Any

from pathpool import _core

_progress_queue: Any = None


def init(queue: Any) -> None:
    """Process-pool initializer: remember where to send progress (or None)."""
    global _progress_queue
    _progress_queue = queue


def run_one(text: str, origin: str, seed: int, index: int) -> dict[str, Any]:
    """Run one seed; progress goes to the queue as ``(index, fraction)``."""
    queue = _progress_queue
    if queue is None:
        return _core.run_scenario(text, origin, seed)
    return _core.run_scenario(text, origin, seed, lambda fraction: queue.put((index, fraction)))
