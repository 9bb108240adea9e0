"""``pathpool analyze ...``: fluid model, conditions, friendliness, game, cross-validation."""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pathpool.cliutil import (
    add_out,
    at_least,
    fail,
    finite_float,
    positive_float,
    print_table,
    seeds_arg,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["register"]


def _print(df: pd.DataFrame, title: str, args: argparse.Namespace | None = None) -> None:
    import numpy as np
    from rich.table import Table

    if args is not None and args.json:
        # Collected and printed as one JSON document when the command ends (see _command).
        args.tables.append({"title": title, "rows": json.loads(df.to_json(orient="records"))})
        return
    t = Table(title=title)
    for c in df.columns:
        t.add_column(str(c))
    for _, row in df.iterrows():
        t.add_row(*[f"{v:.4g}" if isinstance(v, (float, np.floating)) else str(v) for v in row])
    print_table(t)


def _flat_seeds(lists: list[list[int]]) -> list[int]:
    """``--seeds 1-3`` or, as older versions wrote it, ``--seeds 1 2 3``: one list either way."""
    if len(lists) > 1:
        print("pathpool analyze crossval: --seeds with spaces is deprecated; write them with commas, e.g. "
              + ",".join(str(s) for x in lists for s in x), file=sys.stderr)
    return [s for x in lists for s in x]


def _equilibrium(args) -> int:
    import numpy as np  # noqa: F401
    import pandas as pd  # noqa: F401

    from pathpool.analysis import crossval
    from pathpool.analysis.fluid import simulate, solve_equilibrium
    from pathpool.analysis.friendliness import fig1_network, fig2_network
    from pathpool.analysis.plots import plot_trajectory, save_figure
    from pathpool.atomic import atomic_write_csv

    builders = {
        "fig1": fig1_network,
        "fig2": fig2_network,
        "two_paths": lambda a: crossval.fluid_network("two_paths", a),
        "shared": lambda a: crossval.fluid_network("shared", a),
        "khalili": lambda a: crossval.fluid_network("khalili", a),
    }
    net = builders[args.network](args.algorithm)
    eq = solve_equilibrium(net)
    df = eq.table()
    out = Path(args.output)
    atomic_write_csv(out / f"equilibrium_{args.network}_{args.algorithm}.csv", df)
    _print(df, f"equilibrium ({args.network}, {args.algorithm}); residual {eq.residual:.2e}", args)
    if not any(a.price_dependent for a in net.algorithms):
        traj = simulate(net, t_end=args.t_end)
        save_figure(plot_trajectory(traj, net.route_names, eq.x), out / f"trajectory_{args.network}_{args.algorithm}")
    return 0


def _conditions(args) -> int:
    import numpy as np  # noqa: F401
    import pandas as pd

    from pathpool.analysis.conditions import table_one
    from pathpool.atomic import atomic_write_csv

    frames = []
    for rtt in ("equal", "different"):
        df = table_one(n_points=args.points, seed=args.seed, rtt=rtt, check_c1=args.c1)
        df.insert(1, "rtt", rtt)
        frames.append(df)
        _print(df.drop(columns=[c for c in df.columns if c.startswith("paper_")]),
               f"Table I regenerated ({rtt} RTTs; fraction of points where each condition holds)", args)
    atomic_write_csv(Path(args.output) / "table1.csv", pd.concat(frames))
    return 0


def _friendliness(args) -> int:
    import numpy as np  # noqa: F401
    import pandas as pd  # noqa: F401

    from pathpool.analysis.friendliness import friendliness
    from pathpool.analysis.plots import plot_friendliness, save_figure
    from pathpool.atomic import atomic_write_csv

    out = Path(args.output)
    for net in ("fig1", "fig2"):
        df = friendliness(network=net)
        atomic_write_csv(out / f"friendliness_{net}.csv", df)
        save_figure(plot_friendliness(df, f"friendliness, Peng et al. 2016, {net}"), out / f"friendliness_{net}")
        _print(df, f"friendliness ({net}); sorted by MP throughput", args)
    return 0


def _game(args) -> int:
    import numpy as np
    import pandas as pd

    from pathpool.analysis.game import RentSeekingGame, dsc_ratio_interval_k2
    from pathpool.analysis.plots import (
        plot_extragradient_path,
        plot_game_dynamics,
        plot_utility_surfaces,
        save_figure,
    )
    from pathpool.atomic import atomic_write_csv

    out = Path(args.output)
    game = RentSeekingGame(args.connections, args.paths, args.p_hat, mode=args.mode)
    z = np.array(args.z, float) if args.z else 1.0
    cap = np.array(args.capacity, float) if len(args.capacity) > 1 else float(args.capacity[0])
    sol = game.solve(z, cap)
    uni = game.uniqueness(z, cap, n_starts=args.starts)
    rows = [{"connection": n, "path": i, "rate": sol.lam[n, i]} for n in range(game.N) for i in range(game.K)]
    df = pd.DataFrame(rows)
    df.attrs.update(kkt=sol.kkt_residual)
    atomic_write_csv(out / "game_equilibrium.csv", df)
    summary = pd.DataFrame([{
        "kkt_residual": sol.kkt_residual, "natural_residual": sol.natural_residual,
        "iterations": sol.iterations, "uniqueness_spread": uni["spread"],
        "dsc_holds": game.dsc_holds(z, box=(1e-2 * np.sum(cap), np.sum(cap))),
        "multipliers": " ".join(f"{m:.6g}" for m in sol.multipliers),
    }])
    atomic_write_csv(out / "game_summary.csv", summary)
    _print(df, "normalized equilibrium", args)
    _print(summary, "game summary", args)
    B = float(np.sum(cap))
    rng = np.random.default_rng(args.seed)
    starts = [rng.uniform(0.0, 1.0, game.N * game.K) * B for _ in range(args.dynamics_starts)]
    flows = [game.projected_flow(z, cap, lam0=s0, t_end=args.t_end) for s0 in starts]
    rows = []
    for k, f in enumerate(flows):
        d = f.distance(sol.lam)
        rows.append({"dynamics": "projected flow", "start": k, "end": f"t={f.t[-1]:g}",
                     "final_distance": d[-1] / B, "max_distance_increase": max(0.0, float(np.max(np.diff(d)))) / B,
                     "steps": f.segments, "converged": bool(d[-1] <= 1e-6 * B)})
    brs = []
    if game.mode == "subflow":
        for k, s0 in enumerate(starts):
            b = game.best_response_dynamics(z, cap, lam0=s0, multipliers=sol.multipliers, order=args.br_order)
            brs.append(b)
            d = b.distance(sol.lam)
            rows.append({"dynamics": f"best response ({args.br_order})", "start": k, "end": f"round {b.rounds}",
                         "final_distance": d[-1] / B,
                         "max_distance_increase": max(0.0, float(np.max(np.diff(d)))) / B,
                         "steps": b.rounds, "converged": b.converged and bool(d[-1] <= 1e-6 * B)})
    dyn = pd.DataFrame(rows)
    atomic_write_csv(out / "game_dynamics.csv", dyn)
    _print(dyn, "dynamics from random starts (distances relative to B)", args)
    save_figure(plot_game_dynamics(game, cap, sol.lam, flows, brs, z=z, multipliers=sol.multipliers),
                out / "game_dynamics")
    if game.N * game.K == 2:
        sols = [game.solve(z, cap, lam0=s0, keep_path=True) for s0 in starts]
        save_figure(plot_extragradient_path(game, sols, cap), out / "game_extragradient")
        save_figure(plot_utility_surfaces(game, B), out / "game_utility_surfaces")
        lo, hi = dsc_ratio_interval_k2(1e-2 * B, B)
        atomic_write_csv(out / "game_dsc_region_k2.csv",
                         pd.DataFrame([{"box_lo": 1e-2 * B, "box_hi": B, "z2_over_z1_lo": lo, "z2_over_z1_hi": hi}]))
    return 0


def _crossval(args) -> int:
    import numpy as np  # noqa: F401
    import pandas as pd

    from pathpool.analysis import crossval
    from pathpool.atomic import atomic_write_csv

    frames = []
    for net in crossval.NETWORKS:
        for alg in crossval.CROSSVAL_ALGORITHMS:
            if args.fluid_only:
                frames.append(crossval.fluid_prediction(net, alg))
            else:
                frames.append(crossval.compare(net, alg, duration=args.duration, seeds=tuple(_flat_seeds(args.seeds))))
    df = pd.concat(frames, ignore_index=True)
    atomic_write_csv(Path(args.output) / "crossval.csv", df)
    show = df[df.subflow == -1].drop(columns=["subflow", "path", "price"])
    _print(show, "cross-validation (flow totals, packets/s)", args)
    return 0


def _algorithm(text: str) -> str:
    from pathpool.analysis.algorithms import get_algorithm

    try:
        get_algorithm(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _nonnegative(text: str) -> float:
    v = finite_float(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return v


def _command(fn):
    """Run an analysis; a ValueError from the model (bad combination of inputs) is one line, exit 2."""

    @functools.wraps(fn)
    def run(args: argparse.Namespace) -> int:
        args.tables = []
        try:
            code = fn(args)
        except ValueError as e:
            return fail(f"pathpool analyze {args.analyze_command}: {e}")
        if args.json:
            sys.stdout.write(json.dumps({"out": str(args.output), "tables": args.tables}, indent=2) + "\n")
        return code

    return run


def register(subparsers) -> None:
    """Add ``pathpool analyze`` and its subcommands to an argparse subparsers object."""
    p = subparsers.add_parser("analyze")
    sub = p.add_subparsers(dest="analyze_command", metavar="WHAT")
    p.set_defaults(func=lambda a: (p.print_help(sys.stderr), 2)[1])

    def common(sp):
        add_out(sp, "analysis-out")
        sp.add_argument("--json", action="store_true",
                        help="print the tables as one JSON document on stdout instead of rich tables")

    e = sub.add_parser("equilibrium", help="solve (8)-(9) and integrate (3)-(4) on a test network")
    e.add_argument("--network", default="fig2", choices=["fig1", "fig2", "two_paths", "shared", "khalili"],
                   help="Fig. 1 or Fig. 2 of Peng et al. 2016, or a cross-validation network (default fig2)")
    e.add_argument("--algorithm", default="balia", type=_algorithm,
                   help="fluid-model algorithm with optional parameters, e.g. lia, balia, ewtcp(a=1), "
                   "generalized(eta=0.5,beta=0.2) (default balia)")
    e.add_argument("--t-end", type=positive_float, default=60.0, metavar="S",
                   help="integration time in seconds (default 60)")
    common(e)
    e.set_defaults(func=_command(_equilibrium))

    c = sub.add_parser("conditions", help="regenerate Table I of Peng et al. 2016 over random operating points")
    c.add_argument("--points", type=at_least(1), default=500, metavar="N",
                   help="random operating points per RTT setting (default 500)")
    c.add_argument("--seed", type=int, default=0, help="seed of the random points (default 0)")
    c.add_argument("--c1", action="store_true", help="also check C1 (slower)")
    common(c)
    c.set_defaults(func=_command(_conditions))

    f = sub.add_parser("friendliness", help="MP vs SP throughput in Peng et al. 2016, Fig. 1 and Fig. 2")
    common(f)
    f.set_defaults(func=_command(_friendliness))

    g = sub.add_parser("game", help="normalized equilibrium of the RSF rent-seeking game (Pokhrel & Williamson 2020)")
    g.add_argument("--connections", type=at_least(1), default=1, metavar="N",
                   help="multipath connections N (default 1)")
    g.add_argument("--paths", type=at_least(1), default=2, metavar="K",
                   help="paths K per connection (default 2; N x K must be at least 2)")
    g.add_argument("--p-hat", type=_nonnegative, default=0.1,
                   help="the loss/price weight p-hat of the utility (6), >= 0 (default 0.1)")
    g.add_argument("--z", type=_nonnegative, nargs="*", help="player weights, >= 0, one per player (default all 1)")
    g.add_argument("--capacity", type=positive_float, nargs="+", default=[1.0],
                   help="B (one value, constraint (7)/(12)) or K path capacities (16) (default 1)")
    g.add_argument("--starts", type=at_least(1), default=20, metavar="N",
                   help="random starts for the uniqueness check (default 20)")
    g.add_argument("--mode", default="subflow", choices=["subflow", "connection"],
                   help="players: subflows (6) or connections (15) (default subflow)")
    g.add_argument("--dynamics-starts", type=at_least(1), default=6, metavar="N",
                   help="random starts of the projected flow and best-response dynamics (default 6)")
    g.add_argument("--t-end", type=positive_float, default=100.0, metavar="T",
                   help="horizon of the projected flow (default 100)")
    g.add_argument("--br-order", default="sequential", choices=["sequential", "simultaneous"],
                   help="best response: players in turn (Gauss-Seidel) or all at once (Jacobi)")
    g.add_argument("--seed", type=int, default=0, help="seed of the random starts (default 0)")
    common(g)
    g.set_defaults(func=_command(_game))

    x = sub.add_parser("crossval", help="fluid equilibrium vs packet-level simulator")
    x.add_argument("--duration", type=positive_float, default=100.0, metavar="S",
                   help="simulated seconds per run (default 100)")
    x.add_argument("--seeds", type=seeds_arg, nargs="+", default=[[1, 2, 3]], metavar="LIST",
                   help="simulator seeds, e.g. 1,2,5-8 (default 1-3)")
    x.add_argument("--fluid-only", action="store_true", help="only the fluid predictions")
    common(x)
    x.set_defaults(func=_command(_crossval))
