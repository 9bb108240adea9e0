#!/usr/bin/env python3
"""Where the CPU time per packet grows with the flow count, by source line, on this machine.

    bench/lines.py RUNSCN [SMALL LARGE]

Runs RUNSCN (an `examples/runscn` build) under `perf record -e cpu-clock` on two shapes of
scenarios/bench/bench.toml: SMALL = "N RATE_GBPS SECONDS" (default "12 1 20") and LARGE
(default "999 10 3"), both about 4-5 M data packets. Prints, for the source lines with the
most samples, each line's share of the samples at both sizes and its cost per data packet at
each (share x CPU seconds / data packets, in ns), largest growth first. This is what
cachegrind cannot show: cachegrind counts misses but models neither the hardware prefetchers
nor software prefetches, TLB walks, or how much of a miss the out-of-order core hides. Needs
`perf` with the cpu-clock software event (no hardware counters needed: this KVM guest has none).
Sampling skid puts a stalled load's samples on the instruction after it, so a hot line is
often the one after the load that waits. The machine is shared: the absolute ns move with the
load, the shares much less.
"""

import collections
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def scenario(path, n, gbps, secs):
    with open(os.path.join(ROOT, "scenarios/bench/bench.toml")) as f:
        text = f.read()
    subs = [
        (r"(?m)^count = 40$", f"count = {n // 3}"),
        (r'(?m)^rate = "1Gbps"$', f'rate = "{gbps}Gbps"'),
        (r'(?m)^duration = "30s"$', f'duration = "{secs}s"'),
    ]
    for pat, rep in subs:
        text, k = re.subn(pat, rep, text)
        if k == 0:
            sys.exit(f"scenarios/bench/bench.toml changed shape: no match for {pat}")
    with open(path, "w") as f:
        f.write(text)


def perf(*args):
    """stdout of `perf ARGS...` (which must succeed)."""
    return subprocess.run(["perf", *args], capture_output=True, text=True, check=True).stdout


def profile(runscn, scn, out):
    """Returns (data packets, CPU seconds, {srcline: share})."""
    ran = perf("record", "-q", "-e", "cpu-clock", "-F", "2000", "-o", out, runscn, scn, "1")
    packets = int(re.search(r"data packets (\d+)", ran).group(1))
    rep = perf("report", "-i", out, "--no-children", "--sort", "srcline", "--stdio")
    shares = {}
    for line in rep.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\S+)", line)
        if m:
            shares[m.group(2)] = float(m.group(1)) / 100
    # Samples at 2000 Hz of cpu-clock: CPU time = samples / 2000.
    n = perf("report", "-i", out, "--stdio", "-n", "--sort", "comm")
    samples = sum(int(m.group(1)) for m in re.finditer(r"(?m)^\s*[\d.]+%\s+(\d+)\s", n))
    return packets, samples / 2000, shares


def main():
    if len(sys.argv) not in (2, 4):
        sys.exit(__doc__)
    runscn = sys.argv[1]
    small = sys.argv[2].split() if len(sys.argv) == 4 else ["12", "1", "20"]
    large = sys.argv[3].split() if len(sys.argv) == 4 else ["999", "10", "3"]
    with tempfile.TemporaryDirectory() as tmp:
        res = []
        for tag, (n, g, s) in (("small", small), ("large", large)):
            scn = os.path.join(tmp, f"{tag}.toml")
            scenario(scn, int(n), g, s)
            res.append(profile(runscn, scn, os.path.join(tmp, f"{tag}.data")))
    (p1, c1, s1), (p2, c2, s2) = res
    ns1, ns2 = c1 * 1e9 / p1, c2 * 1e9 / p2
    print(f"small {' '.join(small)}: {p1} data packets, {ns1:.0f} ns CPU per packet")
    print(
        f"large {' '.join(large)}: {p2} data packets, {ns2:.0f} ns CPU per packet "
        f"({ns2 / ns1:.2f}x)"
    )
    rows = collections.defaultdict(lambda: [0.0, 0.0])
    for k, v in s1.items():
        rows[k][0] = v
    for k, v in s2.items():
        rows[k][1] = v
    table = sorted(rows.items(), key=lambda kv: -(kv[1][1] * ns2 - kv[1][0] * ns1))
    print(f"{'line':<40} {'share S':>8} {'share L':>8} {'ns S':>6} {'ns L':>6} {'growth':>7}")
    for k, (a, b) in table[:25]:
        print(f"{k:<40} {a:8.2%} {b:8.2%} {a * ns1:6.1f} {b * ns2:6.1f} {b * ns2 - a * ns1:7.1f}")


if __name__ == "__main__":
    main()
