#!/usr/bin/env bash
# pathpool vs htsim on the same scenario, interleaved on this machine: data packets per CPU-second
# of each and their ratio.
#
#   bench/htsim.sh HTSIM_CHECKOUT [N_FLOWS RATE_GBPS SECONDS BUFFER_PKTS [REPEATS]]
#
# HTSIM_CHECKOUT is a checkout of https://github.com/Broadcom/csg-htsim (the MPTCP authors'
# simulator; measured with 841d9e7); its sim/libhtsim.a is built with g++ -O2 if missing. The
# scenario is scenarios/bench/bench.toml's shape with N_FLOWS flows (a third MPTCP LIA over both
# bottlenecks, a third TCP Reno on each), bottlenecks of RATE_GBPS with BUFFER_PKTS buffers,
# SECONDS simulated (defaults: 120 1 30 1000, i.e. bench.toml itself, 3 repeats). htsim's side
# is bench/htsim_bench.cpp. CPU time is user + system time of each process (GNU time), so it
# includes start-up and, for pathpool, reading the scenario.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
htsim=${1:?usage: bench/htsim.sh HTSIM_CHECKOUT [N_FLOWS RATE_GBPS SECONDS BUFFER_PKTS [REPEATS]]}
n=${2:-120}; gbps=${3:-1}; secs=${4:-30}; buf=${5:-1000}; reps=${6:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

build_htsim "$htsim" "$here" "$tmp/htsim_bench"
(cd "$root" && cargo build -q --release -p pathpool-sim --example runscn)
runscn=$root/target/release/examples/runscn

# bench.toml itself, with the flow count, rate, duration and buffer of this comparison.
bench_toml "$root" "$n" "$gbps" "$secs" "$buf" "$tmp/bench.toml"

# One run: prints "packets cpu_s maxrss_kb".
run() {
    local out
    if [[ $1 == pathpool ]]; then
        out=$( { /usr/bin/time -f "TIME %U %S %M" "$runscn" "$tmp/bench.toml" 1 | grep -o 'data packets [0-9]*'; } 2>&1 )
    else
        out=$( { /usr/bin/time -f "TIME %U %S %M" "$tmp/htsim_bench" "$n" "$gbps" "$secs" "$buf" | grep '^data_packets'; } 2>&1 )
    fi
    local pk cpu rss
    pk=$(grep -o '[0-9]*$' <<<"$(grep -E 'data[ _]packets' <<<"$out")")
    read -r cpu rss < <(awk '/^TIME/ {print $2 + $3, $4}' <<<"$out")
    echo "$pk $cpu $rss"
}

echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs; scenario: $n flows, ${gbps} Gb/s, ${secs} s, ${buf}-packet buffers"
printf '%-4s %-9s %12s %8s %14s %10s\n' run sim packets cpu_s packets/cpu_s maxrss_MB
pp=(); hs=()
for i in $(seq "$reps"); do
    for sim in pathpool htsim; do
        read -r pk cpu rss < <(run $sim)
        rate=$(awk -v p="$pk" -v c="$cpu" 'BEGIN { printf "%.0f", p / c }')
        printf '%-4s %-9s %12s %8s %14s %10.1f\n' "$i" "$sim" "$pk" "$cpu" "$rate" "$(awk -v r="$rss" 'BEGIN {print r/1024}')"
        if [[ $sim == pathpool ]]; then pp+=("$rate"); ppk=$pk; else hs+=("$rate"); hpk=$pk; fi
    done
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {printf "%.0f\n", (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
mp=$(median "${pp[@]}"); mh=$(median "${hs[@]}")
echo "median data packets per CPU-second: pathpool $mp, htsim $mh; ratio pathpool/htsim $(awk -v a="$mp" -v b="$mh" 'BEGIN { printf "%.2f", a / b }')"
# The two simulators model the same scenario with different TCPs (htsim: NewReno without SACK,
# ssthresh starting at 100 segments); where their packet counts part by more than 25%, they did
# not do the same work, and the ratio is no comparison (bench/README.md).
awk -v a="$ppk" -v b="$hpk" 'BEGIN { d = a > b ? a / b : b / a; if (d > 1.25)
    printf "NOT COMPARABLE: pathpool sent %d data packets, htsim %d (%.2fx)\n", a, b, d }'

