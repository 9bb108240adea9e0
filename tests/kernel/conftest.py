"""Fixtures shared by the kernel tests."""

from __future__ import annotations

import pytest
from pathpool.kernel import loader


@pytest.fixture(scope="module")
def kernel_toolchain() -> None:
    """Skip (saying what is missing) unless this machine can build and load the BPF congestion
    controls and run test beds; then build them once for the module."""
    problems = loader.check_environment(need_toolchain=True)
    if problems:
        pytest.skip("; ".join(problems))
    loader.build()
