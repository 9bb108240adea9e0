"""One scenario, one meaning on both engines: the mapping refuses what the test bed would
silently run otherwise, and lists each field this scenario uses that the two engines read
differently (what ``pathpool compare`` warns about); its module docstring's table covers every
field the mapping reads."""

from __future__ import annotations

import re

import pytest
from pathpool.errors import ScenarioError
from pathpool.kernel import mapping
from pathpool.kernel.mapping import UnsupportedScenario, map_scenario


def _scenario(**flow) -> dict:
    return {
        "name": "t", "duration": "10s",
        "links": [{"name": "la", "rate": "10Mbps", "delay": "10ms", "buffer": "50pkt"},
                  {"name": "lb", "rate": "20Mbps", "delay": "20ms", "buffer": "60KB"}],
        "paths": [{"name": "a", "links": ["la"]}, {"name": "b", "links": ["lb"]}],
        "flows": [{"name": "m", "kind": "mptcp", "paths": ["a", "b"], "algorithm": "lia", **flow},
                  {"name": "t", "kind": "tcp", "path": "a", "algorithm": "reno", "recovery": "linux",
                   "send_jitter": 0}],
    }


def test_reordering_links_are_refused_naming_the_field():
    """The test bed delivers each path's packets in order: a reorder table must not be dropped
    silently."""
    sc = _scenario()
    sc["links"][1]["reorder"] = {"probability": 0.01, "extra_delay": "5ms"}
    with pytest.raises(UnsupportedScenario, match=r"links\[1\]\.reorder"):
        map_scenario(sc)


def test_defaults_that_differ_are_listed_per_field_with_the_way_to_agree():
    plan = map_scenario(_scenario())
    d = {x.field: x for x in plan.differences}
    # The MPTCP flow's defaults: no DSS bytes, RFC 6675 recovery. Its send jitter the bed
    # realises (each path's data held up to 0.5 ms): no line.
    assert d["flows[0].option_bytes"].same_by == "option_bytes = 28"
    assert "1420 payload bytes" in d["flows[0].option_bytes"].testbed
    assert d["flows[0].recovery"].same_by == 'recovery = "linux"'
    assert "flows[0].send_jitter" not in d
    assert "flows[0].scheduler" in d and d["flows[0].receive_window"].same_by == 'receive_window = "linux"'
    assert "flows[0].rcv_buffer" not in d   # a fixed window's size is named in receive_window's line
    # The TCP flow wrote what the test bed does: no recovery, option or scheduler line for it;
    # but its send jitter of 0 shares path a with the MPTCP flow's 0.5 ms, which the bed holds
    # its data for too.
    assert not {"flows[1].recovery", "flows[1].option_bytes", "flows[1].scheduler"} & set(d)
    assert "0.5 ms, the largest of the flows on path 'a'" in d["flows[1].send_jitter"].testbed
    # Links: a buffer in bytes (60 KB -> 40 packets); the rates mean the same (IP packets).
    assert not any(f.endswith(".rate") for f in d)
    assert "40 full-size packets" in d["links[1].buffer"].testbed and "links[0].buffer" not in d
    # Written as the test bed runs them, those differences go.
    agreed = map_scenario(_scenario(option_bytes=28, recovery="linux", send_jitter=0))
    assert not {"flows[0].option_bytes", "flows[0].recovery", "flows[0].send_jitter"} & \
        {x.field for x in agreed.differences}
    # One line per field, naming it and both meanings.
    line = d["flows[0].recovery"].line()
    assert line.startswith("flows[0].recovery: simulator: rfc6675") and "Linux test bed: " in line
    assert line.endswith('for the same on both: recovery = "linux"')


