"""kernel_ssthresh_probe.py: the reading of the ~2^31 ssthresh of some cached kernel runs.

The PRR step is checked against Linux 6.18 ``tcp_cwnd_reduction`` by hand; the fit against the
cwnd samples the shared cache holds (the numbers are copied here, so the test needs no cache);
the raw tcp_info scan and the trace matcher against hand-made records. No kernel needed.
"""

from __future__ import annotations

import pytest

S = 0x81104110   # 2,165,326,096: the snd_ssthresh of every affected run


@pytest.fixture(scope="module")
def probe(script_module):
    return script_module("kernel_ssthresh_probe")


def test_prr_first_step_by_hand(probe):
    # prior_cwnd 2, one segment delivered, one in flight, nothing sent yet in the recovery:
    # sndcnt = ceil(S * 1 / 2) = 1,082,663,048; cwnd = 1 + sndcnt.
    assert probe.prr_first_cwnd(S, 2, 1, 1) == 1 + 1_082_663_048
    # ceil(2 S / 5) = 866,130,439 (2 S = 4,330,652,192 = 5 * 866,130,438 + 2), two in flight.
    assert probe.prr_first_cwnd(S, 5, 2, 2) == 866_130_441
    # prr_out already sent is subtracted.
    assert probe.prr_first_cwnd(S, 2, 1, 1, prr_out=5) == 1_082_663_044
    # A sane ssthresh takes the other branch (delta >= 0), which this function does not model.
    with pytest.raises(ValueError):
        probe.prr_first_cwnd(2, 2, 1, 1)


@pytest.mark.parametrize(("cwnd", "before", "fit"), [
    # (first cwnd sample above 2^20, last cwnd sample before it, fitted step) from the shared
    # kernel cache: KCACHE/cache-linux/6.18.44-fc-v782, `scan` (2026-11-23).
    (1_082_663_049, 2, (2, 1, 1)),   # s2 olia seed 10 conn-3/0; s2 olia 3; s3 lia 3; s3 balia 1
    (721_775_368, 3, (3, 1, 2)),     # s3 balia seed 3 conn-1/0; s2 olia seed 2 conn-0/1
    (360_887_687, 6, (6, 1, 4)),     # s4 rsf-db seed 3 conn-3/1
    (866_130_441, 5, (5, 2, 2)),     # s4 lia seed 1 conn-2/0
    (541_331_527, 4, (4, 1, 3)),     # s4 lia seed 3 conn-3/0
])
def test_every_cached_jump_is_one_prr_step_from_the_same_ssthresh(probe, cwnd, before, fit):
    got = probe.prr_fit(cwnd, S)
    assert got == fit
    # prior_cwnd is the window the subflow had just before: the jump is the recovery's first ACK.
    assert got[0] == before


def test_a_later_sample_fits_no_first_step(probe):
    # s3 balia seed 3's third huge sample (55.2 s), after an undo re-raised ssthresh: no fit.
    assert probe.prr_fit(935_884_704, S) is None


def test_huge(probe):
    assert probe.huge(S)
    assert not probe.huge(probe.INFINITE)        # Linux's initial TCP_INFINITE_SSTHRESH
    assert not probe.huge(1 << 20)               # the glue's own bound is allowed
    assert probe.huge((1 << 20) + 1)


def test_raw_hits_reports_first_sample_per_subflow(probe):
    def sf(ss, cwnd, state=0):
        return {"snd_ssthresh": ss, "snd_cwnd": cwnd, "ca_state": state}

    rec = {"seed": 10, "raw": {"senders": {"conn-3": {"cc": "pp_olia", "samples": [
        {"t": 9.2, "subflows": [sf(2, 2), sf(probe.INFINITE, 10)]},
        {"t": 9.3, "subflows": [sf(S, 1_082_663_049, 3), sf(3, 7)]},
        {"t": 9.4, "subflows": [sf(S, 1_082_663_049, 3), sf(3, 7)]},
    ]}}}}
    hits = probe.raw_hits(rec)
    assert hits == [("pp_olia seed 10 conn-3/0 t=9.3s ssthresh=0x81104110 cwnd=1082663049 "
                     "ca_state=3")]


def test_trace_matches_huge_with_the_sockets_last_lines(probe, tmp_path, capsys):
    lines = [
        " pp_delayfwd-1 [000] ..s31 10.000001: bpf_trace_printk: pp_ss ffff1 r=2 cwnd=4",
        " pp_delayfwd-1 [000] ..s31 10.000002: bpf_trace_printk: pp_st ffff1 0->3",
        " pp_delayfwd-1 [001] ..s31 10.000003: bpf_trace_printk: pp_ss ffff2 r=5 cwnd=10",
        " pp_delayfwd-1 [000] ..s31 11.000001: bpf_trace_printk: pp_huge ffff1 ss=2165326096 new=0",
        "garbage line",
    ]
    (tmp_path / "trace.txt").write_text("\n".join(lines) + "\n")
    probe.trace(type("A", (), {"out": str(tmp_path)})())
    out = capsys.readouterr().out.splitlines()
    assert out == ["---", lines[0].strip(), lines[1].strip(), lines[3].strip()]
