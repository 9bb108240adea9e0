#!/usr/bin/env python3
"""Where a kernel subflow's snd_ssthresh of ~2^31 comes from (issue: kssth).

Some cached kernel runs (RSF Table 2 s2-s4; LIA, OLIA, Balia, RSF-DB) show one subflow with
snd_ssthresh = 2,165,326,096 = 0x81104110 and, in PRR's first step of the recovery that follows
(Linux 6.18 ``tcp_cwnd_reduction``, delta < 0 branch), cwnd = in_flight + ceil(ssthresh *
prr_delivered / prior_cwnd) - prr_out of 0.5-1.8e9 packets. ``scan`` lists those runs of a
kernel cache from their cwnd series (every one is consistent with that one ssthresh value);
``run`` re-runs the report's plans of one RSF experiment into a cache of its own (never the
shared one), keeping the raw per-tick ``tcp_info``, while copying the kernel's trace_pipe into
``OUT/trace.txt``: with the debug objects (``make -C kernel PP_DEBUG=1 bpf``) every ssthresh
call of ours (``pp_ss <sk> r=<returned>``), every state change (``pp_st``) and any
snd_ssthresh above 2^20 that set_state finds (``pp_huge``) are logged there; ``trace``
matches each ``pp_huge`` with the socket's last ``pp_ss`` before it.

    python research/engine_gap/kernel_ssthresh_probe.py scan --cache KCACHE
    flock /run/pathpool-kernel.lock python research/engine_gap/kernel_ssthresh_probe.py run \\
        --only table2_s3 --algorithms balia lia --seeds 1 2 3 --out KCACHE/kssth
    python research/engine_gap/kernel_ssthresh_probe.py trace --out KCACHE/kssth
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

#: snd_ssthresh values no ssthresh op of ours returns: above the glue's bound (2^20 segments,
#: kernel/include/pp_cc_math.h pp_cwnd_bound) and not Linux's initial TCP_INFINITE_SSTHRESH.
BOUND = 1 << 20
INFINITE = 0x7FFFFFFF
TRACE_PIPE = Path("/sys/kernel/tracing/trace_pipe")


def huge(ssthresh: int) -> bool:
    """Whether ``ssthresh`` is one no ssthresh op of ours returns.

    Examples
    --------
    >>> huge(0x81104110), huge(INFINITE), huge(2)
    (True, False, False)
    """
    return ssthresh > BOUND and ssthresh != INFINITE


def prr_first_cwnd(ssthresh: int, prior_cwnd: int, prr_delivered: int, in_flight: int,
                   prr_out: int = 0) -> int:
    """cwnd after one step of PRR's proportional branch (Linux 6.18 ``tcp_cwnd_reduction``).

    ``delta = (int)(ssthresh - in_flight)`` is negative for any ssthresh >= 2^31 (the u32
    difference read as int), so the kernel takes the proportional branch, ``sndcnt =
    div_u64(ssthresh * prr_delivered + prior_cwnd - 1, prior_cwnd) - prr_out``, at least 1
    when nothing was sent yet, and sets cwnd = in_flight + sndcnt.

    Examples
    --------
    >>> prr_first_cwnd(0x81104110, prior_cwnd=2, prr_delivered=1, in_flight=1)
    1082663049
    """
    delta = ((ssthresh - in_flight + (1 << 31)) % (1 << 32)) - (1 << 31)
    if delta >= 0:
        raise ValueError("ssthresh - in_flight >= 0: PRR's other branch")
    sndcnt = (ssthresh * prr_delivered + prior_cwnd - 1) // prior_cwnd - prr_out
    return in_flight + max(sndcnt, 0 if prr_out else 1)


def prr_fit(cwnd: int, ssthresh: int = 0x81104110, max_prior: int = 8,
            max_in_flight: int = 8) -> tuple[int, int, int] | None:
    """(prior_cwnd, prr_delivered, in_flight) of a first PRR step that gives ``cwnd`` from
    ``ssthresh`` (nothing sent yet in the recovery), the smallest first, or None.

    Examples
    --------
    >>> prr_fit(1082663049)
    (2, 1, 1)
    >>> prr_fit(935884704) is None
    True
    """
    for prior in range(1, max_prior + 1):
        for delivered in range(1, prior + 1):
            for in_flight in range(max_in_flight + 1):
                if ssthresh - in_flight < (1 << 31):
                    continue
                if prr_first_cwnd(ssthresh, prior, delivered, in_flight) == cwnd:
                    return prior, delivered, in_flight
    return None


def _gap():
    """``two_subflow_gap``, imported from beside this file (also when this file was loaded by path)."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    return importlib.import_module("two_subflow_gap")