def test_the_send_jitter_is_each_paths_hold_on_the_bed():
    """The flows' ``send_jitter`` becomes each test-bed path's hold (the largest of the flows
    on it); without it (``send_jitter=False``, what the cached report runs had) the paths hold
    nothing, describe (and hash) as before the field existed, and the difference is listed."""
    plan = map_scenario(_scenario())
    assert [p.jitter_ms for p in plan.paths] == [pytest.approx(0.5)] * 2
    assert [p["jitter_ms"] for p in plan.describe()["paths"]] == [pytest.approx(0.5)] * 2
    off = map_scenario(_scenario(), send_jitter=False)
    assert [p.jitter_ms for p in off.paths] == [0.0, 0.0]
    assert all("jitter_ms" not in p for p in off.describe()["paths"])
    d = {x.field: x for x in off.differences}
    assert "0.5 ms" in d["flows[0].send_jitter"].simulator and "--kernel-send-jitter scenario" in \
        d["flows[0].send_jitter"].same_by
    assert "flows[1].send_jitter" not in d   # 0 written: nothing to hold
    # No flow asks for jitter: no path holds, and the plan describes as without the option.
    quiet = map_scenario(_scenario(send_jitter=0))
    assert quiet.describe() == map_scenario(_scenario(send_jitter=0), send_jitter=False).describe()
    # A TCP flow alone on path b with 2 ms: path b holds 2 ms, path a the MPTCP flow's 0.5 ms.
    sc = _scenario()
    sc["flows"][1].update(path="b", send_jitter="2ms")
    assert [p.jitter_ms for p in map_scenario(sc).paths] == [pytest.approx(0.5), pytest.approx(2.0)]
    # More than the forwarder holds is refused, naming the field (the simulator takes up to 1000 s).
    sc["flows"][1]["send_jitter"] = "1.5s"
    with pytest.raises(UnsupportedScenario, match=r"flows\[1\]\.send_jitter.*at most 1 s"):
        map_scenario(sc)
    assert map_scenario(sc, send_jitter=False).paths[1].jitter_ms == 0


def test_a_path_jitter_outside_its_range_is_refused():
    from pathpool.kernel.testbed import MAX_JITTER_MS, PathSpec

    PathSpec(jitter_ms=MAX_JITTER_MS).validate("paths[0]")
    for bad in (-0.1, MAX_JITTER_MS + 1):
        with pytest.raises(ValueError, match=r"paths\[0\]\.jitter_ms = .*must be in \[0, 1000\] ms"):
            PathSpec(jitter_ms=bad).validate("paths[0]")


def test_start_jitter_differs_unless_the_seeds_offsets_are_given():
    sc = _scenario(start_jitter="1s")
    assert "flows[0].start_jitter" in {x.field for x in map_scenario(sc).differences}
    plan = map_scenario(sc, start_offsets={"m": 250_000_000})
    assert "flows[0].start_jitter" not in {x.field for x in plan.differences}
    assert plan.flows[0].start_s == 0.25


def test_the_docstring_table_names_every_field_the_mapping_reads():
    """Every key of the validated scenario the mapping reads (``fl["..."]``, ``ld["..."]``,
    ``pd["..."]``, ``spec["..."]``) is a row of the table in its docstring."""
    import inspect

    src = inspect.getsource(mapping)
    read = set(re.findall(r'\b(?:fl|ld|pd|spec|links\[\w+\]\[1\]|m\.links\[\w+\]\[1\]|m\.paths\[\w+\]\[1\])'
                          r'\["(\w+)"\]', src))
    doc = mapping.__doc__
    rows = set(re.findall(r"^\| `([\w.]+)`", doc, flags=re.MULTILINE))
    names = {r.rsplit(".", 1)[-1] for r in rows}
    spec_key = {"rate_bps": "rate", "delay_s": "delay", "buffer_packets": "buffer", "buffer_bytes": "buffer",
                "ack_delay_s": "ack_delay", "size_bytes": "size", "start_s": "start", "stop_s": "stop",
                "start_jitter_s": "start_jitter", "send_jitter_s": "send_jitter", "option_bytes": "option_bytes",
                "rcv_buffer_bytes": "rcv_buffer", "metrics_interval_s": "interval", "duration_s": "duration",
                "write_size_bytes": "write_size", "written": None,
                "index": None, "name": None, "flows": None, "links": None, "paths": None}
    missing = sorted(k for k in read if spec_key.get(k, k) is not None and spec_key.get(k, k) not in names)
    assert len(read) > 20 and not missing, missing


