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


def test_bench_refuses_bad_arguments_before_touching_the_kernel():
    from pathpool.kernel.bench import run_bench

    with pytest.raises(ValueError, match="regime 'warp'; allowed: paced, fast"):
        run_bench(regime="warp")
    with pytest.raises(ValueError, match="conns 0"):
        run_bench(regime="fast", conns=0)
    with pytest.raises(ValueError, match="cpu 100000"):
        run_bench(cpu=100000)


def test_bench_cli_unknown_algorithm_exits_2(capsys):
    from pathpool.cli import main

    assert main(["kernel", "bench", "--algorithms", "pp_lia,pp_nope"]) == 2
    err = capsys.readouterr().err
    assert "--algorithms pp_nope; allowed: pp_reno" in err


def test_bench_regimes():
    from pathpool.kernel.bench import REGIMES

    # The fast regime must keep a bottleneck (rate > 0): unshaped, the connections were
    # receive-window limited and cong_avoid returned early on nearly every ACK.
    assert REGIMES["fast"][0] > 0 and REGIMES["fast"][1] == 0
    assert REGIMES["paced"] == (50.0, 10.0, 1)


def test_bench_refuses_more_objects_than_one_loader_takes():
    from pathpool.kernel.bench import run_bench

    # 10 controls, their baseline and the yardstick: 21 objects, pp_loader takes 16.
    with pytest.raises(ValueError, match="21 objects; allowed: at most 16"):
        run_bench(baseline="main")
