"""``pathpool kernel bench --baseline``: another revision's controls under ``pb_*`` names."""

from __future__ import annotations

import pytest
from pathpool.kernel import loader
from pathpool.kernel.bench import baseline_name, build_baseline


def test_baseline_name():
    assert baseline_name("pp_lia") == "pb_lia"
    assert baseline_name("pp_rsflb") == "pb_rsflb"


def test_build_baseline_renames_the_registered_name(kernel_toolchain, tmp_path):
    (obj,) = build_baseline("HEAD", ("pp_olia",), tmp_path)
    data = obj.read_bytes()
    # The struct_ops map's name string is what the kernel registers.
    assert b"pb_olia\x00" in data
    assert b"pp_olia\x00" not in data


def test_build_baseline_unknown_revision_says_so(kernel_toolchain, tmp_path):
    with pytest.raises(loader.KernelError, match="no-such-rev"):
        build_baseline("no-such-rev", ("pp_lia",), tmp_path)