def scan(args: argparse.Namespace) -> None:
    """Every run of a kernel cache with a cwnd sample above 2^20 packets, one line each."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from pathpool.reproduce.kernel import cache_root

    root = cache_root(Path(args.cache))
    n = 0
    for f in sorted(root.glob("*/series.parquet")):
        n += 1
        t = pq.read_table(f)
        cw = t.filter(pc.equal(t["metric"], "cwnd")).to_pandas()
        bad = cw[cw.value > BOUND]
        for sid, g in bad.groupby("id"):
            s = cw[cw.id == sid].sort_values("time_s")
            before = s[s.time_s < g.time_s.min()].value.tail(3).astype(int).tolist()
            first = int(g.sort_values("time_s").value.iloc[0])
            print(f"{f.parent.name} {g.experiment.iloc[0]} {g.run_algorithm.iloc[0]} "
                  f"seed {int(g.seed.iloc[0])} {sid} t={g.time_s.min():.1f}s "
                  f"samples={len(g)} first={first} before={before} "
                  f"prr_fit(prior, delivered, in_flight)={prr_fit(first)}")
    print(f"{n} runs scanned", file=sys.stderr)
    raw = Path(args.cache) / "s2gap-raw"
    for f in sorted(raw.glob("*.json")) if raw.is_dir() else []:
        for line in raw_hits(json.loads(f.read_text())):
            print(f"{f.stem} {line}")


def raw_hits(rec: dict) -> list[str]:
    """The first sample of each subflow whose raw ``tcp_info`` snd_ssthresh is :func:`huge`."""
    out = []
    for conn, s in rec["raw"]["senders"].items():
        seen = set()
        for i, smp in enumerate(s["samples"]):
            for j, sf in enumerate(smp["subflows"]):
                v = sf.get("snd_ssthresh", 0)
                if huge(v) and j not in seen:
                    seen.add(j)
                    out.append(f"{s['cc']} seed {rec.get('seed')} {conn}/{j} t={smp['t']:.1f}s "
                               f"ssthresh={v:#x} cwnd={sf['snd_cwnd']} ca_state={sf['ca_state']}")
    return out


def run(args: argparse.Namespace) -> None:
    """The report's plans of ``--only`` into ``--out`` with trace_pipe copied beside them."""
    from pathpool.reproduce.kernel import cache_root, run_kernel_jobs

    gap = _gap()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    kjobs = gap.kernel_jobs(gap.report_jobs(args.only, args.seeds, args.algorithms))
    gap._probe().keep_raw(kjobs, out / "raw")
    with open(out / "trace.txt", "ab") as fh:
        cat = subprocess.Popen(["cat", str(TRACE_PIPE)], stdout=fh)
        try:
            run_kernel_jobs(kjobs, cache_root(out), beds=args.beds,
                            progress=lambda d, n: print(f"runs {d}/{n}", file=sys.stderr,
                                                        flush=True))
        finally:
            cat.terminate()
            cat.wait()
    for f in sorted((out / "raw").glob("*.json")):
        for line in raw_hits(json.loads(f.read_text())):
            print(f"{f.stem} {line}")


_LINE = re.compile(r"^\s*(?P<task>.+?)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\].*?\s(?P<ts>\d+\.\d+):"
                   r".*?(?P<msg>pp_(?:ss|st|huge) .*)$")


def trace(args: argparse.Namespace) -> None:
    """Each ``pp_huge`` line of ``OUT/trace.txt`` with the socket's last lines before it."""
    last: dict[str, list[str]] = {}
    for line in (Path(args.out) / "trace.txt").read_text(errors="replace").splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        sk = m["msg"].split()[1]
        if m["msg"].startswith("pp_huge"):
            print("---", *last.get(sk, [])[-6:], line.strip(), sep="\n")
        last.setdefault(sk, []).append(line.strip())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("command", choices=["scan", "run", "trace"])
    p.add_argument("--cache", required=True, help="scan: a kernel cache (read only)")
    p.add_argument("--only", default="table2_s3")
    p.add_argument("--algorithms", nargs="+", default=None)
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2, 3])
    p.add_argument("--beds", type=int, default=3)
    p.add_argument("--out", required=True, help="run/trace: this probe's folder")
    a = p.parse_args()
    {"scan": scan, "run": run, "trace": trace}[a.command](a)


if __name__ == "__main__":
    main()
