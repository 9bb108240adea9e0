"""Lazy package exports: ``from pathpool.analysis import simulate`` imports the module on first use.

``pathpool --help`` and every command's ``register`` import subpackages (``pathpool.analysis.cli``
imports ``pathpool.analysis``); eager ``__init__`` imports would load scipy and pandas for that.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, names: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for a package exporting ``names`` (name -> defining module)."""
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__