def test_the_linux_reading_is_what_the_test_bed_runs():
    """scheduler, send buffers and restart after idle: the simulator's defaults (minimum RTT, no
    send buffer, no restart) are listed with the way to agree; ``reading = "linux"`` (or each
    field written) removes them, and the Linux scheduler is no longer refused. The reading
    includes Linux's delayed ACKs, so the other flow must keep the kernel's too."""
    linux_fields = {"flows[0].scheduler", "flows[0].send_buffer", "flows[0].slow_start_after_idle",
                    "flows[0].recovery", "flows[0].window_arithmetic"}
    d = {x.field: x for x in map_scenario(_scenario()).differences}
    assert linux_fields <= set(d)
    assert d["flows[0].scheduler"].same_by == 'scheduler = "linux"'
    assert d["flows[0].send_buffer"].same_by == 'send_buffer = "linux"'
    assert d["flows[0].slow_start_after_idle"].same_by == "slow_start_after_idle = true"
    # The pp_* controls keep whole segments across a reduction; the simulator's default keeps
    # the fraction.
    assert d["flows[0].window_arithmetic"].same_by == 'window_arithmetic = "linux"'
    assert d["flows[0].window_arithmetic"].simulator.startswith("real: ")
    with pytest.raises(UnsupportedScenario, match=r"flows\[0\]\.delayed_ack"):
        map_scenario(_scenario(reading="linux"))
    for written in ({"reading": "linux"},
                    {"scheduler": "linux", "send_buffer": "linux", "slow_start_after_idle": True,
                     "recovery": "linux", "delayed_ack": "linux", "window_arithmetic": "linux"}):
        sc = _scenario(**written)
        sc["flows"][1]["delayed_ack"] = "linux"
        plan = map_scenario(sc)
        assert not linux_fields & {x.field for x in plan.differences}, written
        assert plan.quickack is False
    with pytest.raises(UnsupportedScenario, match=r"flows\[0\]\.scheduler"):
        map_scenario(_scenario(scheduler="roundrobin"))


def test_linux_delayed_acks_are_the_kernels_own_with_no_warning():
    """``delayed_ack = "linux"`` is the receiver the test bed runs when it keeps the kernel's
    delayed ACKs (no ``quickack 1``): no difference line, unlike ``true`` (the simulator's fixed
    rule), whose line says to write "linux"."""
    def plan(value):
        sc = _scenario(delayed_ack=value)
        sc["flows"][1]["delayed_ack"] = value
        return map_scenario(sc)

    linux = plan("linux")
    assert linux.quickack is False and linux.describe()["quickack"] is False
    assert not [d for d in linux.differences if d.field.endswith("delayed_ack")]
    fixed = {d.field: d for d in plan(True).differences}
    assert plan(True).quickack is False
    assert fixed["flows[0].delayed_ack"].same_by == 'delayed_ack = "linux"'
    assert fixed["flows[1].delayed_ack"].simulator.startswith("true: ")
    # What the simulator reads is what the mapping sees: the flow dict says "linux".
    from pathpool import load_scenario
    spec = load_scenario(_scenario(delayed_ack="linux")).spec
    assert [f["delayed_ack"] for f in spec["flows"]] == ["linux", False]
    # Anything else is refused by the validator, naming the field and the allowed values.
    with pytest.raises(ScenarioError, match=r'flows\[0\]\.delayed_ack.*true, false, "linux"'):
        load_scenario(_scenario(delayed_ack="yes"))


def test_push_flags_are_listed_only_where_the_kernels_delayed_acks_read_them():
    """The kernel marks PSH on every multi-segment GSO packet; the simulator's default marks
    none. It matters only to a receiver with delayed ACKs: with an ACK per segment (the bed's
    ``quickack 1``) there is no line; with the kernel's delayed ACKs the line says to write
    ``push_flag = "linux"``, which the Linux reading does."""
    assert "flows[0].push_flag" not in {x.field for x in map_scenario(_scenario()).differences}

    def plan(**fields):
        sc = _scenario(delayed_ack="linux", **fields)
        sc["flows"][1]["delayed_ack"] = "linux"
        return {x.field: x for x in map_scenario(sc).differences}

    d = plan()
    assert d["flows[0].push_flag"].same_by == 'push_flag = "linux"'
    assert d["flows[0].push_flag"].simulator.startswith("none: ")
    assert "flows[0].push_flag" not in plan(reading="linux")
    assert "flows[0].push_flag" not in plan(scheduler="linux", push_flag="linux")


