"""The simulator under its Linux reading against the real kernel, on the test bed (root, under
the machine's kernel lock; skips with the reason otherwise).

One MPTCP connection (LIA) alone over two clean 10 Mbit/s paths, the scenario written as the
test bed runs it (``reading = "linux"``: upstream's scheduler, send buffers, RACK-TLP, restart
after idle, Linux's delayed ACKs; the kernel's 24-byte DSS option; no host send jitter), so
``pathpool compare`` reports no difference for it but the rate limiter's framing and the
receive buffer's autotuning. The bound comes from what both engines measured on this set-up:
the simulator is deterministic here (18.88 Mbit/s for every seed: no loss, no jitter), the
kernel's three runs lie within 0.4% of each other, and kernel/simulator was 0.982-0.983 in three
repetitions of the test (the kernel's second subflow joins one handshake later). A ratio outside
[0.94, 1.03] means one engine changed.
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
               "option_bytes": 24, "send_jitter": 0}],
}


def test_the_scenario_means_the_same_on_both_engines():
    """Nothing the two engines read differently but what cannot be helped: the rate limiter's
    Ethernet framing and the receive buffer's autotuning."""
    fields = {d.field.split(".")[-1] for d in map_scenario(pathpool.load_scenario(SCENARIO)).differences}
    assert fields <= {"rate", "rcv_buffer"}, fields


def test_mptcp_goodput_agrees_between_the_engines(kernel_unclaimed):
    from pathpool.kernel.run import run_linux

    sim = pathpool.run(SCENARIO).flows["goodput_bps"].mean()
    kernel = run_linux(SCENARIO, seeds=[1, 2, 3], max_duration_s=10.0).flows["goodput_bps"]
    ratio = kernel.mean() / sim
    print(f"simulator {sim / 1e6:.2f} Mbit/s, kernel {list(kernel / 1e6)} Mbit/s, ratio {ratio:.3f}")
    assert 0.94 <= ratio <= 1.03
