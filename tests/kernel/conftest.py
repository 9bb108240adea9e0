"""Fixtures shared by the kernel tests."""

from __future__ import annotations

import shutil

import pytest
from pathpool.kernel import loader


@pytest.fixture(scope="module")
def kernel_toolchain() -> None:
    """Skip (saying what is missing) unless this machine can build and load the BPF congestion
    controls and run test beds; then build them once for the module."""
    problems = loader.check_environment(need_toolchain=True)
    problems += [f"{tool} not found (a C compiler and make build kernel/)"
                 for tool in ("make", "cc") if shutil.which(tool) is None]
    if problems:
        pytest.skip("; ".join(problems))
    loader.build()


@pytest.fixture(scope="module")
def kernel_unclaimed(kernel_toolchain) -> None:
    """kernel_toolchain, and skip if pp_* are registered already (another loader, another
    test run on this machine): loading ours would clash with them, and unloading would remove
    theirs."""
    if loader.registered():
        pytest.skip(f"pp_* already registered by something else: {loader.registered()}")
