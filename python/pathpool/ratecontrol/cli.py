"""``pathpool ratecontrol``: equation rates, the optimised allocation, and Pluntke & Rio's streaming run."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from pathpool.cliutil import (
    add_out,
    at_least,
    finite_float,
    positive_float,
    print_table,
    scenario_arg,
)
from pathpool.errors import EXIT_BAD_INPUT, fail

_TIME = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ms|s)?\s*$")


def parse_time(text: str, what: str) -> float:
    """Parse ``"20ms"``, ``"0.02s"`` or ``"0.02"`` (seconds) into seconds."""
    m = _TIME.match(text)
    if not m:
        raise argparse.ArgumentTypeError(f"{what}: {text!r} is not a time; use e.g. 20ms, 0.02s or 0.02")
    v = float(m.group(1))
    return v / 1000.0 if m.group(2) == "ms" else v


def _path_time(part: str, text: str, what: str) -> float:
    """A time in a path spec: its unit is required. ``testbed --path`` reads a bare number as
    milliseconds and a scenario as seconds, so a bare number here would be a guess either way."""
    try:
        float(part)
    except ValueError:
        pass
    else:
        raise argparse.ArgumentTypeError(
            f"--path {text!r}: {what} {part!r} has no unit; write {part}ms or {part}s (units: ns, us, ms, s, min)")
    from pathpool.sim.scenario import quantity

    try:
        return quantity("time", part)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"--path {text!r}: {what}: {e}") from None


def parse_path(text: str) -> tuple[float, float, float]:
    """Parse ``LOSS,RTT[,RTT_STD]`` (loss as 0.1 or 10%; times with their unit, 20ms or 0.02s);
    std defaults to the mean."""
    parts = [s.strip() for s in text.split(",")]
    if len(parts) not in (2, 3):
        raise argparse.ArgumentTypeError(f"--path {text!r}: expected LOSS,RTT[,RTT_STD], e.g. 0.1,20ms")
    try:
        loss = float(parts[0].rstrip("%")) / (100.0 if parts[0].endswith("%") else 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--path {text!r}: loss {parts[0]!r} is not a number") from None
    if not 0 < loss < 1:
        raise argparse.ArgumentTypeError(f"--path {text!r}: loss must lie in (0, 1); got {loss}")
    rtt = _path_time(parts[1], text, "RTT")
    std = _path_time(parts[2], text, "RTT_STD") if len(parts) == 3 else rtt
    if rtt <= 0:
        raise argparse.ArgumentTypeError(f"--path {text!r}: RTT must be > 0")
    return loss, rtt, std


def _cmd_rates(args: argparse.Namespace) -> int:
    import numpy as np
    from rich.console import Console
    from rich.table import Table

    from pathpool.ratecontrol import mptcp_rates, optimise, tcp_rate

    p = np.array([x[0] for x in args.path])
    rtt = np.array([x[1] for x in args.path])
    var = np.array([x[2] for x in args.path]) ** 2
    capped = mptcp_rates(p, rtt, cap=True)
    printed = mptcp_rates(p, rtt, cap=False)
    x_tcp = tcp_rate(p, rtt, args.tcp_formula)
    opt = optimise(p, rtt, var, args.deadline, args.probe, args.bound, tcp_formula=args.tcp_formula)
    if args.json:
        print(json.dumps({
            "paths": [{"loss": float(a), "rtt_s": float(b), "rtt_std_s": float(np.sqrt(c))} for a, b, c in zip(p, rtt, var)],
            "tcp_rate": x_tcp.tolist(), "mptcp_lia": capped.rates.tolist(), "mptcp_lia_a": capped.a,
            "mptcp_printed": printed.rates.tolist(), "mptcp_printed_a": printed.a,
            "late_bound": opt.late_bound.tolist(), "weights": opt.weights.tolist(),
            "optimised": opt.rates.tolist(), "optimised_goodput_bound": opt.goodput_bound, "method": opt.method,
        }, indent=2))
        return 0
    t = Table(title=f"Rates after Pluntke & Rio 2011 (packets/s); deadline {args.deadline * 1e3:g} ms, "
                    f"probing {args.probe:g}; P(late) bound: {args.bound}")
    for col in ("path", "p", "RTT ms", "x^TCP", "MPTCP LIA cap", "MPTCP printed", "P(late) <=",
                "weight", "optimised"):
        t.add_column(col, justify="right")
    for r in range(p.size):
        t.add_row(str(r + 1), f"{p[r]:g}", f"{rtt[r] * 1e3:g}", f"{x_tcp[r]:.1f}", f"{capped.rates[r]:.1f}",
                  f"{printed.rates[r]:.1f}", f"{opt.late_bound[r]:.4f}", f"{opt.weights[r]:.4f}", f"{opt.rates[r]:.1f}")
    t.add_row("sum", "", "", "", f"{capped.rates.sum():.1f}", f"{printed.rates.sum():.1f}", "", "",
              f"{opt.rates.sum():.1f}")
    c = Console()
    print_table(t, c)
    c.print(f"a (LIA cap) = {capped.a:.4f}; a (printed) = {printed.a:.4f}; "
            f"worst-case in-time goodput: MPTCP {opt.weights @ capped.rates:.1f}, optimised {opt.goodput_bound:.1f}"
            f" ({opt.method})")
    return 0


def _cmd_stream(args: argparse.Namespace) -> int:
    import pandas as pd
    from rich.console import Console
    from rich.table import Table

    from pathpool.atomic import atomic_write_csv, atomic_write_json
    from pathpool.ratecontrol.plots import plot_stream
    from pathpool.ratecontrol.stream import ConfigError, load_config, run_stream

    try:
        cfg = load_config(args.config)
    except ConfigError as e:
        return fail(f"error: {e}", EXIT_BAD_INPUT)
    over = {}
    if args.duration is not None:
        over["duration"] = args.duration
        over["switch_at"] = args.duration / 2 if args.switch_at is None else args.switch_at
    elif args.switch_at is not None:
        over["switch_at"] = args.switch_at
    if "switch_at" in over:
        # keep both averaging windows non-empty on short runs
        over["settle"] = min(cfg.settle, over["switch_at"] / 2, (over.get("duration", cfg.duration) - over["switch_at"]) / 2)
    if args.block_length is not None:
        over["block_length"] = args.block_length
    res = run_stream(cfg, seed=args.seed, **over)
    out = Path(args.output)
    atomic_write_csv(out / "intervals.csv", res.intervals)
    atomic_write_csv(out / "paths.csv", res.paths)
    files = plot_stream(res, out)
    summary = dict(res.summary)
    if args.sweep:
        rows = []
        for nb in (10, 20, 30, 50):
            for lm in ("measured", "chebyshev"):
                for dm in ("rtt", "half_rtt"):
                    s = run_stream(res.config, block_length=nb, fec_loss_model=lm, delay_model=dm).summary
                    rows.append({"block_length": nb, "fec_loss_model": lm, "delay_model": dm,
                                     "mptcp_goodput_pps": s["mptcp"]["goodput_pps"], "mptcp_fec_ratio": s["mptcp"]["fec_ratio"],
                                     "optimised_goodput_pps": s["optimised"]["goodput_pps"],
                                     "optimised_fec_ratio": s["optimised"]["fec_ratio"],
                                     "goodput_increase": s.get("goodput_increase")})
        atomic_write_csv(out / "sensitivity.csv", pd.DataFrame(rows))
        summary["sensitivity_csv"] = "sensitivity.csv"
    atomic_write_json(out / "summary.json", summary)
    if args.json:
        from pathpool.sim.results import json_value

        print(json.dumps(json_value(summary), indent=2))
        return 0
    t = Table(title=f"Pluntke & Rio 2011, Figure 1 (random seed {res.config.seed}) -> {out}")
    for col in ("controller", "goodput paper", "goodput ours", "FEC paper", "FEC ours", "throughput ours",
                "residual loss ours", "rates ours"):
        t.add_column(col, justify="right")
    pub = summary.get("published", {})
    for ph in ("mptcp", "optimised"):
        s = summary.get(ph) or {}
        pp = pub.get(ph, {})
        if not s:
            t.add_row(ph, f"{pp.get('goodput_pps', float('nan')):g}", "(no data)", "", "", "", "", "")
            continue
        t.add_row(ph, f"{pp.get('goodput_pps', float('nan')):g}", f"{s['goodput_pps']:.1f}",
                  f"{pp.get('fec_ratio', float('nan')):.0%}", f"{s['fec_ratio']:.0%}", f"{s['throughput_pps']:.1f}",
                  f"{s['residual_loss']:.4f}", " / ".join(f"{x:.1f}" for x in s["rates_pps"]))
    c = Console()
    print_table(t, c)
    if "goodput_increase" in summary:
        c.print(f"goodput increase: ours {summary['goodput_increase']:.0%}, Pluntke & Rio 2011 {pub.get('goodput_increase', float('nan')):.0%}")
    c.print("wrote: " + ", ".join(str(p.name) for p in [out / "intervals.csv", out / "paths.csv", out / "summary.json", *files]))
    return 0


def _cmd_packetsim(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from pathpool.atomic import atomic_write_csv, atomic_write_json
    from pathpool.errors import PathpoolError
    from pathpool.ratecontrol.packetsim import friendliness, run_rate_flow

    try:
        res = run_rate_flow(args.scenario, controller=args.controller, interval=args.interval, seed=args.seed,
                            flow=args.flow, loss_measure=args.loss_measure)
    except (PathpoolError, ValueError) as e:
        return fail(f"error: {e}", EXIT_BAD_INPUT)
    out = Path(args.output)
    files = res.results.write(out / "sim")
    atomic_write_csv(out / "intervals.csv", res.intervals)
    atomic_write_csv(out / "paths.csv", res.paths)
    summary: dict = {"scenario": res.results.scenario.origin, "flow": res.flow, "controller": res.controller,
                     "loss_measure": res.loss_measure, "seed": res.seed, "interval_s": res.interval}
    c = Console()
    try:
        fr = friendliness(res, warmup=args.warmup)
    except ValueError as e:
        fr = None
        c.print(f"no friendliness measurement: {e}")
    if fr is not None:
        summary["friendliness"] = fr
        t = Table(title=f"{res.flow} ({res.controller}, p from {res.loss_measure}, seed {res.seed}) on {fr['link']}, "
                        f"t > {fr['warmup_s']:g} s")
        for col in ("path", "p (packets)", "p (TFRC events)", "RTT ms", "rate pkt/s", "x^TCP sqrt2", "x^TCP sqrt3/2"):
            t.add_column(col, justify="right")
        for pp in fr["per_path"]:
            t.add_row(pp["path"], f"{pp['p']:.4f}", f"{pp['p_events']:.4f}", f"{pp['rtt_s'] * 1e3:.1f}",
                      f"{pp['rate_pps']:.1f}", f"{pp['x_tcp_packets_sqrt2_pps']:.1f}", f"{pp['x_tcp_packets_sqrt3_2_pps']:.1f}")
        print_table(t, c)
        c.print(f"shared paths {', '.join(fr['shared_paths'])}: rate flow {fr['rate_flow_arrived_bps'] / 1e6:.3f} Mbit/s arrived vs mean TCP "
                f"{fr['tcp_mean_bps'] / 1e6:.3f} Mbit/s over {len(fr['tcp_flows'])} flows: ratio {fr['ratio']:.3f}")
        c.print("TCP-friendly region (eq. 1) violation / max x^TCP: " + ", ".join(
            f"{k} {v['violation_rel']:+.3f}" for k, v in fr["region"].items()) + "  (<= 0: inside)")
        c.print(f"stream goodput {fr['rate_flow_goodput_pps']:.1f} packets/s at FEC {fr['rate_flow_fec_ratio']:.0%}")
    from pathpool.sim.results import json_value
    atomic_write_json(out / "summary.json", json_value(summary))
    c.print("wrote: " + ", ".join(str(p) for p in [out / "intervals.csv", out / "paths.csv", out / "summary.json"])
            + f" and {len(files)} simulator files in {out / 'sim'}")
    return 0


def _fraction(text: str) -> float:
    v = finite_float(text)
    if not 0 <= v < 1:
        raise argparse.ArgumentTypeError(f"must lie in [0, 1), got {text}")
    return v


def register(subparsers) -> None:
    """Add ``pathpool ratecontrol {rates,stream,packetsim}``."""
    rc = subparsers.add_parser("ratecontrol")
    sub = rc.add_subparsers(dest="rc_command", metavar="SUBCOMMAND")
    rc.set_defaults(func=lambda a: (rc.print_help(sys.stderr), 2)[1])

    r = sub.add_parser("rates", help="MPTCP equation rates, TCP rates and the optimised allocation for given paths")
    r.add_argument("--path", action="append", type=parse_path, required=True, metavar="LOSS,RTT[,STD]",
                   help="a path: loss rate and mean RTT (and RTT std, default = mean as for exponential RTTs); "
                        "times need their unit, e.g. 0.1,20ms or 2%%,0.1s")
    r.add_argument("--deadline", type=lambda s: parse_time(s, "--deadline"), default=0.3, help="deadline (default 300ms)")
    r.add_argument("--probe", type=_fraction, default=0.05,
                   help="probing fraction of the total rate, in [0, 1) (default 0.05)")
    r.add_argument("--bound", choices=("chebyshev", "cantelli"), default="chebyshev",
                   help="tail bound on P(late) used by the optimisation (default chebyshev)")
    r.add_argument("--tcp-formula", choices=("sqrt2", "sqrt3/2"), default="sqrt2",
                   help="x^TCP = 1/(RTT sqrt(2p)) or sqrt(3/2)/(RTT sqrt(p)) (default sqrt2)")
    r.add_argument("--json", action="store_true", help="print JSON instead of a table")
    r.set_defaults(func=_cmd_rates)

    s = sub.add_parser("stream", help="run Pluntke & Rio's streaming experiment (Figure 1) and compare with its numbers")
    s.add_argument("--config", default=None, type=scenario_arg,
                   help="scenario TOML or shipped name (default: the shipped pluntke2011/fig1_stream)")
    add_out(s, "results/ratecontrol/stream")
    s.add_argument("--seed", type=int, default=None, help="seed (default: the config's)")
    s.add_argument("--duration", type=positive_float, default=None,
                   help="seconds (switch moves to the middle unless --switch-at)")
    s.add_argument("--switch-at", type=positive_float, default=None,
                   help="time of the path switch, seconds (default: the config's)")
    s.add_argument("--block-length", type=at_least(1), default=None, help="FEC block length n")
    s.add_argument("--json", action="store_true", help="print the summary as JSON instead of a table")
    s.add_argument("--sweep", action="store_true",
                   help="also run block length x FEC loss model x delay model and write sensitivity.csv")
    s.set_defaults(func=_cmd_stream)

    k = sub.add_parser("packetsim", help="drive a simulator scenario's rate flow with Pluntke & Rio's controllers; "
                                         "measure its TCP-friendliness beside real TCP flows")
    k.add_argument("scenario", type=scenario_arg, help="simulator scenario with a kind = \"rate\" flow, e.g. "
                                    "pluntke2011/friendliness_shared_bottleneck (a shipped one, "
                                    "`pathpool scenarios list`)")
    k.add_argument("--controller", choices=("mptcp", "optimised", "fixed"), default=None,
                   help="default: the flow's controller field")
    k.add_argument("--loss-measure", choices=("packets", "events"), default="packets",
                   help="loss rate the equations use: lost packets/sent (Pluntke & Rio 2011) or TFRC loss events/sent (RFC 5348)")
    k.add_argument("--seed", type=int, default=None, help="default: the scenario's first seed")
    k.add_argument("--interval", type=positive_float, default=None, help="control interval, s (default: the flow's feedback_interval)")
    k.add_argument("--flow", default=None, help="the rate flow, if the scenario has several")
    k.add_argument("--warmup", type=finite_float, default=20.0, help="seconds left out of the friendliness averages (default 20)")
    add_out(k, "results/ratecontrol/packetsim")
    k.set_defaults(func=_cmd_packetsim)
