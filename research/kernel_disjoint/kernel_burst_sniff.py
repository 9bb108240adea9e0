"""Kernel-timestamped arrivals of TCP data packets on one device (AF_PACKET): per flow (source>destination port),
burst lengths (packets of that flow whose gap to its previous packet is < GAP_US) and payload
sizes (mean, and the three most common).

    ip netns exec NS python research/kernel_disjoint/kernel_burst_sniff.py DEV SECONDS
"""

import json
import socket
import statistics
import struct
import sys
import time

dev, secs = sys.argv[1], float(sys.argv[2])
GAP_US = 100
s = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(0x0800))
s.bind((dev, 0))
s.setsockopt(socket.SOL_SOCKET, 35, 1)  # SO_TIMESTAMPNS
s.settimeout(0.5)
end = time.monotonic() + secs
last, bursts, cur, n, sizes = {}, {}, {}, {}, {}
while time.monotonic() < end:
    try:
        data, anc, _, addr = s.recvmsg(128, 64)
    except TimeoutError:
        continue
    if addr[2] == socket.PACKET_OUTGOING or len(data) < 40 or data[9] != 6:
        continue
    ihl = (data[0] & 15) * 4
    tot = struct.unpack_from('!H', data, 2)[0]
    doff = (data[ihl + 12] >> 4) * 4
    payload = tot - ihl - doff
    if payload < 1000:
        continue  # ACKs and small segments
    sport = '{}>{}'.format(*struct.unpack_from('!HH', data, ihl))  # source>destination port
    sizes.setdefault(sport, {}).setdefault(payload, 0)
    sizes[sport][payload] += 1
    t = None
    for lvl, typ, val in anc:
        if typ == 35:
            sec, ns = struct.unpack('qq', val[:16]); t = sec * 1e6 + ns / 1e3
    n[sport] = n.get(sport, 0) + 1
    if sport in last and t - last[sport] < GAP_US:
        cur[sport] += 1
    else:
        if sport in cur:
            bursts.setdefault(sport, []).append(cur[sport])
        cur[sport] = 1
    last[sport] = t
out = {p: {"pkts": n[p], "mean_burst": round(statistics.mean(b), 2), "p90_burst": sorted(b)[int(0.9 * len(b))],
           "max_burst": max(b),
           "mean_payload": round(sum(k * v for k, v in sizes[p].items()) / n[p], 1),
           "top_payloads": sorted(sizes[p].items(), key=lambda kv: -kv[1])[:3]}
       for p, b in bursts.items() if len(b) > 10}
print(json.dumps(out))
