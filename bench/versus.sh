#!/usr/bin/env bash
# Several builds of pathpool's runscn against htsim in one interleaved run: each round runs htsim
# and every build once, the order rotating from round to round (so that a load that rises or
# falls through a round favours none), and each build's speed is read as its ratio to the htsim
# run of the same round.
#
#   bench/versus.sh HTSIM_CHECKOUT N_FLOWS RATE_GBPS SECONDS BUFFER_PKTS ROUNDS RUNSCN...
#
# The scenario and htsim's side are htsim.sh's (bench.toml's shape with N_FLOWS flows; htsim
# built from HTSIM_CHECKOUT with g++ -O2 and htsim_bench.cpp). Each RUNSCN is a runscn binary,
# e.g. copies built from different commits (the ablation of bench/README.md). Prints every run,
# then per build: median data packets per CPU-second, the median per-round ratio to htsim with
# its quartiles, ns per data packet, peak RSS, and the data packets each sent (builds that
# model less may send a different number; htsim.sh's 25% rule says when the runs are not
# comparable).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
usage="usage: bench/versus.sh HTSIM_CHECKOUT N_FLOWS RATE_GBPS SECONDS BUFFER_PKTS ROUNDS RUNSCN..."
htsim=${1:?$usage}; n=${2:?$usage}; gbps=${3:?$usage}; secs=${4:?$usage}; buf=${5:?$usage}
reps=${6:?$usage}
shift 6
(($# >= 1)) || { echo "$usage" >&2; exit 2; }
bins=("$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

build_htsim "$htsim" "$here" "$tmp/htsim_bench"

bench_toml "$root" "$n" "$gbps" "$secs" "$buf" "$tmp/bench.toml"

# One run of entry $1 (0 = htsim, k = bins[k-1]): prints "packets cpu_s maxrss_kb".
run() {
    local out
    if (($1 == 0)); then
        out=$( { /usr/bin/time -f "TIME %U %S %M" "$tmp/htsim_bench" "$n" "$gbps" "$secs" "$buf" | grep '^data_packets'; } 2>&1 )
    else
        out=$( { /usr/bin/time -f "TIME %U %S %M" "${bins[$1 - 1]}" "$tmp/bench.toml" 1 | grep -o 'data packets [0-9]*'; } 2>&1 )
    fi
    local pk
    pk=$(grep -o '[0-9]*$' <<<"$(grep -E 'data[ _]packets' <<<"$out")")
    echo "$pk $(awk '/^TIME/ {print $2 + $3, $4}' <<<"$out")"
}

m=$((${#bins[@]} + 1))
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); scenario: $n flows, ${gbps} Gb/s, ${secs} s, ${buf}-packet buffers"
for k in "${!bins[@]}"; do echo "build $((k + 1)): ${bins[$k]}"; done
printf '%-5s %-6s %12s %8s %14s %10s\n' round build packets cpu_s packets/cpu_s maxrss_MB
declare -A rate pk rss
for i in $(seq "$reps"); do
    for s in $(seq 0 $((m - 1))); do
        e=$(((s + i - 1) % m))
        read -r p cpu r < <(run "$e")
        rate[$i,$e]=$(awk -v p="$p" -v c="$cpu" 'BEGIN { printf "%.0f", p / c }')
        pk[$e]=$p; rss[$i,$e]=$r
        name=htsim; ((e == 0)) || name=$e
        printf '%-5s %-6s %12s %8s %14s %10.1f\n' "$i" "$name" "$p" "$cpu" "${rate[$i,$e]}" "$(awk -v r="$r" 'BEGIN {print r/1024}')"
    done
done
echo "load after $(cut -d' ' -f1-3 /proc/loadavg)"
stats() { sort -n | awk '{a[NR]=$1} END { m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2;
    printf "%.3f %.3f %.3f\n", m, a[int(0.25 * (NR - 1)) + 1], a[int(0.75 * (NR - 1)) + 1] }'; }
hm=$(for i in $(seq "$reps"); do echo "${rate[$i,0]}"; done | stats | cut -d' ' -f1)
printf '%-6s %12s %14s %24s %10s %12s\n' build packets pk/cpu_s "ratio to htsim (q1-q3)" ns/packet maxrss_MB
printf '%-6s %12s %14.0f %24s %10.0f %12s\n' htsim "${pk[0]}" "$hm" - "$(awk -v r="$hm" 'BEGIN {print 1e9 / r}')" \
    "$(for i in $(seq "$reps"); do echo "${rss[$i,0]}"; done | stats | awk '{printf "%.1f", $1 / 1024}')"
for e in $(seq 1 $((m - 1))); do
    bm=$(for i in $(seq "$reps"); do echo "${rate[$i,$e]}"; done | stats | cut -d' ' -f1)
    read -r rm rq1 rq3 < <(for i in $(seq "$reps"); do awk -v a="${rate[$i,$e]}" -v b="${rate[$i,0]}" 'BEGIN { printf "%.4f\n", a / b }'; done | stats)
    printf '%-6s %12s %14.0f %24s %10.0f %12s\n' "$e" "${pk[$e]}" "$bm" "${rm}x ($rq1-$rq3)" "$(awk -v r="$bm" 'BEGIN {print 1e9 / r}')" \
        "$(for i in $(seq "$reps"); do echo "${rss[$i,$e]}"; done | stats | awk '{printf "%.1f", $1 / 1024}')"
done
