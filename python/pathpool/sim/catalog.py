"""The algorithm catalogue, straight from ``pathpool_cc::catalog()``."""

from __future__ import annotations

from typing import Any

from pathpool import _core

__all__ = ["algorithms"]


def algorithms() -> list[dict[str, Any]]:
    """Every congestion-control algorithm pathpool implements.

    Returns
    -------
    list of dict
        One per algorithm, in catalogue order, with keys ``name``, ``summary``, ``source``
        (paper/RFC and equation), ``formula`` (window rules in plain text), ``coupled`` (bool),
        and ``params``: a list of dicts with ``name``, ``default`` (as written in TOML),
        ``allowed`` (in words) and ``doc``.

    Examples
    --------
    >>> import pathpool
    >>> lia = next(a for a in pathpool.algorithms() if a["name"] == "lia")
    >>> lia["coupled"]
    True
    >>> "reno" in [a["name"] for a in pathpool.algorithms()]
    True
    """
    return _core.algorithms()