def test_as_testbed_runs_writes_every_difference_that_has_a_way_to_agree():
    """``as_testbed_runs``: after its overrides the mapping lists only what the simulator has no
    setting for (a buffer in bytes) and the jitter it keeps; each field it writes has the value the test bed runs."""
    from pathpool import load_scenario

    sc = _scenario(scheduler="minrtt", start_jitter="100ms")
    ov = mapping.as_testbed_runs(sc)
    assert "~flows.0.scheduler" in ov and 'flows.0.reading="linux"' in ov
    got = load_scenario(sc, ov)
    left = {d.field for d in map_scenario(got).differences}
    # The TCP flow's send jitter of 0 shares path a with the MPTCP flow's 0.5 ms (held for both).
    assert left == {"links[1].buffer", "flows[0].start_jitter", "flows[1].send_jitter"}, left
    m, t = got.spec["flows"]
    assert (m["scheduler"], m["send_buffer"], m["slow_start_after_idle"], m["recovery"]) == (
        "linux", "linux", True, "linux")
    assert [f["window_arithmetic"] for f in (m, t)] == ["linux", "linux"]
    assert [f["push_flag"] for f in (m, t)] == ["linux", "linux"]
    assert (m["option_bytes"], t["option_bytes"]) == (28, 0)   # DSS on the MPTCP subflows only
    assert m["delayed_ack"] is False and t["delayed_ack"] is False   # quickack on the bed: per segment
    # The start and send jitter stay as written (the flow's default 0.5 ms, the TCP's 0): the
    # hosts' timing noise, which the bed holds each path's data for.
    assert m["start_jitter_s"] == pytest.approx(0.1)
    assert m["send_jitter_s"] == pytest.approx(0.0005) and t["send_jitter_s"] == 0
    # Both write as the bed's sender (select(), 64 KiB per send()); the MPTCP subflow joins as
    # the kernel's path manager opens it.
    assert [(f["writer"], f["write_size_bytes"]) for f in (m, t)] == [("poll", 65536)] * 2
    assert m["joins"] == "linux_peer_first"
    # Both receive windows autotune as the kernel's, up to its tcp_rmem[2].
    assert [(f["receive_window"], f["rcv_buffer_bytes"]) for f in (m, t)] == [("linux", 32 << 20)] * 2
    # A bed that starts every flow at its written start: the simulator's flows start there too,
    # spread as the bed's sender processes come up (two flows, both from 0 to the end: 16 ms).
    still = load_scenario(sc, mapping.as_testbed_runs(sc, start_jitter=False))
    assert [f["start_jitter_s"] for f in still.spec["flows"]] == [pytest.approx(0.016)] * 2
    assert {d.field for d in map_scenario(still).differences} == left | {"flows[1].start_jitter"}
    # The bed's delayed ACKs (true or "linux" written) are the kernel's: "linux" in the simulator.
    d = _scenario(delayed_ack=True)
    d["flows"][1]["delayed_ack"] = True
    assert [f["delayed_ack"] for f in load_scenario(d, mapping.as_testbed_runs(d)).spec["flows"]] == [
        "linux", "linux"]


def test_the_bed_start_spread_follows_its_sender_start_up():
    """Flows the bed starts at their written starts begin as their sender processes come up:
    8 ms per flow in the run when every flow runs from 0 to the end (the senders connect as they
    start), 0.06 ms per flow when one starts late or stops early (all wait for one clock)."""
    from pathpool import load_scenario

    sc = load_scenario(_scenario())
    assert mapping.bed_start_spread(sc.spec) == pytest.approx(2 * 0.008)
    five = load_scenario(sc, ["flows.1.count=4"])
    assert mapping.bed_start_spread(five.spec) == pytest.approx(5 * 0.008)
    for late in (["flows.1.start=1.0"], ["flows.1.stop=1.0"]):
        timed = load_scenario(sc, late)
        assert mapping.bed_start_spread(timed.spec) == pytest.approx(2 * 0.00006), late
        ov = mapping.as_testbed_runs(timed, start_jitter=False)
        assert [f["start_jitter_s"] for f in load_scenario(timed, ov).spec["flows"]] == [
            pytest.approx(2 * 0.00006)] * 2
    # A stop at the run's end is no stop: the run is not timed.
    end = load_scenario(sc, [f"flows.1.stop={sc.spec['duration_s']}"])
    assert mapping.bed_start_spread(end.spec) == pytest.approx(2 * 0.008)


def test_as_testbed_runs_leaves_the_test_bed_plan_as_it_was():
    """The overrides change only how the simulator reads a scenario: for every shipped scenario
    the test bed can run, the plan (paths, flows, algorithms, tunables, ACK policy) is the same
    with and without them, so ``compare --as-testbed`` and reproduce's agreement reading compare
    with the same kernel runs (and the kernel cache keys do not move)."""
    from pathpool import load_scenario
    from pathpool.data import scenarios_dir

    checked = 0
    for path in sorted(scenarios_dir().rglob("*.toml")):
        try:
            sc = load_scenario(path)
            before = map_scenario(sc).describe()
        except ScenarioError:   # a rate-control scenario file, or one the test bed cannot run
            continue
        after = map_scenario(load_scenario(sc, mapping.as_testbed_runs(sc))).describe()
        for d in (before, after):
            d.pop("notes", None)
            d.pop("differences", None)
        assert after == before, path.name
        checked += 1
    assert checked >= 15, checked
