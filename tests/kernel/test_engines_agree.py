"""The simulator under its Linux reading against the real kernel, on the test bed (root, under
the machine's kernel lock; skips with the reason otherwise).

One MPTCP connection (LIA) alone over two clean 10 Mbit/s paths, the scenario written as the
test bed runs it (``reading = "linux"``: upstream's scheduler, send buffers, RACK-TLP, restart
after idle, Linux's delayed ACKs; the kernel's 28 bytes of DSS option; no host send jitter), so
``pathpool compare`` reports no difference for it but the receive buffer's autotuning. The
bound comes from what both engines measured on this set-up: the simulator is deterministic here
(18.66 Mbit/s for every seed: no loss, no jitter), the kernel's three runs lie within 0.4% of
each other (18.66-18.74 in two repetitions of the test), kernel/simulator 1.001-1.002; measured before the bed's links
counted IP packets and the DSS option was 28 bytes it was 0.982-0.983. A ratio outside [0.94,
1.03] means one engine changed.

The second set-up is one where the connection stalls by head-of-line blocking: a connection
over a slow path (0.3 Mbit/s, 200 ms) and a fast one (4 Mbit/s, 60 ms). Linux's scheduler
queues a 64 KiB burst on the slow subflow; until that burst is through, nothing after it can be
DATA_ACKed, and the connection stalls once its writer stops writing. What decides the rate is
everything the Linux reading models on the send side: the bed sender's writes (64 KiB whenever
select() reports the socket writable, ``writer = "poll"``), the second subflow joining after its
handshake with no buffer in the connection's until then, the buffers' growth, where a burst
ends, and that each ``send()`` is pushed to the subflows before the next (``mptcp_sendmsg`` ends
in ``__mptcp_push_pending``), so a pick sees one write's data. Measured on the bed as it is now
(30 s runs, ACK per segment, Linux 6.18.44, 2-core AMD EPYC KVM): the kernel 3.77, 2.76, 2.76,
then 2.80 and 2.98 Mbit/s; its slow subflow took 62-65 KB at a time (steps of its
``send_queue_bytes``), one write. The simulator (deterministic here) says 2.48. It said 1.98
when its writer wrote on while the socket polled writable before pushing: its slow subflow
then took three data fragments (84-90 KB) at once. The bound is on the median of three kernel
runs (one run in five came out near 3.8): within [0.90, 1.25] of the simulator.
"""

from __future__ import annotations

import pathpool
from pathpool.kernel.mapping import map_scenario

SCENARIO = {
    "name": "agree", "duration": "8s", "seeds": [1, 2, 3],
    "links": [{"name": "la", "rate": "10Mbps", "delay": "10ms", "buffer": "50pkt"},
              {"name": "lb", "rate": "10Mbps", "delay": "20ms", "buffer": "50pkt"}],
    "paths": [{"name": "a", "links": ["la"]}, {"name": "b", "links": ["lb"]}],
    "flows": [{"name": "m", "kind": "mptcp", "paths": ["a", "b"], "algorithm": "lia", "reading": "linux",
               "option_bytes": 28, "send_jitter": 0, "writer": "poll"}],
}

SLOW_SUBFLOW = {
    "name": "slow_subflow", "duration": "30s", "seeds": [1, 2, 3],
    "links": [{"name": "slow", "rate": "0.3Mbps", "delay": "100ms", "buffer": "20pkt"},
              {"name": "fast", "rate": "4Mbps", "delay": "30ms", "buffer": "50pkt"}],
    "paths": [{"name": "p1", "links": ["slow"]}, {"name": "p2", "links": ["fast"]}],
    "flows": [{"name": "m", "kind": "mptcp", "paths": ["p1", "p2"], "algorithm": "lia", "reading": "linux",
               "delayed_ack": False, "option_bytes": 28, "send_jitter": 0, "writer": "poll"}],
}


def test_the_scenarios_mean_the_same_on_both_engines():
    """Nothing the two engines read differently but what cannot be helped: the receive buffer's
    autotuning."""
    for sc in (SCENARIO, SLOW_SUBFLOW):
        fields = {d.field.split(".")[-1] for d in map_scenario(pathpool.load_scenario(sc)).differences}
        assert fields <= {"rcv_buffer"}, (sc["name"], fields)
    # Without the bed's writer the mapping says so.
    blocking = {**SLOW_SUBFLOW, "flows": [{**SLOW_SUBFLOW["flows"][0], "writer": "blocking"}]}
    fields = {d.field.split(".")[-1] for d in map_scenario(pathpool.load_scenario(blocking)).differences}
    assert "writer" in fields


def test_mptcp_goodput_agrees_between_the_engines(kernel_unclaimed):
    from pathpool.kernel.run import run_linux

    sim = pathpool.run(SCENARIO).flows["goodput_bps"].mean()
    kernel = run_linux(SCENARIO, seeds=[1, 2, 3], max_duration_s=10.0).flows["goodput_bps"]
    ratio = kernel.mean() / sim
    print(f"simulator {sim / 1e6:.2f} Mbit/s, kernel {list(kernel / 1e6)} Mbit/s, ratio {ratio:.3f}")
    assert 0.94 <= ratio <= 1.03


def test_a_slow_subflow_stalls_the_connection_alike_on_both_engines(kernel_unclaimed):
    import statistics

    from pathpool.kernel.run import run_linux

    sim = pathpool.run(SLOW_SUBFLOW).flows["goodput_bps"].mean()
    kernel = run_linux(SLOW_SUBFLOW, seeds=[1, 2, 3], max_duration_s=35.0).flows["goodput_bps"]
    ratio = statistics.median(kernel) / sim
    print(f"simulator {sim / 1e6:.3f} Mbit/s, kernel {list(kernel / 1e6)} Mbit/s, median ratio {ratio:.3f}")
    assert 0.90 <= ratio <= 1.25
