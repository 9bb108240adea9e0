#!/usr/bin/env python3
"""Runs a scenario on the test bed as ``pathpool compare --as-testbed`` maps it, with every flow's
congestion control replaced (e.g. the kernel's own ``reno`` instead of ``pp_reno``), and prints
each run's rate of one flow over another from the senders' acknowledged bytes (an MPTCP flow's
subflows summed).

Separates the pp_* controls from the rest of the kernel: if the kernel's own control gives the
share the pp_* port gives, the difference from the simulator is not in the port.

    flock /run/pathpool-kernel.lock python research/engine_gap/kernel_cc_swap_probe.py \\
        SCENARIO.toml --cc reno --runs 5 --flows mptcp tcp --out OUT/run
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path


def acked_bytes(record: dict, flow: str) -> int:
    """Bytes the sender of ``flow`` had acknowledged at the end of a run record
    (:func:`pathpool.kernel.run.run_once`): the sum over its subflows."""
    return sum(int(sf["bytes_acked"]) for sf in record["raw"]["senders"][flow]["final"])


def share(record: dict, num: str, den: str) -> float:
    """``num``'s acknowledged bytes over ``den``'s in one run."""
    return acked_bytes(record, num) / acked_bytes(record, den)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("scenario", type=Path)
    ap.add_argument("--cc", required=True, help="kernel congestion control for every flow, e.g. reno")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--flows", nargs=2, default=["mptcp", "tcp"], metavar=("NUM", "DEN"))
    ap.add_argument("--max-duration", type=float, default=30.0)
    ap.add_argument("--out", type=Path, required=True, help="prefix of the raw run records (OUT_1.json, ...)")
    a = ap.parse_args(argv)

    from pathpool.kernel import loader
    from pathpool.kernel import run as krun
    from pathpool.kernel.mapping import map_scenario
    from pathpool.sim.scenario import load_scenario

    plan = map_scenario(load_scenario(a.scenario), max_duration_s=a.max_duration)
    plan = dataclasses.replace(plan, flows=[dataclasses.replace(f, cc=a.cc) for f in plan.flows])
    a.out.parent.mkdir(parents=True, exist_ok=True)
    loaded = krun.ensure_loaded(plan.kernel_algorithms(), plan.tunables)
    try:
        with krun.testbed_for(plan) as tb:
            for seed in range(1, a.runs + 1):
                rec = krun.run_once(tb, plan, seed)
                Path(f"{a.out}_{seed}.json").write_text(json.dumps(rec, default=str))
                print(f"run {seed}: {a.flows[0]}/{a.flows[1]} {share(rec, *a.flows):.3f}", flush=True)
    finally:
        if loaded:
            loader.unload(wait_freed_s=5.0)


if __name__ == "__main__":
    main()
