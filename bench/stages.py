#!/usr/bin/env python3
"""Instructions (or cache misses) per data packet by stage, from a callgrind profile.

    valgrind --tool=callgrind --dump-instr=yes [--cache-sim=yes --LL=524288,8,64] \
        --callgrind-out-file=OUT BINARY ARGS...
    bench/stages.py pathpool OUT BINARY DATA_PACKETS [EVENTS]
    bench/stages.py htsim OUT BINARY DATA_PACKETS [EVENTS]

pathpool's hot code is inlined into a few functions, so its costs are attributed per
instruction address through the inline chain (`addr2line -i`) to the innermost pathpool frame,
then to a stage by that frame's function. htsim (libhtsim.a built without debug information)
is attributed by the function callgrind names. EVENTS: callgrind's column numbers to sum
(`Ir` = 0, the default; with --cache-sim=yes `D1mr,D1mw` = 4,5 and `DLmr,DLmw` = 7,8).
"""

import collections
import re
import subprocess
import sys

# (stage, regex over "file function" of the innermost pathpool frame); first match wins.
PATHPOOL = [
    (
        "event queue (heap, lanes, calendar)",
        r"event\.rs|EventQueue|Heap::|Near::|prefetch|next_in_lane",
    ),
    ("RTT estimator", r"rtt_estimator|estimator_sample|record_rtt|srtt_ns"),
    (
        "congestion control (LIA/Reno, window integral)",
        r"algos/|controller\.rs|::grow$|account_cwnd|is_cwnd_limited| floor$|in_slow_start",
    ),
    ("ACK generation (SACK blocks, ACK packet)", r"send_ack|sack_blocks|alloc_with_sacks"),
    (
        "receiver (subflow + data-level reassembly)",
        r"on_data|Receiver::on_segment|DataReceiver|content_tag|mptcp::seg_len",
    ),
    (
        "sender on_ack (scoreboard, RFC 6675 SACK/loss marking)",
        (
            r"Conn>::on_ack|Sender::on_ack|Scoreboard::|mark_lost|first_is_lost|Seg::|AckEffect|"
            r"outstanding|Pool::sacks|set_flags|next_retx|Sender::seg_len"
        ),
    ),
    ("timers (RTO arm and fire, delayed ACK)", r"arm_rto|on_rto_event|on_delack"),
    (
        "send loop (scheduler, windows, segment build)",
        (
            r"try_send|send_segment|send_new|push_new|has_room|pick_subflow|next_data|cwnd_validate|"
            r"Vec<T,A>::len|as_mut_slice"
        ),
    ),
    ("RNG (send-jitter draw, link loss test)", r"rng\.rs|random_loss|reorder_extra"),
    ("link (drop-tail FIFO, departure time, route)", r"link\.rs|Net::hop|Net::launch|net\.rs"),
    ("packet slab", r"packet\.rs"),
    ("dispatch (event loop, arrive)", r"sim\.rs|World::arrive|World::run_until"),
]

HTSIM = [
    (
        "event list (std::multimap + a node malloc/free per event)",
        r"Rb_tree|EventList|malloc|free|operator new|operator delete|_int_",
    ),
    ("queue/flow logging", r"log_packet_send|logTraffic"),
    ("link (queue, pipe, route hop)", r"Queue::|Pipe::|sendOn"),
    ("receiver (TcpSink)", r"TcpSink::receivePacket"),
    ("ACK generation (TcpSink::send_ack)", r"TcpSink::send_ack"),
    ("sender on_ack (NewReno, no SACK)", r"TcpSrc::receivePacket|MultipathTcpSrc::receivePacket"),
    ("congestion control (LIA = COUPLED_INC, Reno)", r"inflate_window|compute_a|deflate_window"),
    ("send loop (send_packets, route)", r"send_packets|set_route|retransmit_packet"),
    ("timers (RTO scanner)", r"RtxTimerScanner|rtx_timer_hook"),
    ("RNG", r"rand|mersenne"),
    ("time conversions", r"timeFromSec|timeAsUs|timeFrom"),
]


