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


def _static_profile():
    import importlib.util

    path = loader.KERNEL_DIR / "test" / "static_profile.py"
    spec = importlib.util.spec_from_file_location("static_profile", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_probes_are_the_yardstick_plus_their_one_extra(kernel_toolchain):
    from pathpool.kernel.bench import PROBES, build_probes

    objs = build_probes()
    assert [o.name for o in objs] == [f"{n}.bpf.o" for n in PROBES]
    parse = _static_profile().parse
    yard = parse(loader.object_path(loader.YARDSTICK))["mr_cong_avoid"]["insns"]
    insns = {}
    for name, obj in zip(PROBES, objs, strict=True):
        # Registered under its own name (the loader reports programs by the map's name), with
        # the yardstick's callback names, so the bench finds them as it finds pp_minreno's.
        assert f"{name}\x00".encode() in obj.read_bytes()
        funcs = parse(obj)
        assert {"mr_cong_avoid", "mr_ssthresh", "mr_undo_cwnd"} <= set(funcs)
        insns[name] = funcs["mr_cong_avoid"]["insns"]
    # The padding is really there, N instructions apart, and nothing else grows with N.
    assert insns["pq_pad300"] - insns["pq_pad100"] == 200
    assert insns["pq_pad600"] - insns["pq_pad300"] == 300
    # minreno's arithmetic plus the four chains' setup and sum and the store: a few dozen
    # instructions around the padding, never fewer than the yardstick's.
    assert yard < insns["pq_pad100"] - 100 < yard + 40
    # The data probes: the lookup plus the reads or writes, more than the socket reads alone.
    for n in ("pq_hdr", "pq_hdrsmall", "pq_slot", "pq_lines"):
        assert insns[n] > insns["pq_sock"] > yard


def test_bench_counts_the_probes_against_the_loader_limit():
    from pathpool.kernel.bench import PROBES, run_bench

    # 10 controls, 8 probes and the yardstick: 19 objects.
    n = len(loader.ALGORITHMS) + len(PROBES) + 1
    with pytest.raises(ValueError, match=f"{n} objects; allowed: at most 16 .one loader, "
                                         "with the probes."):
        run_bench(probes=True)
