#!/usr/bin/env bash
# Two builds of examples/runscn side by side: CPU time per data packet of each on the bench
# scenario's shape, runs alternating, and the median ratio. For an engine change, build the old
# tree's runscn, copy it away, build the new one, then
#
#   bench/ab.sh OLD_RUNSCN NEW_RUNSCN [N_FLOWS RATE_GBPS SECONDS [REPEATS]]
#
# (defaults 120 1 30 5: scenarios/bench/bench.toml itself). CPU time is user + system time (GNU
# time) of the whole process. Both binaries must print the same packet count (same results).
# Each repeat is a pair of runs, old first in odd pairs and new first in even ones (so that a
# load that rises or falls through the round favours neither); besides the medians of each
# build it prints the median of the per-pair ratios and how many pairs the new build won: on a
# shared machine the load moves single runs by up to 1.5x, and a pair run back to back shares
# most of it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
old=${1:?usage: bench/ab.sh OLD_RUNSCN NEW_RUNSCN [N_FLOWS RATE_GBPS SECONDS [REPEATS]]}
new=${2:?usage: bench/ab.sh OLD_RUNSCN NEW_RUNSCN [N_FLOWS RATE_GBPS SECONDS [REPEATS]]}
n=${3:-120}; gbps=${4:-1}; secs=${5:-30}; reps=${6:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bench_toml "$root" "$n" "$gbps" "$secs" 1000 "$tmp/bench.toml"

# One run: prints "packets cpu_s maxrss_kb".
run() {
    local out pk
    out=$( { /usr/bin/time -f "TIME %U %S %M" "$1" "$tmp/bench.toml" 1 | grep -o 'data packets [0-9]*'; } 2>&1 )
    pk=$(grep -o '[0-9]*$' <<<"$(grep 'data packets' <<<"$out")")
    echo "$pk $(awk '/^TIME/ {print $2 + $3, $4}' <<<"$out")"
}

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg); scenario: $n flows, ${gbps} Gb/s, ${secs} s"
printf '%-4s %-4s %12s %8s %12s %10s\n' run bin packets cpu_s ns/packet maxrss_MB
a=(); b=(); pks=()
for i in $(seq "$reps"); do
    order="old new"; (( i % 2 )) || order="new old"
    for which in $order; do
        bin=$old; [[ $which == new ]] && bin=$new
        read -r pk cpu rss < <(run "$bin")
        ns=$(awk -v p="$pk" -v c="$cpu" 'BEGIN { printf "%.0f", c * 1e9 / p }')
        printf '%-4s %-4s %12s %8s %12s %10.1f\n' "$i" "$which" "$pk" "$cpu" "$ns" "$(awk -v r="$rss" 'BEGIN {print r/1024}')"
        pks+=("$pk")
        if [[ $which == old ]]; then a+=("$ns"); else b+=("$ns"); fi
    done
done
if [[ $(printf '%s\n' "${pks[@]}" | sort -u | wc -l) -ne 1 ]]; then
    echo "the two builds sent different packet counts: not the same results" >&2
    exit 1
fi
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {printf "%.0f\n", (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
ma=$(median "${a[@]}"); mb=$(median "${b[@]}")
echo "median ns per data packet: old $ma, new $mb; speed-up old/new $(awk -v a="$ma" -v b="$mb" 'BEGIN { printf "%.2f", a / b }'); load after $(cut -d' ' -f1-3 /proc/loadavg)"
# Per pair: old/new (> 1: new faster).
mapfile -t r < <(for k in "${!a[@]}"; do awk -v x="${a[$k]}" -v y="${b[$k]}" 'BEGIN { printf "%.4f\n", x / y }'; done | sort -n)
won=$(for k in "${!a[@]}"; do if (( b[k] < a[k] )); then echo; fi; done | wc -l)
q() { awk -v f="$1" -v n="${#r[@]}" 'NR == int(f * (n - 1)) + 1 { printf "%.3f", $1 }' < <(printf '%s\n' "${r[@]}"); }
pmed=$(printf '%s\n' "${r[@]}" | awk '{a[NR]=$1} END {printf "%.3f", (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')
echo "per pair old/new: median $pmed, quartiles $(q 0.25)-$(q 0.75); new faster in $won of ${#a[@]} pairs"