def parse(path, cols, by_addr):
    """Self cost per instruction address (by_addr) or per function name."""
    names, cost = {}, collections.Counter()
    positions, last, skip, fn, obj = ["line"], 0, False, None, None

    def name(kind, s):
        m = re.match(r"\((\d+)\)(?: (.*))?", s)
        if not m:
            return s
        if m.group(2) is not None:
            names[(kind, m.group(1))] = m.group(2)
        return names.get((kind, m.group(1)), "?")

    with open(path) as fh:
        lines = fh.read().split("\n")
    for line in lines:
        if not line:
            continue
        if line.startswith("positions:"):
            positions = line.split(":", 1)[1].split()
            continue
        if line[0].isdigit() or line[0] in "+-*":
            parts = line.split()
            p = parts[0]
            if p == "*":
                a = last
            elif p[0] in "+-":
                a = last + int(p, 0)
            else:
                a = int(p, 0)
            last = a if positions[0] == "instr" else last
            if skip:
                skip = False
                continue
            vals = [int(x) for x in parts[len(positions) :]]
            v = sum(vals[c] for c in cols if c < len(vals))
            cost[(a, obj) if by_addr else fn] += v
            continue
        key, _, rest = line.partition("=")
        if key == "fn":
            fn = name("fn", rest)
        elif key == "ob":
            obj = name("ob", rest)
        elif key in ("fl", "fi", "fe", "cfi", "cfl"):
            name("fl", rest)
        elif key == "cob":
            name("ob", rest)
        elif key == "cfn":
            name("fn", rest)
        elif key == "calls":
            skip = True
    return cost


def pathpool_keys(cost, binary):
    mine = sorted(a for a, ob in cost if ob and ob.endswith(binary.split("/")[-1]))
    out = subprocess.run(
        ["addr2line", "-i", "-f", "-C", "-a", "-e", binary],
        input="\n".join(hex(a) for a in mine),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    chains, cur, i = {}, None, 0
    while i < len(out):
        if out[i].startswith("0x"):
            cur = int(out[i], 16)
            chains[cur] = []
            i += 1
        else:
            if i + 1 < len(out):
                chains[cur].append((out[i], out[i + 1]))
            i += 2
    keyed = collections.Counter()
    for (a, ob), v in cost.items():
        ch = chains.get(a) if ob and ob.endswith(binary.split("/")[-1]) else None
        key = "other ?"
        for f, loc in ch or []:
            if "/pathpool-sim/src/" in loc or "/pathpool-cc/src/" in loc:
                key = (
                    loc.split("/src/")[-1].split(":")[0]
                    + " "
                    + re.sub(r"pathpool_(sim|cc)::", "", f)
                )
                break
        else:
            if ch:
                key = "other " + ch[-1][0]
        keyed[key] += v
    return keyed


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    which, path, binary, packets = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    cols = [int(c) for c in sys.argv[5].split(",")] if len(sys.argv) > 5 else [0]
    if which == "pathpool":
        keyed, rules = pathpool_keys(parse(path, cols, True), binary), PATHPOOL
    else:
        keyed, rules = parse(path, cols, False), HTSIM
    total = sum(keyed.values())
    stages, rest = collections.Counter(), collections.Counter()
    for key, v in keyed.items():
        for stage, rx in rules:
            if re.search(rx, key or ""):
                stages[stage] += v
                break
        else:
            rest[key] += v
    stages["rest (start-up, output, unattributed)"] = sum(rest.values())
    print(f"{which}: {total:,} in all, {packets:,} data packets")
    for stage, v in stages.most_common():
        print(f"{v / packets:9.2f} {100 * v / total:5.1f}%  {stage}")
    print(f"{total / packets:9.2f}        per data packet (its ACK included)")
    for key, v in rest.most_common(5):
        print(f"    rest: {v:,} {key}")


if __name__ == "__main__":
    main()
