"""Fixtures for the investigations' own tests (``pytest research/TOPIC``); the product's test
suite (``tests/``) never collects or imports anything here."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

RESEARCH = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return RESEARCH.parent


@pytest.fixture(scope="session")
def script_module() -> Callable[[str], Any]:
    """``load(NAME)``: the module of ``research/*/NAME.py`` (the investigations are not a package)."""

    def load(name: str) -> Any:
        path = next(RESEARCH.glob(f"*/{name}.py"))
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    return load
